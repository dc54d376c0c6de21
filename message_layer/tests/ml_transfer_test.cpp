// In-process tests of the message layer's data path: every protocol with sizes at every packet
// boundary, every buffer alignment on either side, between neighbours, the farthest nodes, two
// tasks of one node and on a mesh; zero-byte messages, user headers of every size, messages to
// oneself, gather sends and scatter targets, and truncation.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "bgl/torus_emu/distance.hpp"
#include "ml_harness.hpp"
#include "ml_in_process.hpp"

namespace bgl::message_layer::test {
namespace {

constexpr Protocol kAllProtocols[] = {Protocol::one_packet, Protocol::eager, Protocol::rendezvous,
                                      Protocol::adaptive_eager};

std::string protocol_name(std::optional<Protocol> p) {
  return p ? std::string(to_string(*p)) : std::string("auto");
}

// Where the two tasks of a test live, and how far apart that is.
struct PairLayout {
  const char* name;
  JobSpec spec;
  int hops;
};

const PairLayout kPairLayouts[] = {
    {"Neighbours", {.ntasks = 2, .shape = "4x4x2", .mapping_text = "0 0 0\n1 0 0\n"}, 1},
    {"Farthest4x4x2", {.ntasks = 2, .shape = "4x4x2", .mapping_text = "0 0 0\n2 2 1\n"}, 5},
    {"Farthest8x2x1",
     {.ntasks = 2, .shape = "8x2x1", .mode = "coprocessor", .mapping_text = "0 0 0\n4 1 0\n"},
     5},
    {"SameNodeVn",
     {.ntasks = 2, .shape = "2x1x1", .mode = "vn", .mapping_text = "0 0 0 0\n0 0 0 1\n"},
     0},
    {"FarthestVn",
     {.ntasks = 2, .shape = "4x4x2", .mode = "vn", .mapping_text = "0 0 0 1\n2 2 1 0\n"},
     5},
    {"MeshEnds", {.ntasks = 2, .shape = "4x2x1", .mesh = "x", .mapping_text = "0 0 0\n3 1 0\n"}, 4},
};

int distance_between(const InProcessJob& job, Rank a, Rank b) {
  const auto& m = job.machine().mapping();
  return torus_emu::distance(job.machine().shape(), m.coord(a), m.coord(b));
}

// Packets a message of `bytes` data bytes takes (8-byte header).
std::uint64_t packets_for(Protocol p, std::size_t bytes) {
  switch (p) {
    case Protocol::one_packet:
      return 1;
    case Protocol::eager:
    case Protocol::adaptive_eager:
      return 1 + (bytes > kOnePacketWithTestHeader ? (bytes - kOnePacketWithTestHeader + 239) / 240
                                                   : 0);
    case Protocol::rendezvous:
      return 1 + (bytes + 235) / 236;
    default:
      return 0;  // not counted here
  }
}

// Everything about one delivery that a test expects.
::testing::AssertionResult delivered_intact(const Delivery& d, std::uint64_t key,
                                            std::size_t bytes) {
  const std::size_t fits = std::min(bytes, d.capacity());
  if (d.bytes != bytes)
    return ::testing::AssertionFailure() << describe(d) << ": announced " << d.bytes << " bytes";
  if (d.completions != 1)
    return ::testing::AssertionFailure() << describe(d) << ": " << d.completions << " completions";
  if (d.completed_bytes != fits)
    return ::testing::AssertionFailure() << describe(d) << ": completion reports "
                                         << d.completed_bytes << " bytes, expected " << fits;
  if (d.completed_handle != d.handle)
    return ::testing::AssertionFailure() << describe(d) << ": completion names another handle";
  const auto got = d.contents();
  const auto bad = find_mismatch(std::span(got).first(fits), key);
  if (bad != kNoMismatch)
    return ::testing::AssertionFailure() << describe(d) << ": byte " << bad << " differs";
  if (!d.guards_intact())
    return ::testing::AssertionFailure() << describe(d) << ": wrote outside its destination";
  return ::testing::AssertionSuccess();
}

struct Planned {
  std::uint64_t key = 0;
  std::size_t bytes = 0;
  std::size_t recv_offset = 0;
  Protocol protocol = Protocol::one_packet;
};

// Two tasks that send each other planned messages, receiving at the planned offsets.
class Pair {
 public:
  explicit Pair(const JobSpec& spec, const Config& config = {})
      : job(spec, config), in{Inbox(job.ml(0), 1, policy()), Inbox(job.ml(1), 1, policy())} {}

