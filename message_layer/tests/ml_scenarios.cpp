// Task program for the message layer's multi-process tests, run by bglrun (driven from
// ml_launcher_test.cpp). Every task initialises through message_layer::Session::from_launcher(),
// the real start-up path; a failed check prints the rank, file:line and what failed, and exits 1
// (bglrun then stops the job and names the rank).
//
//   ml_scenarios pingpong SIZES     rank 0 and the last rank exchange messages of every boundary
//                                   size at every alignment pair (SIZES: small = up to 1500 bytes,
//                                   boundary = up to 64 KiB and 1 MiB, huge = one 64 MiB message);
//                                   the last rank echoes each message back; every other message is
//                                   unexpected (accepted later). Protocols: the layer's choice
//                                   (BGL_ML_PROTOCOL, BGL_ML_ADAPTIVE_EAGER, BGL_ML_EAGER_LIMIT).
//   ml_scenarios mix MODE           every task sends every other task (and itself) a stream of
//                                   messages: MODE all = every sequence of three protocols valid
//                                   for the pair, forced per message; auto = the layer's choice.
//                                   Receivers check the order (MPI non-overtaking) and contents;
//                                   every third message is unexpected.
//   ml_scenarios stress SEED N MAX  N random messages per task: random destinations (oneself
//                                   included), sizes up to MAX, protocols, alignments, gather
//                                   lists, scatter targets, truncation, unexpected; checksummed.
//   ml_scenarios big BYTES          one message of BYTES from rank 0 to the last rank, checksummed
//   ml_scenarios backpressure N     every rank > 0 sends rank 0 N unexpected messages; rank 0
//                                   accepts them slowly (BGL_ML_POOL_BYTES small: backpressure)
//   ml_scenarios unexpected_rzv     a rendezvous message waits (sender not done) until accepted
//   ml_scenarios stats              known message counts per protocol, for bglrun --stats
//   ml_scenarios errors             bad input: std::invalid_argument with clear messages
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bgl/message_layer/session.hpp"
#include "bgl/torus_emu/distance.hpp"
#include "bgl/torus_emu/error.hpp"
#include "ml_harness.hpp"
#include "scenario_support.hpp"

