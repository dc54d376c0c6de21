// Hostile and faulty peers: a task without a message layer forges packets of every message-layer
// type (and of the collectives' line packets' foreign id) with every field mutated, seeded and
// deterministic, while two real tasks exchange messages of every protocol. The receiver must not
// crash, must keep its memory bounded (early adaptive-eager data, the pool, its RSS), must answer
// in bounded time, and the real messages must arrive intact. Also the targeted cases: a huge offset
// in an early adaptive-eager packet, a rendezvous fin before its ack, a token returned early.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "bgl/collectives/executor.hpp"
#include "ml_harness.hpp"
#include "ml_in_process.hpp"
#include "wire.hpp"

namespace bgl::message_layer::test {
namespace {

// Resident set size of this process in bytes.
std::uint64_t rss_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::uint64_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
}

std::uint64_t env_or(const char* name, std::uint64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoull(v, nullptr, 10) : fallback;
}

// Injects packets from `from` (a task without a layer) to `to`, advancing the job while full.
class Forger {
 public:
  Forger(InProcessJob& job, Rank from, Rank to) : job_(job), from_(from), to_(to) {}
  void send(std::uint8_t type, std::uint32_t word, std::span<const std::byte> payload = {},
            packet_layer::Routing routing = packet_layer::Routing::deterministic) {
    packet_layer::PacketSpec spec{.dest = job_.ep(from_).destination_of(to_),
                                  .dispatch = type,
                                  .word = word,
                                  .routing = routing};
    while (job_.ep(from_).inject(0, spec, payload) == packet_layer::InjectStatus::full)
      job_.advance_all();
  }

 private:
  InProcessJob& job_;
  Rank from_, to_;
};

// Random packets of every type, each field drawn from values that matter to a receiver: zero,
// small, the boundaries of the protocols (chunk, packet, 2 GiB offset bit), real slot ids (small
// numbers: the tables hand out ids from index 0, generation 0) and anything at all.
class PacketFuzzer {
 public:
  explicit PacketFuzzer(std::uint64_t seed) : rng_(seed) {}

  std::uint32_t word() {
    switch (pick(8)) {
      case 0:
        return 0;
      case 1:
        return pick(64);  // slot ids, small offsets
      case 2:
        return wire::kParityBit | pick(4096);
      case 3:
        return static_cast<std::uint32_t>(pick(64) * 240);  // offsets of full packets
      case 4:
        return wire::kParityBit - 1 - pick(512);  // just below the 2 GiB offset limit
      case 5:
        return ~0u - pick(16);
      case 6:
        return static_cast<std::uint32_t>(pick(1u << 20)) | (pick(2) ? wire::kParityBit : 0);
      default:
        return static_cast<std::uint32_t>(rng_());
    }
  }
  std::uint64_t bytes() {
    switch (pick(7)) {
      case 0:
        return 0;
      case 1:
        return pick(240);
      case 2:
        return pick(20000);
      case 3:
        return (std::uint64_t{1} << 31) - pick(2);
      case 4:
        return ~std::uint64_t{0} - pick(4);
      case 5:
        return std::uint64_t{rng_()} << 32 | rng_();
      default:
        return pick(1u << 24);
    }
  }
  std::uint8_t type() {
    static constexpr std::uint8_t kTypes[] = {
        wire::kOnePacket, wire::kEagerFirst, wire::kEagerData, wire::kScout,
        wire::kRzvAck,    wire::kRzvData,    wire::kRzvFin,    wire::kAeFirst,
        wire::kAeData,    wire::kAeToken,    wire::kVnRts,     16 /* the collectives' line */};
    return pick(10) == 0 ? static_cast<std::uint8_t>(pick(256)) : kTypes[pick(std::size(kTypes))];
  }