  // Returns the protocol the layer chose.
  Protocol send(Rank from, std::size_t bytes, std::size_t send_offset, std::size_t recv_offset,
                std::optional<Protocol> protocol, bool notify_remote = false) {
    const Rank to = 1 - from;
    const std::uint32_t seq = next_seq[from]++;
    const std::uint64_t key = message_key(from, to, seq);
    SendOptions o;
    o.protocol = protocol;
    o.offset = send_offset;
    o.notify_remote = notify_remote;
    Outgoing& out = out_[from].post(job.ml(from), to, seq, bytes, key, o);
    plan[{from, seq}] = {key, bytes, recv_offset, out.protocol};
    ++expected[to];
    return out.protocol;
  }
  ::testing::AssertionResult finish() {
    if (job.run_until([&] {
          return out_[0].all_done() && out_[1].all_done() && in[0].completed() == expected[0] &&
                 in[1].completed() == expected[1];
        }))
      return ::testing::AssertionSuccess();
    auto r = ::testing::AssertionFailure() << "stalled:";
    for (int i = 0; i < 2; ++i)
      r << " rank " << i << " received " << in[i].completed() << "/" << expected[i] << " (arrived "
        << in[i].arrived() << "), sends done " << out_[i].done_count() << "/" << out_[i].sent.size()
        << ";";
    return r;
  }
  // Checks every delivery, then forgets the messages (frees their buffers).
  ::testing::AssertionResult verify_and_clear() {
    for (int r = 0; r < 2; ++r) {
      if (in[r].arrived() != expected[r])
        return ::testing::AssertionFailure()
               << "rank " << r << " saw " << in[r].arrived() << " of " << expected[r];
      for (const auto& d : in[r].got) {
        const auto it = plan.find({d.source, d.test_header().seq});
        if (it == plan.end()) return ::testing::AssertionFailure() << "unplanned " << describe(d);
        // A virtual-node message within the eager limit goes eager while every cell is held.
        const bool streamed = it->second.protocol == Protocol::virtual_node &&
                              d.protocol == Protocol::eager &&
                              it->second.bytes <= job.ml(r).config().limits.eager_limit;
        if (d.protocol != it->second.protocol && !streamed)
          return ::testing::AssertionFailure()
                 << describe(d) << ": expected " << to_string(it->second.protocol);
        if (auto r2 = delivered_intact(d, it->second.key, it->second.bytes); !r2) return r2;
      }
      for (const auto& o : out_[r].sent)
        if (o.done != 1) return ::testing::AssertionFailure() << "send done " << o.done << " times";
    }
    for (int r = 0; r < 2; ++r) {
      in[r].clear();
      out_[r].sent.clear();
      total[r] += expected[r];
      expected[r] = 0;
    }
    return ::testing::AssertionSuccess();
  }

  InProcessJob job;
  Inbox in[2];
  std::map<std::pair<Rank, std::uint32_t>, Planned> plan;
  std::uint32_t next_seq[2] = {0, 0};
  std::size_t expected[2] = {0, 0};
  std::size_t total[2] = {0, 0};