namespace {

using namespace bgl;
using namespace bgl::message_layer;
using namespace bgl::message_layer::test;
using Clock = std::chrono::steady_clock;

StallWatchdog* g_watchdog = nullptr;

// MessageLayer::progress_until() under the watchdog: advances until pred() holds. A stall report
// carries the layer's statistics.
template <class Pred>
void drive(MessageLayer& ml, const char* what, Pred&& pred) {
  g_watchdog->describe_with([&ml] { return ": " + ml.statistics().to_json(); });
  test::drive(ml, *g_watchdog, what, pred, [&ml] { ml.wait(); });
}

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

std::string protocol_counts(const std::map<Protocol, int>& counts) {
  std::string s;
  for (const auto& [p, n] : counts) {
    s += ' ';
    s.append(to_string(p));
    s += '=';
    s += std::to_string(n);
  }
  return s;
}

// The protocols a message from `me` to `peer` of `bytes` bytes may be forced to use.
std::vector<Protocol> valid_protocols(const Session& s, Rank me, Rank peer, std::size_t bytes,
                                      std::size_t header = sizeof(TestHeader)) {
  std::vector<Protocol> v;
  if (bytes <= 228 - header) v.push_back(Protocol::one_packet);
  v.insert(v.end(), {Protocol::eager, Protocol::rendezvous, Protocol::adaptive_eager});
  const auto a = s.mapping().location(me), b = s.mapping().location(peer);
  if (s.mode() == job_runtime::NodeMode::virtual_node && a.node == b.node && a.t != b.t)
    v.push_back(Protocol::virtual_node);
  return v;
}

// Checks a completed delivery against the pattern of `key`.
void check_delivery(const Delivery& d, std::uint64_t key, std::size_t bytes) {
  const std::string what = describe(d);
  CHECK_MSG(d.bytes == bytes, what);
  CHECK_MSG(d.completions == 1, what + ": " + std::to_string(d.completions) + " completions");
  const std::size_t fits = std::min(bytes, d.capacity());
  CHECK_MSG(d.completed_bytes == fits, what + ": completion reports " +
                                           std::to_string(d.completed_bytes) + " of " +
                                           std::to_string(fits));
  CHECK_MSG(d.completed_handle == d.handle, what);
  const auto got = d.contents();
  const auto bad = find_mismatch(std::span(got).first(fits), key);
  CHECK_MSG(bad == kNoMismatch, what + ": byte " + std::to_string(bad) + " differs");
  CHECK_MSG(d.guards_intact(), what + ": wrote outside its destination");
}

// ---------------------------------------------------------------------------------------------
// pingpong

int pingpong(Session& s, const std::string& sizeset) {
  MessageLayer& ml = s.layer();
  const Rank me = s.rank(), a = 0, b = static_cast<Rank>(s.size() - 1);
  const auto& map = s.mapping();
  const int hops = torus_emu::distance(map.shape(), map.coord(a), map.coord(b));
  const bool same_node = map.location(a).node == map.location(b).node;
  if (me == a)
    std::printf("pingpong: ranks %u and %u, distance %d hops%s, %s mode\n", a, b, hops,
                same_node ? " (same node)" : "",
                std::string(job_runtime::to_string(s.mode())).c_str());

  struct Item {
    std::size_t size, so, ro;  // send offset at rank a (and the echo's receive offset), at rank b
  };
  std::vector<std::vector<Item>> batches;
  const bool one_packet_only = ml.config().limits.forced == Protocol::one_packet;
  if (sizeset == "huge") {
    batches.push_back({{64u << 20, 3, 29}});
  } else {
    const std::size_t max = one_packet_only ? kOnePacketWithTestHeader : 65543;
    const auto sizes = boundary_sizes(sizeof(TestHeader), max);
    for (std::size_t so : kAlignments) {
      auto& batch = batches.emplace_back();
      for (std::size_t ro : kAlignments)
        for (std::size_t size : sizes)
          if (size <= 1500) batch.push_back({size, so, ro});
    }
    if (sizeset == "boundary" && !one_packet_only) {
      for (std::size_t i = 0; i < kAlignments.size(); ++i) {
        auto& batch = batches.emplace_back();
        const std::size_t so = kAlignments[i], ro = kAlignments[(i + 3) % kAlignments.size()];
        for (std::size_t size : sizes)
          if (size > 1500) batch.push_back({size, so, ro});
        batch.push_back({1u << 20, ro, so});
      }
    }
  }
  std::map<std::uint32_t, Item> plan;
  std::size_t total = 0;
  for (const auto& batch : batches)
    for (const auto& item : batch)
      plan[static_cast<std::uint32_t>(total++)] = item;

  std::map<Protocol, int> protocols;
  if (me == a) {
    Inbox echoes(ml, 2, [&](Inbox&, Delivery& d) {
      return Inbox::into(d, plan.at(d.test_header().seq).size, plan.at(d.test_header().seq).so);
    });
    std::uint32_t seq = 0;
    for (const auto& batch : batches) {
      Outbox out;
      for (const auto& item : batch) {
        SendOptions o;
        o.offset = item.so;
        o.handler = 1;
        out.post(ml, b, seq, item.size, message_key(a, b, seq), o);
        ++seq;
      }
      drive(ml, __func__, [&] { return echoes.completed() == batch.size() && out.all_done(); });
      for (const auto& d : echoes.got) {
        check_delivery(d, message_key(a, b, d.test_header().seq),
                       plan.at(d.test_header().seq).size);
        ++protocols[d.protocol];
      }
      echoes.clear();
    }
    drive(ml, __func__, [&] { return ml.idle(); });
    std::printf("pingpong: rank %u received echoes:%s\n", me, protocol_counts(protocols).c_str());
  } else if (me == b) {
    Inbox in(ml, 1, [&](Inbox&, Delivery& d) {
      const auto seq = d.test_header().seq;
      if (seq % 2) return Inbox::later(d);
      return Inbox::into(d, plan.at(seq).size, plan.at(seq).ro);
    });
    std::deque<SendMessage> echoes;
    std::size_t echoed = 0, accepted = 0, echoes_done = 0;
    g_watchdog->describe_with([&] {
      return ": " + std::to_string(in.arrived()) + " arrived, " + std::to_string(in.completed()) +
             " complete, " + std::to_string(echoed) + " echoed; " + ml.statistics().to_json();
    });
    g_watchdog->arm("pingpong");
    while (echoed < total || echoes_done < total) {
      for (; accepted < in.got.size(); ++accepted) {
        auto& d = in.got[accepted];
        if (d.unexpected) in.accept(d, Inbox::into(d, d.bytes, plan.at(d.test_header().seq).ro));
      }
      // Echo every complete message from where it landed, in arrival order.
      for (; echoed < in.got.size() && in.got[echoed].completions > 0; ++echoed) {
        Delivery& d = in.got[echoed];
        const auto seq = d.test_header().seq;
        CHECK(seq == echoed);  // non-overtaking
        check_delivery(d, message_key(a, b, seq), plan.at(seq).size);
        ++protocols[d.protocol];
        SendMessage& m = echoes.emplace_back();
        m.dest = a;
        m.handler = 2;
        m.header = d.header;
        m.data.buffer = d.buffer.span();
        m.context = &echoes_done;
        m.done = [](SendMessage& x) { ++*static_cast<std::size_t*>(x.context); };
        ml.post(m);
      }
      if (ml.advance())
        g_watchdog->pet();
      else
        ml.wait();
    }
    g_watchdog->disarm();
    drive(ml, __func__, [&] { return ml.idle(); });
    std::printf("pingpong: rank %u received:%s\n", me, protocol_counts(protocols).c_str());
  }
  s.bootstrap().barrier();
  if (me == a) std::printf("pingpong: %zu messages each way: ok\n", total);
  return 0;
}

// ---------------------------------------------------------------------------------------------
// mix: non-overtaking for every sequence of protocols

std::size_t mix_size(Protocol p, std::mt19937& rng) {
  switch (p) {
    case Protocol::one_packet:
      return rng() % (kOnePacketWithTestHeader + 1);
    case Protocol::rendezvous:
      return rng() % 6000;
    default:
      return kOnePacketWithTestHeader + 1 + rng() % 3000;
  }
}

int mix(Session& s, const std::string& mode) {
  MessageLayer& ml = s.layer();
  const Rank me = s.rank();
  const int n = s.size();
  Inbox in(ml, 1, [](Inbox&, Delivery& d) {
    if (d.test_header().seq % 3 == 2) return Inbox::later(d);
    return Inbox::into(d, d.bytes, d.test_header().seq % 32);
  });
  Outbox out;
  std::size_t expected = 0;
  std::map<Protocol, int> sent;
  for (int k = 0; k < n; ++k) {
    const auto dest = static_cast<Rank>((me + static_cast<unsigned>(k)) % static_cast<unsigned>(n));
    std::mt19937 rng(me * 1000 + dest);
    const auto protocols = valid_protocols(s, me, dest, 0);
    const std::size_t np = protocols.size();
    std::uint32_t seq = 0;
    for (std::size_t triple = 0; triple < np * np * np; ++triple) {
      for (std::size_t i = 0, t = triple; i < 3; ++i, t /= np) {
        SendOptions o;
        o.offset = seq % 32;
        std::size_t size = rng() % 4000;
        if (mode == "all") {
          o.protocol = protocols[t % np];
          size = mix_size(*o.protocol, rng);
        }
        const auto& m = out.post(ml, dest, seq, size, message_key(me, dest, seq), o);
        ++sent[m.protocol];
        ++seq;
      }
    }
    // Every task sends every task the same number of messages in this mode.
    expected += seq;
  }
  std::size_t accepted = 0;
  drive(ml, __func__, [&] {
    for (; accepted < in.got.size(); ++accepted) {
      auto& d = in.got[accepted];
      if (d.unexpected) in.accept(d, Inbox::into(d, d.bytes, (accepted * 7) % 32));
    }
    return in.completed() == expected && out.all_done();
  });
  std::map<Rank, std::uint32_t> next;
  for (const auto& d : in.got) {
    const auto seq = d.test_header().seq;
    CHECK_MSG(seq == next[d.source],
              describe(d) + " overtook message " + std::to_string(next[d.source]));
    ++next[d.source];
    check_delivery(d, message_key(d.source, me, seq), d.bytes);
  }
  drive(ml, __func__, [&] { return ml.idle(); });
  std::printf("mix: rank %u sent%s\n", me, protocol_counts(sent).c_str());
  s.bootstrap().barrier();
  if (me == 0) std::printf("mix %s: %d tasks: ok\n", mode.c_str(), n);
  return 0;
}

// ---------------------------------------------------------------------------------------------
// stress: random everything, checksummed

struct StressHeader {
  std::uint32_t seq;
  std::uint32_t plan_index;
  std::uint64_t checksum;
};

struct StressMsg {
  Rank src = 0, dest = 0;
  std::uint32_t seq = 0;  // number within (src, dest)
  std::size_t size = 0;
  std::optional<Protocol> protocol;
  std::size_t so = 0, ro = 0;
  std::vector<std::size_t> gather, scatter;
  std::size_t capacity = 0;  // receive capacity (< size: truncated)
  bool unexpected = false;
};

std::vector<std::size_t> random_split(std::size_t total, std::mt19937& rng) {
  std::vector<std::size_t> v;
  while (total > 0) {
    const std::size_t n = std::min<std::size_t>(total, rng() % 2 ? rng() % 64 : rng() % 20000);
    v.push_back(n);
    total -= n;
  }
  if (rng() % 2) v.insert(v.begin() + static_cast<std::ptrdiff_t>(rng() % (v.size() + 1)), 0);
  return v;
}

// The whole job's plan, the same on every task.
std::vector<StressMsg> stress_plan(const Session& s, std::uint64_t seed, int per_task,
                                   std::size_t max_bytes) {
  std::vector<StressMsg> plan;
  std::map<std::pair<Rank, Rank>, std::uint32_t> seqs;
  std::mt19937 rng(static_cast<std::uint32_t>(seed));
  for (int src = 0; src < s.size(); ++src) {
    for (int i = 0; i < per_task; ++i) {
      StressMsg m;
      m.src = static_cast<Rank>(src);
      m.dest = static_cast<Rank>(rng() % static_cast<unsigned>(s.size()));
      m.seq = seqs[{m.src, m.dest}]++;
      const unsigned kind = rng() % 100;
      const std::size_t cap = kind < 40 ? 221 : kind < 80 ? 20000 : kind < 95 ? 200000 : max_bytes;
      m.size = rng() % (std::min(cap, max_bytes) + 1);
      const auto protocols = valid_protocols(s, m.src, m.dest, m.size, sizeof(StressHeader));
      if (rng() % 3) m.protocol = protocols[rng() % protocols.size()];
      if (m.protocol == Protocol::virtual_node && rng() % 4 == 0) m.protocol.reset();
      m.so = rng() % 32;
      m.ro = rng() % 32;
      if (rng() % 5 == 0 && m.protocol != Protocol::virtual_node)
        m.gather = random_split(m.size, rng);
      if (rng() % 5 == 0) m.scatter = random_split(m.size, rng);
      m.capacity = m.size;
      if (rng() % 20 == 0) {
        m.capacity = m.size / 2;
        m.scatter.clear();
      }
      m.unexpected = rng() % 3 == 0;
      plan.push_back(std::move(m));
    }
  }
  return plan;
}

int stress(Session& s, std::uint64_t seed, int per_task, std::size_t max_bytes) {
  MessageLayer& ml = s.layer();
  const Rank me = s.rank();
  const auto plan = stress_plan(s, seed, per_task, max_bytes);
  std::size_t expected = 0;
  for (const auto& m : plan)
    expected += m.dest == me;

  // Receiving: every arrival is checked against the plan (sender, size, number: non-overtaking,
  // protocol) and placed where the plan says, or taken as unexpected and accepted a little later.
  std::map<Rank, std::uint32_t> next;
  const auto header_of = [](const Delivery& d) {
    StressHeader h;
    CHECK(d.header.size() == sizeof h);
    std::memcpy(&h, d.header.data(), sizeof h);
    return h;
  };
  const auto target_of = [](Delivery& d, const StressMsg& m) {
    if (!m.scatter.empty()) return Inbox::scatter(d, m.scatter, m.ro);
    return Inbox::into(d, m.capacity, m.ro);
  };
  std::vector<Delivery*> to_accept;
  Inbox in(ml, 7, [&](Inbox&, Delivery& d) {
    const StressHeader h = header_of(d);
    CHECK(h.plan_index < plan.size());
    const StressMsg& m = plan[h.plan_index];
    CHECK(m.src == d.source && m.dest == me && m.size == d.bytes && m.seq == h.seq);
    CHECK_MSG(h.seq == next[d.source], "message " + std::to_string(h.seq) + " from rank " +
                                           std::to_string(d.source) + " overtook " +
                                           std::to_string(next[d.source]));
    ++next[d.source];
    if (m.protocol) CHECK(d.protocol == *m.protocol);
    if (m.unexpected) {
      to_accept.push_back(&d);
      return Inbox::later(d);
    }
    return target_of(d, m);
  });

  // Sending: a window of outstanding messages.
  struct Out {
    SendMessage m;
    StressHeader h;
    GuardedBuffer data;
    std::vector<GuardedBuffer> pieces;
    std::vector<iovec> iov;
    bool done = false;
  };
  std::deque<Out> outs;
  std::vector<std::size_t> mine;
  for (std::size_t i = 0; i < plan.size(); ++i)
    if (plan[i].src == me) mine.push_back(i);
  std::size_t posted = 0, sends_done = 0, accepted = 0;
  std::map<Protocol, int> sent;
  drive(ml, __func__, [&] {
    while (posted < mine.size() && posted - sends_done < 48) {
      const StressMsg& m = plan[mine[posted]];
      Out& o = outs.emplace_back();
      const std::uint64_t key = message_key(m.src, m.dest, m.seq);
      if (m.gather.empty()) {
        o.data = GuardedBuffer(m.size, m.so);
        o.data.fill(key);
        o.m.data.buffer = o.data.span();
        o.h.checksum = checksum(o.data.span());
      } else {
        std::size_t at = 0;
        std::vector<std::byte> all(m.size);
        for (std::size_t i = 0; i < m.gather.size(); ++i) {
          auto& p = o.pieces.emplace_back(m.gather[i], (m.so + i) % 32);
          fill_pattern(p.span(), key, at);
          if (p.size()) std::memcpy(all.data() + at, p.data(), p.size());
          at += m.gather[i];
        }
        for (auto& p : o.pieces)
          o.iov.push_back({p.data(), p.size()});
        o.m.data.iov = o.iov;
        o.h.checksum = checksum(all);
      }
      o.h.seq = m.seq;
      o.h.plan_index = static_cast<std::uint32_t>(mine[posted]);
      o.m.dest = m.dest;
      o.m.handler = 7;
      o.m.header = std::as_bytes(std::span(&o.h, 1));
      o.m.protocol = m.protocol;
      o.m.context = &sends_done;
      o.m.done = [](SendMessage& x) { ++*static_cast<std::size_t*>(x.context); };
      ++sent[ml.choose(o.m)];
      ml.post(o.m);
      ++posted;
    }
    // Accept the unexpected messages that arrived since the last look.
    while (accepted < to_accept.size()) {
      Delivery& d = *to_accept[accepted++];
      in.accept(d, target_of(d, plan[header_of(d).plan_index]));
    }
    return posted == mine.size() && sends_done == mine.size() && in.completed() == expected;
  });
  drive(ml, __func__, [&] { return ml.idle(); });
  for (const auto& d : in.got) {
    const StressHeader h = header_of(d);
    const StressMsg& m = plan[h.plan_index];
    check_delivery(d, message_key(m.src, m.dest, m.seq), m.size);
    if (m.capacity == m.size) {
      const auto all = d.contents();
      CHECK_MSG(checksum(all) == h.checksum, describe(d) + ": checksum differs");
    }
  }
  std::printf("stress: rank %u sent %zu, received %zu:%s\n", me, mine.size(), in.got.size(),
              protocol_counts(sent).c_str());
  s.bootstrap().barrier();
  if (me == 0)
    std::printf("stress: %d tasks, %d messages each, seed %llu: ok\n", s.size(), per_task,
                static_cast<unsigned long long>(seed));
  return 0;
}

// ---------------------------------------------------------------------------------------------
// big: one huge message

struct BigHeader {
  std::uint64_t bytes;
  std::uint64_t checksum;
};

int big(Session& s, std::size_t bytes) {
  MessageLayer& ml = s.layer();
  const Rank me = s.rank(), a = 0, b = static_cast<Rank>(s.size() - 1);
  const std::uint64_t key = message_key(a, b, 0);
  if (me == a) {
    const auto t0 = Clock::now();
    GuardedBuffer data(bytes, 3);
    data.fill(key);
    BigHeader h{bytes, checksum(data.span())};
    const double prepare = seconds_since(t0);
    SendMessage m;
    bool flags[2] = {false, false};  // done, remote_done
    m.dest = b;
    m.handler = 1;
    m.header = std::as_bytes(std::span(&h, 1));
    m.data.buffer = data.span();
    m.context = flags;
    m.done = [](SendMessage& x) { static_cast<bool*>(x.context)[0] = true; };
    m.remote_done = [](SendMessage& x) { static_cast<bool*>(x.context)[1] = true; };
    const Protocol p = ml.choose(m);
    s.bootstrap().barrier();  // the receiver is ready and waits no longer than the transfer
    const auto t1 = Clock::now();
    ml.post(m);
    drive(ml, __func__, [&] { return flags[0] && (p != Protocol::rendezvous || flags[1]); });
    const double transfer = seconds_since(t1);
    const bool remote = flags[1];
    std::printf("big: rank %u sent %zu bytes (%s) in %.2f s (%.0f MB/s), prepared in %.2f s%s\n",
                me, bytes, std::string(to_string(p)).c_str(), transfer, bytes / transfer / 1e6,
                prepare, remote ? ", receiver confirmed" : "");
  } else if (me == b) {
    GuardedBuffer buffer(bytes, 5);
    struct Got {
      BigHeader h{};
      Protocol protocol{};
      std::size_t completed = ~std::size_t{0};
    } got;
    struct Ctx {
      Got* got;
      GuardedBuffer* buffer;
    } ctx{&got, &buffer};
    ml.register_handler(
        1,
        [](void* c, const Arrival& a) {
          auto& x = *static_cast<Ctx*>(c);
          CHECK(a.header.size() == sizeof(BigHeader));
          std::memcpy(&x.got->h, a.header.data(), sizeof(BigHeader));
          CHECK(a.bytes == x.got->h.bytes && a.bytes == x.buffer->size());
          x.got->protocol = a.protocol;
          return RecvTarget::into(
              x.buffer->span(),
              [](void* g, std::uint32_t, std::size_t n) { static_cast<Got*>(g)->completed = n; },
              x.got);
        },
        &ctx);
    s.bootstrap().barrier();
    const auto t0 = Clock::now();
    drive(ml, __func__, [&] { return got.completed != ~std::size_t{0}; });
    const double transfer = seconds_since(t0);
    CHECK(got.completed == bytes);
    const auto t1 = Clock::now();
    const std::uint64_t sum = checksum(buffer.span());
    CHECK_MSG(sum == got.h.checksum, "checksum of the received data differs");
    const auto bad = find_mismatch(buffer.span(), key);
    CHECK_MSG(bad == kNoMismatch, "byte " + std::to_string(bad) + " differs");
    CHECK(buffer.guards_intact());
    drive(ml, __func__, [&] { return ml.idle(); });
    std::printf(
        "big: rank %u received %zu bytes (%s), checksum %016llx ok, in %.2f s, checked in %.2f s\n",
        me, bytes, std::string(to_string(got.protocol)).c_str(),
        static_cast<unsigned long long>(sum), transfer, seconds_since(t1));
  } else {
    s.bootstrap().barrier();
  }
  s.bootstrap().barrier();
  return 0;
}

// ---------------------------------------------------------------------------------------------
// backpressure: a small pool, many unexpected messages accepted slowly

int backpressure(Session& s, int per_sender) {
  MessageLayer& ml = s.layer();
  const Rank me = s.rank();
  const int n = s.size();
  if (me == 0) {
    Inbox in(ml, 1, [](Inbox&, Delivery& d) { return Inbox::later(d); });
    const std::size_t expected =
        static_cast<std::size_t>(per_sender) * static_cast<std::size_t>(n - 1);
    std::size_t accepted = 0;
    auto last = Clock::now();
    // One accept per 200 microseconds at most: the senders outrun the receiver. Never block in
    // wait() while an accept is owed (no packet may come to wake the task).
    g_watchdog->describe_with([&] {
      return ": " + std::to_string(in.arrived()) + " arrived, " + std::to_string(accepted) +
             " accepted, " + std::to_string(in.completed()) + " complete; " +
             ml.statistics().to_json();
    });
    g_watchdog->arm("backpressure");
    while (in.completed() < expected) {
      if (accepted < in.got.size() && seconds_since(last) > 200e-6) {
        auto& d = in.got[accepted];
        in.accept(d, Inbox::into(d, d.bytes, accepted % 32));
        ++accepted;
        last = Clock::now();
      }
      // (An accept may complete the last message: check before sleeping.)
      if (ml.advance())
        g_watchdog->pet();
      else if (accepted == in.got.size() && in.completed() < expected)
        ml.wait();
    }
    g_watchdog->disarm();
    std::map<Rank, std::uint32_t> next;
    for (const auto& d : in.got) {
      CHECK_MSG(d.test_header().seq == next[d.source], describe(d) + " out of order");
      ++next[d.source];
      check_delivery(d, message_key(d.source, 0, d.test_header().seq), d.bytes);
    }
    const auto& st = ml.statistics();
    const std::size_t pool = ml.config().pool_bytes;
    CHECK_MSG(st.pool_bytes_max <= pool,
              std::to_string(st.pool_bytes_max) + " > " + std::to_string(pool));
    CHECK(st.unexpected_messages == expected);
    std::printf(
        "backpressure: %zu unexpected messages, pool max %llu of %zu bytes, %llu waits: ok\n",
        expected, static_cast<unsigned long long>(st.pool_bytes_max), pool,
        static_cast<unsigned long long>(st.pool_waits));
  } else {
    Outbox out;
    std::mt19937 rng(me);
    const Protocol kinds[] = {Protocol::one_packet, Protocol::eager, Protocol::adaptive_eager,
                              Protocol::rendezvous};
    for (std::uint32_t seq = 0; seq < static_cast<std::uint32_t>(per_sender); ++seq) {
      SendOptions o;
      o.protocol = kinds[rng() % 4];
      const std::size_t size =
          o.protocol == Protocol::one_packet ? rng() % 221 : 221 + rng() % 3500;
      out.post(ml, 0, seq, size, message_key(me, 0, seq), o);
    }
    drive(ml, __func__, [&] { return out.all_done() && ml.idle(); });
  }
  s.bootstrap().barrier();
  return 0;
}

// ---------------------------------------------------------------------------------------------
// unexpected_rzv: the sender of an unexpected rendezvous message keeps waiting until accept()

int unexpected_rzv(Session& s) {
  MessageLayer& ml = s.layer();
  const Rank me = s.rank(), a = 0, b = static_cast<Rank>(s.size() - 1);
  if (me == a) {
    Outbox out;
    SendOptions o;
    o.protocol = Protocol::rendezvous;
    o.notify_remote = true;
    out.post(ml, b, 0, 300000, message_key(a, b, 0), o);
    const auto t0 = Clock::now();
    while (seconds_since(t0) < 0.2)
      ml.advance();
    CHECK_MSG(out.sent[0].done == 0, "done before the receiver accepted");
    CHECK(!ml.idle());
    s.bootstrap().barrier();  // the receiver accepts after this
    drive(ml, __func__, [&] { return out.all_done(); });
    CHECK(out.sent[0].remote_done == 1);
    std::printf("unexpected_rzv: sender waited for accept(): ok\n");
  } else if (me == b) {
    Inbox in(ml, 1, [](Inbox&, Delivery& d) { return Inbox::later(d); });
    drive(ml, __func__, [&] { return in.arrived() == 1; });
    const auto t0 = Clock::now();
    while (seconds_since(t0) < 0.2)
      ml.advance();
    const auto& rzv = ml.statistics().protocol[static_cast<std::size_t>(Protocol::rendezvous)];
    CHECK(rzv.bytes_received == 0 && ml.statistics().unexpected_depth == 1);
    s.bootstrap().barrier();
    auto& d = in.got[0];
    in.accept(d, Inbox::into(d, d.bytes, 0));
    drive(ml, __func__, [&] { return in.completed() == 1; });
    check_delivery(d, message_key(a, b, 0), 300000);
    drive(ml, __func__, [&] { return ml.idle(); });
  } else {
    s.bootstrap().barrier();
  }
  s.bootstrap().barrier();
  return 0;
}

// ---------------------------------------------------------------------------------------------
// stats: a known number of messages per protocol to the next rank

int stats(Session& s) {
  MessageLayer& ml = s.layer();
  const Rank me = s.rank();
  const auto next = static_cast<Rank>((me + 1) % static_cast<unsigned>(s.size()));
  Inbox in(ml, 1, [](Inbox&, Delivery& d) { return Inbox::into(d, d.bytes, 0); });
  Outbox out;
  // one_packet x3 (100 B), eager x5 (1000 B), rendezvous x7 (5000 B), adaptive eager x11 (700 B)
  const std::pair<Protocol, std::pair<int, std::size_t>> kinds[] = {
      {Protocol::one_packet, {3, 100}},
      {Protocol::eager, {5, 1000}},
      {Protocol::rendezvous, {7, 5000}},
      {Protocol::adaptive_eager, {11, 700}}};
  std::uint32_t seq = 0;
  for (const auto& [p, what] : kinds) {
    for (int i = 0; i < what.first; ++i) {
      SendOptions o;
      o.protocol = p;
      out.post(ml, next, seq, what.second, message_key(me, next, seq), o);
      ++seq;
    }
  }
  drive(ml, __func__, [&] { return in.completed() == seq && out.all_done(); });
  drive(ml, __func__, [&] { return ml.idle(); });
  s.bootstrap().barrier();
  if (me == 0) std::printf("stats: %u messages per task: ok\n", seq);
  return 0;
}

// ---------------------------------------------------------------------------------------------
// errors: bad input

template <class F>
std::string invalid_argument(F&& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  fail(__FILE__, __LINE__, "no std::invalid_argument");
}

int errors(Session& s) {
  MessageLayer& ml = s.layer();
  const auto n = static_cast<Rank>(s.size());
  std::vector<std::byte> data(1000), header(129);
  const auto expect = [](const std::string& got, const std::string& want) {
    CHECK_MSG(got.find(want) != std::string::npos, "'" + got + "' lacks '" + want + "'");
    std::printf("errors: rank %u: %s\n", g_rank, got.c_str());
  };
  SendMessage m;
  m.dest = n;
  expect(invalid_argument([&] { ml.post(m); }),
         "message to rank " + std::to_string(n) + " of a " + std::to_string(n) + "-task job");
  m.dest = 0;
  m.header = header;
  expect(invalid_argument([&] { ml.post(m); }), "user header of 129 bytes exceeds 128");
  m.header = {};
  m.protocol = Protocol::one_packet;
  m.data.buffer = data;
  expect(invalid_argument([&] { ml.post(m); }),
         "one-packet protocol forced for 1000 bytes; at most 228 fit with this header");
  expect(invalid_argument(
             [&] { ml.accept(RecvHandle{12345}, RecvTarget::into(data, nullptr, nullptr)); }),
         "accept() of a message that is not waiting for a buffer");
  CHECK(ml.idle());
  s.bootstrap().barrier();
  if (s.rank() == 0) std::printf("errors: ok\n");
  return 0;
}

// ---------------------------------------------------------------------------------------------
// deadlock: a deadlock on purpose, for the launcher to detect. Every rank but the last waits for
// a message that nobody sends; the last waits for them in the layer's barrier.
int deadlock(Session& s) {
  if (static_cast<int>(s.rank()) + 1 == s.size()) {
    s.barrier();
    return 4;  // cannot pass: the others never arrive
  }
  Inbox in(s.layer(), 1, [](Inbox&, Delivery& d) { return Inbox::later(d); });
  drive(s.layer(), __func__, [&] { return in.arrived() == 1; });
  return 3;  // nobody sends
}

int run(int argc, char** argv) {
  auto session = Session::from_launcher();
  // A deadlock shows up as a failure in seconds, not as the job's timeout.
  StallWatchdog watchdog("ML_TEST_STALL_SECONDS", 30.0);
  g_watchdog = &watchdog;
  g_rank = session->rank();
  const std::string what = argc > 1 ? argv[1] : "";
  const auto arg = [&](int i, const char* fallback) {
    return std::string(argc > i ? argv[i] : fallback);
  };
  if (what == "pingpong") return pingpong(*session, arg(2, "boundary"));
  if (what == "mix") return mix(*session, arg(2, "all"));
  if (what == "stress")
    return stress(*session, std::stoull(arg(2, "1")), std::stoi(arg(3, "100")),
                  std::stoul(arg(4, "100000")));
  if (what == "big") return big(*session, std::stoull(arg(2, "1073741824")));
  if (what == "backpressure") return backpressure(*session, std::stoi(arg(2, "100")));
  if (what == "unexpected_rzv") return unexpected_rzv(*session);
  if (what == "stats") return stats(*session);
  if (what == "errors") return errors(*session);
  if (what == "deadlock") return deadlock(*session);
  throw ConfigError(
      "usage: ml_scenarios pingpong|mix|stress|big|backpressure|unexpected_rzv|stats|errors|"
      "deadlock ...");
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // lines reach bglrun's output even if a task dies
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ml_scenarios: rank %u: %s\n", g_rank, e.what());
    return 2;
  }
}