  // A payload for `type`: mostly well-formed in shape (so that the checks beyond the shape are
  // reached), with every field random.
  std::vector<std::byte> payload(std::uint8_t type, std::uint16_t& seq) {
    std::vector<std::byte> p;
    const bool first = type == wire::kOnePacket || type == wire::kEagerFirst ||
                       type == wire::kScout || type == wire::kAeFirst || type == wire::kVnRts;
    if (first && pick(8) != 0) {
      wire::First f{};
      f.handler = pick(6) == 0 ? static_cast<std::uint8_t>(pick(256)) : 1;
      f.header_bytes = pick(6) == 0 ? static_cast<std::uint8_t>(pick(256))
                                    : static_cast<std::uint8_t>(pick(2) ? 8 : 0);
      // Mostly the next number (the receiver's expected one), sometimes ahead or behind.
      f.seq = pick(3) == 0 ? static_cast<std::uint16_t>(rng_()) : seq++;
      const std::uint64_t b = bytes();
      f.bytes_low = static_cast<std::uint32_t>(b);
      f.bytes_high = static_cast<std::uint32_t>(b >> 32);
      p.resize(sizeof f);
      std::memcpy(p.data(), &f, sizeof f);
      std::size_t rest = 0;
      if (type == wire::kVnRts && pick(2))
        rest = f.header_bytes + sizeof(wire::VnSource);
      else if (type == wire::kOnePacket && pick(2))
        rest = f.header_bytes + (b < 200 ? b : 0);
      else
        rest = pick(packet_layer::kMaxPayloadBytes - sizeof f + 1);
      rest = std::min(rest, packet_layer::kMaxPayloadBytes - sizeof f);
      fill(p, rest);
    } else if (type == wire::kRzvAck && pick(4) != 0) {
      const wire::Ack a{static_cast<std::uint32_t>(pick(64)), word(),
                        static_cast<std::uint32_t>(pick(4))};
      p.resize(sizeof a);
      std::memcpy(p.data(), &a, sizeof a);
    } else if (type == wire::kRzvData && pick(4) != 0) {
      const auto index = static_cast<std::uint32_t>(pick(2) ? pick(64) : rng_());
      p.resize(sizeof index);
      std::memcpy(p.data(), &index, sizeof index);
      fill(p, pick(2) ? wire::kRzvChunk : pick(wire::kRzvChunk + 1));
    } else if (type == 16 && pick(4) != 0) {
      const std::uint32_t line[4] = {static_cast<std::uint32_t>(pick(3)),
                                     static_cast<std::uint32_t>(pick(3)),
                                     static_cast<std::uint32_t>(pick(3)), word()};
      p.resize(sizeof line);
      std::memcpy(p.data(), line, sizeof line);
      fill(p, pick(packet_layer::kMaxPayloadBytes - sizeof line + 1));
    } else {
      fill(p, pick(packet_layer::kMaxPayloadBytes + 1));
    }
    // A few random bytes flipped anywhere.
    for (int flips = pick(3) == 0 ? static_cast<int>(pick(4)) : 0; flips > 0 && !p.empty(); --flips)
      p[pick(p.size())] ^= static_cast<std::byte>(1u << pick(8));
    return p;
  }

 private:
  std::uint64_t pick(std::uint64_t n) { return n ? rng_() % n : 0; }
  void fill(std::vector<std::byte>& p, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i)
      p.push_back(static_cast<std::byte>(rng_()));
  }
  std::mt19937_64 rng_;
};

// Receiving side of the collectives' line packets: a stand-in that, like the collectives' engine,
// is registered for the foreign id so that forged line packets reach a handler.
void ignore_line(void*, const packet_layer::PacketHeader&, std::span<const std::byte>) {}