 private:
  Inbox::Policy policy() {
    return [this](Inbox&, Delivery& d) {
      const auto& p = plan.at({d.source, d.test_header().seq});
      return Inbox::into(d, p.bytes, p.recv_offset);
    };
  }
  Outbox out_[2];
};

// ---------------------------------------------------------------------------------------------
// Every protocol x size x alignment x placement

using MatrixParam = std::tuple<std::optional<Protocol>, PairLayout>;

void PrintTo(const MatrixParam& p, std::ostream* os) {
  *os << protocol_name(std::get<0>(p)) << " " << std::get<1>(p).name;
}

class MlTransferMatrix : public ::testing::TestWithParam<MatrixParam> {};

TEST_P(MlTransferMatrix, EverySizeAndAlignmentBothWays) {
  const auto& [protocol, placement] = GetParam();
  Pair pair(placement.spec);
  ASSERT_EQ(distance_between(pair.job, 0, 1), placement.hops);
  const bool siblings = placement.hops == 0;  // two tasks of one node (virtual-node mode)
  const auto sizes = protocol == Protocol::one_packet ? std::vector<std::size_t>{0, 1, 219, 220}
                                                      : boundary_sizes(sizeof(TestHeader), 65543);
  std::map<Protocol, std::uint64_t> messages, bytes, packets;
  const auto send_both = [&](std::size_t size, std::size_t so, std::size_t ro, bool remote) {
    for (Rank from : {0u, 1u}) {
      const Protocol p = pair.send(from, size, so, ro, protocol, remote);
      if (!protocol && !siblings) {
        EXPECT_EQ(p, default_protocol(size)) << size << " bytes";
      }
      ++messages[p];
      bytes[p] += size;
      packets[p] += packets_for(p, size);
    }
  };
  // Every pair of alignments for the sizes up to six packets, ...
  for (std::size_t so : kAlignments) {
    for (std::size_t ro : kAlignments)
      for (std::size_t size : sizes)
        if (size <= 1500) send_both(size, so, ro, size % 2 == 1);
    ASSERT_TRUE(pair.finish()) << "send offset " << so;
    ASSERT_TRUE(pair.verify_and_clear()) << "send offset " << so;
  }
  // ... and each alignment once on either side for the larger ones, up to 1 MiB.
  if (protocol != Protocol::one_packet) {
    for (std::size_t i = 0; i < kAlignments.size(); ++i) {
      const std::size_t so = kAlignments[i], ro = kAlignments[(i + 3) % kAlignments.size()];
      for (std::size_t size : sizes)
        if (size > 1500) send_both(size, so, ro, i % 2 == 0);
      send_both(1 << 20, ro, so, i % 2 == 1);
      ASSERT_TRUE(pair.finish()) << "send offset " << so;
      ASSERT_TRUE(pair.verify_and_clear());
    }
  }
  // The last fins may still be on their way when the last completion has been seen (advance()
  // returns after a delivery): idle() is true once they are in.
  pair.job.settle();
  for (Rank r : {0u, 1u}) {
    const auto& s = pair.job.ml(r).statistics();
    EXPECT_TRUE(pair.job.ml(r).idle());
    EXPECT_EQ(s.unexpected_messages, 0u);
    for (const auto& [p, n] : messages) {
      auto c = s.protocol[static_cast<std::size_t>(p)];
      SCOPED_TRACE(std::string(to_string(p)) + " at rank " + std::to_string(r));
      // Virtual-node messages that went eager (every shared cell held) count as eager.
      const bool streamed = p == Protocol::virtual_node && !protocol;
      if (streamed) {
        const auto& e = s.protocol[static_cast<std::size_t>(Protocol::eager)];
        c.messages_sent += e.messages_sent;
        c.messages_received += e.messages_received;
        c.bytes_sent += e.bytes_sent;
        c.bytes_received += e.bytes_received;
      }
      EXPECT_EQ(c.messages_sent, n / 2);
      EXPECT_EQ(c.messages_received, n / 2);
      EXPECT_EQ(c.bytes_sent, bytes[p] / 2);
      EXPECT_EQ(c.bytes_received, bytes[p] / 2);
      if (packets[p] == 0 || streamed) continue;  // no packet formula, or protocols mixed
      EXPECT_EQ(c.packets_sent, packets[p] / 2);
      // Rendezvous data that the coprocessor received are counted as coprocessor packets.
      const std::uint64_t co = p == Protocol::rendezvous ? s.coprocessor_packets : 0;
      EXPECT_EQ(c.packets_received + co, packets[p] / 2);
    }
  }
}

std::vector<MatrixParam> matrix() {
  std::vector<MatrixParam> v;
  for (std::optional<Protocol> p :
       {std::optional<Protocol>{}, std::optional<Protocol>{Protocol::one_packet},
        std::optional<Protocol>{Protocol::eager}, std::optional<Protocol>{Protocol::rendezvous},
        std::optional<Protocol>{Protocol::adaptive_eager}})
    for (const auto& placement : kPairLayouts)
      v.emplace_back(p, placement);
  // The virtual-node protocol exists between the two tasks of a node only.
  for (const auto& placement : kPairLayouts)
    if (placement.hops == 0) v.emplace_back(Protocol::virtual_node, placement);
  return v;
}

INSTANTIATE_TEST_SUITE_P(, MlTransferMatrix, ::testing::ValuesIn(matrix()), [](const auto& info) {
  return protocol_name(std::get<0>(info.param)) + "_" + std::get<1>(info.param).name;
});

// The configured choice (BGL_ML_PROTOCOL, BGL_ML_ADAPTIVE_EAGER, BGL_ML_EAGER_LIMIT as a Config)
// rather than a per-message one.
TEST(MlTransfer, ConfiguredProtocolLimitsDecide) {
  std::vector<Config> configs(4);
  configs[0].limits.adaptive_eager = true;
  configs[1].limits.eager_limit = 1000;
  configs[2].limits.forced = Protocol::rendezvous;
  configs[3].limits.forced = Protocol::adaptive_eager;
  configs[3].limits.eager_limit = 0;
  for (const Config& c : configs) {
    Pair pair(kPairLayouts[1].spec, c);
    for (std::size_t size : {0u, 1u, 220u, 221u, 999u, 1000u, 1001u, 16384u, 16385u, 100000u})
      for (Rank from : {0u, 1u})
        pair.send(from, size, 3, 7, std::nullopt);
    ASSERT_TRUE(pair.finish());
    for (const auto& d : pair.in[1].got)
      EXPECT_EQ(d.protocol, default_protocol(d.bytes, c.limits)) << describe(d);
    ASSERT_TRUE(pair.verify_and_clear());
  }
}

// The virtual-node protocol copies straight from the sender's memory (process_vm_readv); with the
// copy switched off (BGL_ML_VN_COPY=0) it streams the data like a rendezvous. Both, into buffers
// and scatter lists, expected and unexpected, at odd alignments.
TEST(MlTransfer, VirtualNodeProtocolCopiesOrStreams) {
  for (bool direct : {true, false}) {
    Config c;
    c.vn_direct_copy = direct;
    InProcessJob job(
        {.ntasks = 2, .shape = "2x1x1", .mode = "vn", .mapping_text = "0 0 0 1\n0 0 0 0\n"}, c);
    Outbox out;
    Inbox in(job.ml(1), 1, [](Inbox&, Delivery& d) {
      const auto seq = d.test_header().seq;
      if (seq % 3 == 2) return Inbox::later(d);
      if (seq % 3 == 1) return Inbox::scatter(d, {d.bytes / 3, 0, d.bytes - d.bytes / 3}, seq % 32);
      return Inbox::into(d, d.bytes - (seq % 4 == 0 ? d.bytes / 2 : 0),
                         seq % 32);  // some truncated
    });
    std::uint32_t seq = 0;
    for (std::size_t size : {0u, 1u, 221u, 5000u, 100000u, 1u << 20}) {
      for (int k = 0; k < 6; ++k) {
        SendOptions o;
        o.protocol = Protocol::virtual_node;
        o.offset = (seq * 7) % 32;
        o.notify_remote = k % 2 == 0;
        out.post(job.ml(0), 1, seq, size, message_key(0, 1, seq), o);
        ++seq;
      }
    }
    std::size_t accepted = 0;
    ASSERT_TRUE(job.run_until([&] {
      for (; accepted < in.got.size(); ++accepted) {
        auto& d = in.got[accepted];
        if (d.unexpected) in.accept(d, Inbox::into(d, d.bytes, 5));
      }
      return in.completed() == seq && out.all_done();
    })) << (direct ? "direct copy" : "streamed");
    for (const auto& d : in.got) {
      EXPECT_EQ(d.protocol, Protocol::virtual_node);
      EXPECT_TRUE(delivered_intact(d, message_key(0, 1, d.test_header().seq), d.bytes));
    }
    const auto& vn =
        job.ml(1).statistics().protocol[static_cast<std::size_t>(Protocol::virtual_node)];
    EXPECT_EQ(vn.messages_received, seq);
    // Streaming sends data packets; the direct copy needs none beyond the request.
    if (direct)
      EXPECT_EQ(vn.packets_received, seq);
    else
      EXPECT_GT(vn.packets_received, seq);
  }
}

// ---------------------------------------------------------------------------------------------
// Zero bytes, headers, oneself

TEST(MlTransfer, ZeroByteMessagesWithNullBuffersEveryProtocolAndTarget) {
  InProcessJob job(kPairLayouts[1].spec);
  struct Got {
    int arrivals = 0, completions = 0;
    std::size_t bytes = ~std::size_t{0};
    std::size_t header = ~std::size_t{0};
    std::vector<RecvHandle> later;
  } got;
  // Answers in turn: a null buffer, an empty scatter list, later.
  static int turn = 0;
  turn = 0;
  job.ml(1).register_handler(
      9,
      [](void* ctx, const Arrival& a) {
        auto& g = *static_cast<Got*>(ctx);
        ++g.arrivals;
        g.header = a.header.size();
        const RecvDone done = [](void* c, std::uint32_t, std::size_t bytes) {
          auto& g2 = *static_cast<Got*>(c);
          ++g2.completions;
          g2.bytes = bytes;
        };
        switch (turn++ % 3) {
          case 0:
            return RecvTarget::into({}, done, ctx);
          case 1:
            return RecvTarget::scatter({}, done, ctx);
          default:
            g.later.push_back(a.handle);
            return RecvTarget::later();
        }
      },
      &got);
  std::deque<SendMessage> sends;
  int done = 0;
  for (Protocol p : kAllProtocols) {
    for (int k = 0; k < 3; ++k) {
      SendMessage& m = sends.emplace_back();
      m.dest = 1;
      m.handler = 9;
      m.protocol = p;
      m.context = &done;
      m.done = [](SendMessage& s) { ++*static_cast<int*>(s.context); };
      job.ml(0).post(m);
    }
  }
  ASSERT_TRUE(job.run_until([&] { return got.arrivals == 12 && done >= 8; }));
  // Rendezvous sends wait for the receiver's buffer: the unexpected one is not done yet.
  job.settle();
  EXPECT_EQ(done, 11);
  EXPECT_EQ(got.header, 0u);
  EXPECT_EQ(got.completions, 8);  // the unexpected ones complete when accepted
  EXPECT_EQ(got.later.size(), 4u);
  const RecvDone count_done = [](void* c, std::uint32_t, std::size_t bytes) {
    auto& g = *static_cast<Got*>(c);
    ++g.completions;
    g.bytes = bytes;
  };
  const int before = got.completions;
  for (RecvHandle h : got.later)
    job.ml(1).accept(h, RecvTarget::into({}, count_done, &got));
  ASSERT_TRUE(job.run_until([&] { return done == 12 && got.completions == before + 4; }));
  EXPECT_EQ(got.bytes, 0u);
  job.settle();
  EXPECT_TRUE(job.ml(0).idle());
  for (Protocol p : kAllProtocols) {
    EXPECT_EQ(job.ml(0).statistics().protocol[static_cast<std::size_t>(p)].messages_sent, 3u);
    EXPECT_EQ(job.ml(1).statistics().protocol[static_cast<std::size_t>(p)].messages_received, 3u);
    EXPECT_EQ(job.ml(1).statistics().protocol[static_cast<std::size_t>(p)].bytes_received, 0u);
  }
}

TEST(MlTransfer, UserHeadersOfEverySizeArriveIntact) {
  for (Protocol p : kAllProtocols) {
    InProcessJob job(kPairLayouts[2].spec);
    Outbox out;
    Inbox in(job.ml(1), 4, [](Inbox&, Delivery& d) { return Inbox::into(d, d.bytes, 5); });
    std::vector<std::pair<std::vector<std::byte>, std::size_t>> sent;
    for (std::size_t h : {0u, 1u, 7u, 8u, 64u, 127u, 128u}) {
      std::vector<std::size_t> sizes = {0, 228 - h};
      if (p != Protocol::one_packet) sizes.insert(sizes.end(), {229 - h, 468 - h, 5000});
      for (std::size_t size : sizes) {
        std::vector<std::byte> header(h);
        fill_pattern(header, 77 + h + size);
        SendOptions o;
        o.protocol = p;
        o.handler = 4;
        o.raw_header = header;
        out.post(job.ml(0), 1, 0, size, 1000 + sent.size(), o);
        sent.emplace_back(header, size);
      }
    }
    ASSERT_TRUE(job.run_until([&] { return in.completed() == sent.size() && out.all_done(); }))
        << to_string(p);
    ASSERT_EQ(in.got.size(), sent.size());
    for (std::size_t i = 0; i < sent.size(); ++i) {
      const auto& d = in.got[i];
      EXPECT_EQ(d.header, sent[i].first) << to_string(p) << " header of " << sent[i].first.size();
      EXPECT_EQ(d.protocol, p);
      EXPECT_EQ(d.handler, 4);
      EXPECT_TRUE(delivered_intact(d, 1000 + i, sent[i].second)) << to_string(p);
    }
  }
}

TEST(MlTransfer, MessagesToOneselfEveryProtocol) {
  for (const char* mode : {"heater", "vn"}) {
    InProcessJob job({.ntasks = 1, .shape = "1x1x1", .mode = mode});
    Outbox out;
    Inbox in(job.ml(0), 2, [](Inbox&, Delivery& d) {
      if (d.test_header().seq % 2) return Inbox::later(d);
      return Inbox::into(d, d.bytes, 1);
    });
    std::uint32_t seq = 0;
    for (Protocol p : kAllProtocols) {
      std::vector<std::size_t> sizes = {0, 1, 220};
      if (p != Protocol::one_packet) sizes.insert(sizes.end(), {221, 5000, 70000});
      for (std::size_t size : sizes) {
        SendOptions o;
        o.protocol = p;
        o.handler = 2;
        o.offset = seq % 32;
        o.notify_remote = true;
        out.post(job.ml(0), 0, seq, size, message_key(0, 0, seq), o);
        ++seq;
      }
    }
    std::size_t accepted = 0;
    ASSERT_TRUE(job.run_until([&] {
      for (; accepted < in.got.size(); ++accepted) {
        auto& d = in.got[accepted];
        if (d.unexpected) in.accept(d, Inbox::into(d, d.bytes, 30));
      }
      return in.completed() == seq && out.all_done();
    })) << mode
        << ": " << in.arrived() << " arrived, " << in.completed() << " completed, "
        << out.done_count() << " sends done of " << seq;
    for (std::size_t i = 0; i < in.got.size(); ++i) {
      const auto& d = in.got[i];
      EXPECT_EQ(d.test_header().seq, i) << "order";
      EXPECT_TRUE(delivered_intact(d, message_key(0, 0, d.test_header().seq), d.bytes));
    }
    job.settle();
    EXPECT_TRUE(job.ml(0).idle());
  }
}

// ---------------------------------------------------------------------------------------------
// Gather sends and scatter targets

// Piece sizes that add up to `total`: a few shapes of list, including empty pieces.
std::vector<std::vector<std::size_t>> splits(std::size_t total, std::mt19937& rng) {
  std::vector<std::vector<std::size_t>> out;
  out.push_back({total});
  out.push_back({0, total, 0});
  if (total >= 2) out.push_back({1, total - 2, 1});
  if (total > 0 && total <= 300) out.push_back(std::vector<std::size_t>(total, 1));
  std::vector<std::size_t> random;
  for (std::size_t left = total; left > 0;) {
    const std::size_t n = std::min<std::size_t>(left, rng() % 700);
    random.push_back(n);
    left -= n;
  }
  random.push_back(0);
  out.push_back(random);
  return out;
}

class MlGatherScatter : public ::testing::TestWithParam<Protocol> {};

TEST_P(MlGatherScatter, EveryCombinationOfListsAndBuffers) {
  const Protocol p = GetParam();
  InProcessJob job(kPairLayouts[1].spec);
  std::mt19937 rng(42);
  // The receiver's answer for message seq: its scatter list (empty: a plain buffer), and whether
  // it is accepted later.
  std::map<std::uint32_t, std::pair<std::vector<std::size_t>, bool>> recv_plan;
  Inbox in(job.ml(1), 1, [&](Inbox&, Delivery& d) {
    const auto& [pieces, later] = recv_plan.at(d.test_header().seq);
    if (later) return Inbox::later(d);
    return pieces.empty() ? Inbox::into(d, d.bytes, 7) : Inbox::scatter(d, pieces, 1);
  });
  Outbox out;
  std::uint32_t seq = 0;
  const std::vector<std::size_t> sizes = p == Protocol::one_packet
                                             ? std::vector<std::size_t>{0, 1, 100, 220}
                                             : std::vector<std::size_t>{0, 1, 221, 5000, 40000};
  for (std::size_t size : sizes) {
    const auto send_lists = splits(size, rng);
    const auto recv_lists = splits(size, rng);
    std::vector<std::pair<std::vector<std::size_t>, std::vector<std::size_t>>> combos;
    for (const auto& g : send_lists)
      combos.push_back({g, {}});
    for (const auto& s : recv_lists)
      combos.push_back({{}, s});
    for (std::size_t i = 0; i < std::min(send_lists.size(), recv_lists.size()); ++i)
      combos.push_back({send_lists[i], recv_lists[recv_lists.size() - 1 - i]});
    for (const auto& [g, s] : combos) {
      for (bool later : {false, true}) {
        recv_plan[seq] = {s, later};
        SendOptions o;
        o.protocol = p;
        o.gather = g;
        o.offset = seq % 32;
        out.post(job.ml(0), 1, seq, size, message_key(0, 1, seq), o);
        ++seq;
      }
    }
  }
  std::size_t accepted = 0;
  ASSERT_TRUE(job.run_until([&] {
    for (; accepted < in.got.size(); ++accepted) {
      auto& d = in.got[accepted];
      if (!d.unexpected) continue;
      const auto& pieces = recv_plan.at(d.test_header().seq).first;
      in.accept(d, pieces.empty() ? Inbox::into(d, d.bytes, 31) : Inbox::scatter(d, pieces, 2));
    }
    return in.completed() == seq && out.all_done();
  }));
  for (const auto& d : in.got) {
    EXPECT_EQ(d.protocol, p);
    EXPECT_TRUE(delivered_intact(d, message_key(0, 1, d.test_header().seq), d.bytes));
  }
}

INSTANTIATE_TEST_SUITE_P(, MlGatherScatter, ::testing::ValuesIn(kAllProtocols),
                         [](const auto& info) { return std::string(to_string(info.param)); });

// ---------------------------------------------------------------------------------------------
// Truncation: a destination smaller than the message gets what fits, nothing beyond it, and the
// completion reports that count; the messages after it are unaffected.

class MlTruncation : public ::testing::TestWithParam<Protocol> {};

TEST_P(MlTruncation, CompletionReportsWhatFitAndNothingOverflows) {
  const Protocol p = GetParam();
  InProcessJob job(kPairLayouts[0].spec);
  enum Kind { kBuffer, kScatter, kLaterBuffer, kLaterScatter };
  struct Plan {
    std::size_t capacity;
    Kind kind;
  };
  std::map<std::uint32_t, Plan> plan;
  const auto target = [&](Delivery& d, Kind kind, std::size_t cap) {
    if (kind == kBuffer || kind == kLaterBuffer) return Inbox::into(d, cap, 3);
    return Inbox::scatter(
        d, cap ? std::vector<std::size_t>{cap / 3, 0, cap - cap / 3} : std::vector<std::size_t>{0},
        5);
  };
  Inbox in(job.ml(1), 1, [&](Inbox&, Delivery& d) {
    const auto& pl = plan.at(d.test_header().seq);
    if (pl.kind == kLaterBuffer || pl.kind == kLaterScatter) return Inbox::later(d);
    return target(d, pl.kind, pl.capacity);
  });
  Outbox out;
  std::uint32_t seq = 0;
  const std::vector<std::size_t> sizes = p == Protocol::one_packet
                                             ? std::vector<std::size_t>{1, 2, 220}
                                             : std::vector<std::size_t>{1, 2, 5000, 40000};
  for (std::size_t size : sizes) {
    for (std::size_t cap : {std::size_t{0}, std::size_t{1}, size / 2, size - 1}) {
      for (Kind kind : {kBuffer, kScatter, kLaterBuffer, kLaterScatter}) {
        // The truncated message, then an intact one of the same size.
        for (std::size_t c : {cap, size}) {
          plan[seq] = {c, kind};
          SendOptions o;
          o.protocol = p;
          out.post(job.ml(0), 1, seq, size, message_key(0, 1, seq), o);
          ++seq;
        }
      }
    }
  }
  std::size_t accepted = 0;
  ASSERT_TRUE(job.run_until([&] {
    for (; accepted < in.got.size(); ++accepted) {
      auto& d = in.got[accepted];
      if (!d.unexpected) continue;
      const auto& pl = plan.at(d.test_header().seq);
      in.accept(d, target(d, pl.kind == kLaterBuffer ? kBuffer : kScatter, pl.capacity));
    }
    return in.completed() == seq && out.all_done();
  }));
  for (const auto& d : in.got) {
    const auto& pl = plan.at(d.test_header().seq);
    EXPECT_EQ(d.capacity(), pl.capacity) << describe(d);
    EXPECT_TRUE(delivered_intact(d, message_key(0, 1, d.test_header().seq), d.bytes))
        << "kind " << pl.kind << " capacity " << pl.capacity;
  }
  // Statistics count the message's bytes as received, whatever the destination kept.
  EXPECT_EQ(job.ml(1).statistics().protocol[static_cast<std::size_t>(p)].messages_received, seq);
}

INSTANTIATE_TEST_SUITE_P(, MlTruncation, ::testing::ValuesIn(kAllProtocols),
                         [](const auto& info) { return std::string(to_string(info.param)); });

}  // namespace
}  // namespace bgl::message_layer::test