TEST(MlFuzz, ForgedPacketsOfEveryTypeKeepMemoryAndTimeBoundedAndRealTrafficIntact) {
  QuietLog quiet;
  const std::uint64_t packets = env_or("ML_FUZZ_PACKETS", 20000);
  const std::uint64_t seed = env_or("ML_FUZZ_SEED", 25);
  Config c;
  c.pool_bytes = 1 << 20;
  c.limits.eager_limit = 16 * 1024;
  InProcessJob job({.ntasks = 3, .shape = "3x1x1"}, c, std::vector<Rank>{0, 1});
  job.ml(1).register_packet_handler(16, &ignore_line, nullptr);
  // Half the messages unexpected (accepted later), so that the pool and the stall queues are used.
  // A forged message gets a small buffer whatever size it claims (the rest is dropped).
  Inbox in(job.ml(1), 1, [](Inbox&, Delivery& d) {
    if (d.source != 0) return Inbox::into(d, std::min<std::size_t>(d.bytes, 4096), 0);
    if (d.test_header().seq % 2 == 0) return Inbox::later(d);
    return Inbox::into(d, d.bytes, d.test_header().seq % 3);
  });
  Inbox back(job.ml(0), 1, [](Inbox&, Delivery& d) { return Inbox::into(d, d.bytes, 0); });
  Outbox out;
  Forger forge(job, 2, 1);
  PacketFuzzer fuzz(seed);
  const std::uint64_t rss_before = rss_bytes();
  const auto start = std::chrono::steady_clock::now();
  std::uint16_t seq = 0;
  std::uint32_t posted = 0;
  double slowest = 0;
  for (std::uint64_t i = 0; i < packets; ++i) {
    const std::uint8_t type = fuzz.type();
    const auto payload = fuzz.payload(type, seq);
    forge.send(type, fuzz.word(), payload,
               i % 2 ? packet_layer::Routing::adaptive : packet_layer::Routing::deterministic);
    if (i % 100 == 0) {
      // Real messages of every protocol both ways, the forged packets in between.
      const Protocol p = std::array{Protocol::one_packet, Protocol::eager, Protocol::rendezvous,
                                    Protocol::adaptive_eager}[posted % 4];
      const std::size_t size = p == Protocol::one_packet ? 100 : 1000 + 997 * (posted % 7);
      SendOptions o;
      o.protocol = p;
      out.post(job.ml(0), 1, posted, size, message_key(0, 1, posted), o);
      out.post(job.ml(1), 0, posted, size, message_key(1, 0, posted), o);
      ++posted;
    }
    const auto t0 = std::chrono::steady_clock::now();
    job.advance_all();
    slowest = std::max(
        slowest, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    for (auto& d : in.got)
      if (d.unexpected && d.completions == 0 && d.buffer.size() == 0)
        in.accept(d, Inbox::into(d, d.bytes, 1));
  }
  ASSERT_TRUE(job.run_until([&] {
    for (auto& d : in.got)
      if (d.unexpected && d.completions == 0 && d.buffer.size() == 0)
        in.accept(d, Inbox::into(d, d.bytes, 1));
    std::size_t from0 = 0;
    for (const auto& d : in.got)
      from0 += d.source == 0 && d.completions == 1;
    return from0 == posted && back.completed() == posted && out.all_done();
  })) << "real messages between ranks 0 and 1 stalled among the forged packets";
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  const Statistics& s = job.ml(1).statistics();
  EXPECT_GT(s.malformed_packets, packets / 4) << "most forged packets are rejected";
  // Early adaptive-eager data of the one forging source stay within the largest message.
  EXPECT_LE(s.early_adaptive_bytes_max, c.pool_bytes);
  EXPECT_LE(s.pool_bytes_max, c.pool_bytes);
  EXPECT_LT(rss_bytes(), rss_before + (256u << 20)) << "RSS grew by more than 256 MB";
  EXPECT_LT(slowest, 2.0) << "one advance() took " << slowest << " s";
  EXPECT_LT(seconds, 120.0);
  for (const auto& d : in.got) {
    if (d.source != 0) continue;
    EXPECT_EQ(d.completed_bytes, d.bytes) << describe(d);
    EXPECT_EQ(find_mismatch(d.contents(), message_key(0, 1, d.test_header().seq)), kNoMismatch)
        << describe(d);
  }
  for (const auto& d : back.got)
    EXPECT_EQ(find_mismatch(d.contents(), message_key(1, 0, d.test_header().seq)), kNoMismatch);
}

// One well-formed adaptive-eager data packet, early (no first packet yet), at an offset near 2 GiB:
// it used to make the receiver allocate (and zero) a staging buffer of the offset's size.
TEST(MlFuzz, EarlyAdaptiveEagerPacketWithAHugeOffsetCostsNoMemory) {
  QuietLog quiet;
  InProcessJob job({.ntasks = 3, .shape = "3x1x1"}, Config{}, std::vector<Rank>{0, 1});
  Inbox in(job.ml(1), 1, [](Inbox&, Delivery& d) { return Inbox::into(d, d.bytes, 0); });
  Forger forge(job, 2, 1);
  const std::vector<std::byte> data(240, std::byte{0x5a});
  const std::uint64_t rss_before = rss_bytes();
  for (std::uint32_t k = 0; k < 8; ++k)
    forge.send(wire::kAeData, (wire::kParityBit - 1024 * 1024 * (k + 1)), data,
               packet_layer::Routing::adaptive);
  job.settle();
  EXPECT_LT(rss_bytes(), rss_before + (64u << 20)) << "the staging buffer followed the offset";
  const Statistics& s = job.ml(1).statistics();
  EXPECT_EQ(s.malformed_packets, 8u) << "beyond the largest adaptive-eager message";
  EXPECT_EQ(s.early_adaptive_bytes_max, 0u);
  EXPECT_EQ(in.arrived(), 0u);
}

// Virtual-node requests that name a shared cell the receiver cannot use: one that does not exist,
// and more data than a cell holds. Both are rejected as malformed and nothing is delivered.
TEST(MlFuzz, VirtualNodeRequestsNamingABadSharedCellAreRejected) {
  QuietLog quiet;
  const std::pair<std::uint64_t, std::uint32_t> kBad[] = {
      {1000, packet_layer::kVirtualCells + 1},    // no such cell
      {packet_layer::kVirtualCellBytes + 1, 1}};  // more than a cell holds
  for (const auto& [bytes, cell] : kBad) {
    InProcessJob job({.ntasks = 2, .shape = "1x1x1", .mode = "vn"}, Config{}, std::vector<Rank>{0});
    Inbox in(job.ml(0), 1, [](Inbox&, Delivery& d) { return Inbox::into(d, d.bytes, 0); });
    Forger forge(job, 1, 0);
    wire::First f{};
    f.handler = 1;
    f.bytes_low = static_cast<std::uint32_t>(bytes);
    const wire::VnSource source{0, 1, cell};
    std::vector<std::byte> p(sizeof f + sizeof source);
    std::memcpy(p.data(), &f, sizeof f);
    std::memcpy(p.data() + sizeof f, &source, sizeof source);
    forge.send(wire::kVnRts, 0, p);
    job.settle();
    EXPECT_EQ(job.ml(0).statistics().malformed_packets, 1u) << bytes << " bytes, cell " << cell;
    EXPECT_EQ(in.arrived(), 0u);
  }
}

// A flood of malformed packets: the first ten are logged in full, then a notice that the rest are
// only counted, then a count at most once a second (the limiter the packet layer uses too), so
// the log does not grow with the number of bad packets. All are counted.
TEST(MlFuzz, AFloodOfMalformedPacketsIsLoggedAsACount) {
  std::ostringstream out;
  const auto previous = spdlog::default_logger();
  const auto level = spdlog::get_level();
  spdlog::set_default_logger(std::make_shared<spdlog::logger>(
      "capture", std::make_shared<spdlog::sinks::ostream_sink_mt>(out)));
  spdlog::set_level(spdlog::level::err);
  InProcessJob job({.ntasks = 3, .shape = "3x1x1"}, Config{}, std::vector<Rank>{0, 1});
  Inbox in(job.ml(1), 1, [](Inbox&, Delivery& d) { return Inbox::into(d, d.bytes, 0); });
  Forger forge(job, 2, 1);
  const std::vector<std::byte> data(240, std::byte{0x5a});
  constexpr std::uint32_t kPackets = 2000;
  for (std::uint32_t k = 0; k < kPackets; ++k)
    forge.send(wire::kAeData, wire::kParityBit - 65536 * (k + 1), data,
               packet_layer::Routing::adaptive);
  // The forger has no layer to move its last packets on: its endpoint does.
  const bool sent = job.run_until([&] { return job.ep(2).advance(); });
  job.settle();
  spdlog::set_default_logger(previous);
  spdlog::set_level(level);
  ASSERT_TRUE(sent);
  EXPECT_EQ(job.ml(1).statistics().malformed_packets, kPackets);
  const std::string log = out.str();
  const auto lines = std::count(log.begin(), log.end(), '\n');
  EXPECT_GE(lines, 11) << log;
  EXPECT_LE(lines, 13) << log;  // ten in full, the notice, a count if a second went by
  EXPECT_THAT(log, ::testing::HasSubstr("further malformed packets are only counted"));
  EXPECT_EQ(in.arrived(), 0u);
}

// The forger plays the receiver of a rendezvous and of an adaptive-eager message of rank 0: a fin
// before the ack, and a token returned while the message is still being sent, are discarded (the
// sender must not hand its buffer back early); the real protocol then finishes both.
TEST(MlFuzz, EarlyFinAndEarlyTokenFromTheReceiverAreDiscarded) {
  QuietLog quiet;
  InProcessJob job({.ntasks = 2, .shape = "2x1x1", .mode = "heater", .fifo_packets = 8}, Config{},
                   std::vector<Rank>{0});
  Outbox out;
  SendOptions rzv;
  rzv.protocol = Protocol::rendezvous;
  rzv.notify_remote = true;
  Outgoing& r = out.post(job.ml(0), 1, 0, 1000, message_key(0, 1, 0), rzv);
  packet_layer::Endpoint& ep = job.ep(1);
  Forger reply(job, 1, 0);
  auto next = [&](std::uint8_t type) {
    for (int round = 0; round < 100000; ++round) {
      job.advance_all();
      if (auto f = ep.poll()) {
        const packet_layer::PacketHeader h = ep.peek(*f);
        ep.discard(*f);
        if (h.dispatch == type) return h;
      }
    }
    ADD_FAILURE() << "no packet of type " << int(type);
    return packet_layer::PacketHeader{};
  };
  const packet_layer::PacketHeader scout = next(wire::kScout);
  reply.send(wire::kRzvFin, scout.word);  // before the ack
  job.settle();
  EXPECT_EQ(r.done, 0) << "a fin before the ack ended the rendezvous";
  EXPECT_EQ(job.ml(0).statistics().malformed_packets, 1u);
  const wire::Ack ack{scout.word, 7, 0};
  reply.send(wire::kRzvAck, 0, std::as_bytes(std::span(&ack, 1)));
  for (int chunks = 0; chunks < 5; ++chunks)
    next(wire::kRzvData);
  reply.send(wire::kRzvFin, scout.word);
  job.settle();
  EXPECT_EQ(r.done, 1);
  EXPECT_EQ(r.remote_done, 1);

  // An adaptive-eager message of many packets through an 8-packet FIFO: the token comes back
  // while most of it has not been sent.
  SendOptions ae;
  ae.protocol = Protocol::adaptive_eager;
  Outgoing& a = out.post(job.ml(0), 1, 1, 12000, message_key(0, 1, 1), ae);
  next(wire::kAeFirst);
  reply.send(wire::kAeToken, 0);
  job.advance_all();
  EXPECT_EQ(job.ml(0).statistics().malformed_packets, 2u) << "the early token was taken";
  for (int round = 0; round < 100000 && a.done == 0; ++round) {
    job.advance_all();
    if (auto f = ep.poll()) ep.discard(*f);
  }
  EXPECT_EQ(a.done, 1);
  reply.send(wire::kAeToken, 0);  // now it is due
  job.settle();
  EXPECT_EQ(job.ml(0).statistics().malformed_packets, 2u);
}

}  // namespace
}  // namespace bgl::message_layer::test

namespace bgl::message_layer::test {
namespace {

struct LinePacket {
  std::uint32_t context, seq, tag, offset;
};

std::vector<std::byte> line_packet(const LinePacket& h, std::size_t data, std::byte fill) {
  std::vector<std::byte> p(sizeof h + data, fill);
  std::memcpy(p.data(), &h, sizeof h);
  return p;
}

// The collectives' line packets (a foreign dispatch id of the message layer): one that contradicts
// its part is discarded and counted, and a part that arrives before its receive costs the memory
// of what arrived, not of the size a packet claims.
TEST(MlFuzz, CollectivesLinePacketsAreCheckedAgainstTheirPart) {
  QuietLog quiet;
  InProcessJob job({.ntasks = 3, .shape = "3x1x1"}, Config{}, std::vector<Rank>{0, 1});
  collectives::Executor executor(job.ml(1));
  Forger forge(job, 2, 1);
  const std::byte five[5] = {};
  forge.send(collectives::kLineDispatch, 100, five);  // shorter than the line header
  forge.send(collectives::kLineDispatch, 100,
             line_packet({1, 0, 5, 0xffffff00u}, 10, std::byte{1}));
  job.settle();
  EXPECT_EQ(executor.malformed_packets(), 2u);
  const std::uint64_t rss_before = rss_bytes();
  for (std::uint32_t tag = 10; tag < 18; ++tag)  // parts claiming 4 GiB
    forge.send(collectives::kLineDispatch, ~0u,
               line_packet({1, 0, tag, 1u << 31}, 200, std::byte{2}));
  job.settle();
  EXPECT_LT(rss_bytes(), rss_before + (64u << 20)) << "early line parts followed the claimed size";
  EXPECT_EQ(executor.unexpected(), 8u);

  // A 300-byte part in two packets before its receive, then a packet too many: delivered intact,
  // the extra one discarded.
  forge.send(collectives::kLineDispatch, 300, line_packet({1, 0, 7, 224}, 76, std::byte{0x22}));
  forge.send(collectives::kLineDispatch, 300, line_packet({1, 0, 7, 0}, 224, std::byte{0x11}));
  job.settle();
  std::vector<std::byte> buffer(300);
  int done = 0;
  executor.expect(
      {1, 0, 2, 7}, buffer, [](void* c, std::uint32_t, std::size_t) { ++*static_cast<int*>(c); },
      &done);
  EXPECT_EQ(done, 1);
  EXPECT_EQ(buffer[0], std::byte{0x11});
  EXPECT_EQ(buffer[223], std::byte{0x11});
  EXPECT_EQ(buffer[224], std::byte{0x22});
  EXPECT_EQ(buffer[299], std::byte{0x22});
  // Posted first: a packet beyond what the part still lacks is discarded.
  std::vector<std::byte> second(100);
  executor.expect(
      {1, 0, 2, 8}, second, [](void* c, std::uint32_t, std::size_t) { ++*static_cast<int*>(c); },
      &done);
  forge.send(collectives::kLineDispatch, 100, line_packet({1, 0, 8, 0}, 60, std::byte{3}));
  forge.send(collectives::kLineDispatch, 100, line_packet({1, 0, 8, 0}, 60, std::byte{3}));
  job.settle();
  EXPECT_EQ(executor.malformed_packets(), 3u);
  EXPECT_EQ(done, 1);
  forge.send(collectives::kLineDispatch, 100, line_packet({1, 0, 8, 60}, 40, std::byte{4}));
  job.settle();
  EXPECT_EQ(done, 2);
}

}  // namespace
}  // namespace bgl::message_layer::test
