// Task program for the node-mode multi-process tests (driven by node_modes_launcher_test.cpp
// through bglrun). Every scenario runs in every node mode; what a mode changes is checked, not
// assumed. A failed check prints the rank, file:line and what failed, and exits 1. A progress loop
// that stops moving for NM_STALL_SECONDS (default 20) fails the same way instead of hanging.
//
//   node_modes_scenarios mode NAME          the mode chosen at launch is visible: Session::mode(),
//   the
//                                   coprocessor (present exactly in coprocessor mode, runs a
//                                   unit), tasks per node, the task slot t and the FIFO group
//   node_modes_scenarios copath [R...]      rank 0 sends each receiver R (default: every other
//   rank), one
//                                   message at a time, rendezvous messages into every kind of
//                                   destination (node_modes::path_cases: aligned, misaligned 1..31,
//                                   scatter lists, truncation, zero bytes, unexpected, other
//                                   protocols); per message the receiver checks that
//                                   coprocessor_messages, coherence_operations and
//                                   coprocessor_packets grew exactly when the communication unit's
//                                   conditions hold, and the data
//   node_modes_scenarios pktflood N [adaptive]  packet layer only: every task sends N
//   sequence-numbered
//                                   packets of varying sizes to every other task (the node's other
//                                   task included); per-source order (deterministic routing) or
//                                   each packet exactly once (adaptive), contents, exact counts;
//                                   packets from the node's other task come through the virtual
//                                   FIFO and nothing else does
//   node_modes_scenarios mlflood N MAX      message layer: every task sends N messages (0..MAX
//   bytes, the
//                                   layer's protocol choice, window 8 per destination) to every
//                                   task including itself; non-overtaking, contents (checksum and
//                                   pattern), exact counts,
//                                   unexpected and scatter receives, coprocessor counts by the rule
//   node_modes_scenarios sizes MAXBYTES     pairs (VN: the two tasks of a node; otherwise ranks 2k,
//   2k+1)
//                                   exchange messages of sizes 0, 1, 227, 228, 229, 4095, 4096,
//                                   65537, 1 MiB+3, 16 MiB (up to MAXBYTES) at every pair of sender
//                                   and receiver offsets 0,1,3,7,15,16,31 (16 MiB: 7 pairs), both
//                                   directions at once; odd ones unexpected (accepted later), every
//                                   fourth into a scatter list; protocol, contents, counters
//   node_modes_scenarios sizes MAXBYTES refuse  the same with the kernel refusing process_vm_readv
//                                   between the tasks (each makes itself non-dumpable and drops
//                                   CAP_SYS_PTRACE): the virtual-node protocol must stream
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "bgl/message_layer/session.hpp"
#include "bgl/packet_layer/runtime.hpp"
#include "bgl/torus_emu/error.hpp"
#include "node_modes_test_util.hpp"
#include "scenario_support.hpp"

namespace {

using namespace bgl;
using namespace bgl::message_layer;
using bgl::message_layer::test::g_rank;
using bgl::message_layer::test::StallWatchdog;
using Clock = std::chrono::steady_clock;

StallWatchdog* g_watchdog = nullptr;

// A label that lives as long as the program (the watchdog thread may print it at any time).
const char* label(std::string text) {
  static std::deque<std::string> labels;
  return labels.emplace_back(std::move(text)).c_str();
}

// How a task waits when advance() found nothing to do: MessageLayer::wait() (the default), or,
// with NM_WAIT=poll, a yield (to tell a waiting problem from anything else).
bool g_poll = false;

void idle_wait(MessageLayer& ml) {
  if (g_poll)
    std::this_thread::yield();
  else
    ml.wait();
}

// Advances until pred() holds, under the watchdog.
template <class Pred>
void drive(MessageLayer& ml, const char* what, Pred&& pred) {
  test::drive(ml, *g_watchdog, what, pred, [&ml] { idle_wait(ml); });
}

std::string mode_name(job_runtime::NodeMode m) {
  return std::string(job_runtime::to_string(m));
}

std::optional<Rank> sibling_of(const Session& s, Rank r) {
  if (s.mode() != job_runtime::NodeMode::virtual_node) return std::nullopt;
  const auto loc = s.mapping().location(r);
  return s.mapping().rank_at(loc.node, 1 - loc.t);
}

// The protocol the layer picks for `bytes` bytes with a user header of `header` bytes.
Protocol auto_protocol(Session& s, Rank from, Rank to, std::size_t bytes, std::size_t header = 0) {
  if (bytes <= 228 - header) return Protocol::one_packet;
  if (sibling_of(s, from) == to) return Protocol::virtual_node;
  return bytes <= s.layer().config().limits.eager_limit ? Protocol::eager : Protocol::rendezvous;
}

// Whether a message may arrive with `p`: the protocol the layer picks, or eager for a
// virtual-node message within the eager limit (sent while every shared cell of the node was held).
bool arrives_as(Session& s, Rank from, Rank to, std::size_t bytes, Protocol p,
                std::size_t header = 0) {
  const Protocol chosen = auto_protocol(s, from, to, bytes, header);
  return p == chosen || (chosen == Protocol::virtual_node && p == Protocol::eager &&
                         bytes <= s.layer().config().limits.eager_limit);
}

// ---------------------------------------------------------------------------------------------
// mode

int unit_add(void* arg) {
  auto* v = static_cast<int*>(arg);
  v[2] = v[0] + v[1];
  return 5;
}

int mode_check(Session& s, const std::string& name) {
  const auto expected = job_runtime::parse_node_mode(name, "node_modes_scenarios mode");
  const Rank me = s.rank();
  const auto& map = s.mapping();
  CHECK_MSG(s.mode() == expected, "mode " + mode_name(s.mode()) + ", launched with " + name);
  CHECK(map.tasks_per_node() == job_runtime::tasks_per_node(expected));
  CHECK(s.runtime().machine().config().mode == expected);
  Coprocessor* co = s.layer().coprocessor();
  CHECK((co != nullptr) == (expected == job_runtime::NodeMode::coprocessor));
  if (co) {
    int v[3] = {20, 22, 0};
    CHECK(co->cojoin(co->costart(&unit_add, v)) == 5);
    CHECK(v[2] == 42);
  }
  const auto loc = map.location(me);
  auto& ep = s.runtime().endpoint();
  CHECK(ep.group() == loc.t);
  CHECK(ep.destination_of(me).group == loc.t);
  if (expected == job_runtime::NodeMode::virtual_node) {
    const auto sib = sibling_of(s, me);
    CHECK_MSG(sib.has_value(), "a task in virtual-node mode without a sibling");
    CHECK(*sib != me);
    CHECK(map.location(*sib).node == loc.node);
    CHECK(map.location(*sib).t == 1 - loc.t);
    CHECK(ep.destination_of(*sib).group == 1 - loc.t);
  } else {
    CHECK(loc.t == 0);
  }
  // Half of the node's memory per task in virtual-node mode: the unexpected-data pool too.
  const auto node_pool = Config::from_environment().pool_bytes;
  const auto share = expected == job_runtime::NodeMode::virtual_node ? node_pool / 2 : node_pool;
  CHECK_MSG(s.layer().statistics().pool_bytes_limit == share,
            "pool_bytes_limit " + std::to_string(s.layer().statistics().pool_bytes_limit) +
                ", expected " + std::to_string(share));
  s.bootstrap().barrier();
  std::printf("mode: rank %u: %s, node %u t=%d: ok\n", me, mode_name(s.mode()).c_str(),
              static_cast<unsigned>(loc.node), loc.t);
  return 0;
}

// ---------------------------------------------------------------------------------------------
// copath

constexpr HandlerId kData = 1;
constexpr HandlerId kNext = 2;

struct CaseHeader {
  std::uint32_t index = 0;
};

struct PathReceiver {
  Session* s = nullptr;
  std::vector<node_modes::PathCase> cases;
  std::deque<node_modes::Destination> dests;  // per case index
  std::uint32_t arrived = 0, completed = 0;
  std::optional<RecvHandle> pending;  // unexpected, to be accepted
  Statistics before;
  Protocol protocol = Protocol::one_packet;
  std::size_t completed_bytes = 0;
  bool done = false;

  static RecvTarget target(PathReceiver& self, std::uint32_t i) {
    node_modes::Destination& d = self.dests[i];
    if (d.is_scatter()) return RecvTarget::scatter(d.iov, &on_done, &self);
    return RecvTarget::into(d.buffer.span(), &on_done, &self);
  }
  static RecvTarget on_arrival(void* ctx, const Arrival& a) {
    auto& self = *static_cast<PathReceiver*>(ctx);
    CaseHeader h;
    CHECK(a.header.size() == sizeof h);
    std::memcpy(&h, a.header.data(), sizeof h);
    CHECK_MSG(h.index == self.arrived, "case " + std::to_string(h.index) + " arrived as number " +
                                           std::to_string(self.arrived));
    const auto& c = self.cases.at(h.index);
    CHECK_MSG(a.bytes == c.bytes, c.name);
    ++self.arrived;
    self.before = self.s->layer().statistics();
    self.protocol = a.protocol;
    self.done = false;
    if (c.unexpected) {
      self.pending = a.handle;
      return RecvTarget::later();
    }
    return target(self, h.index);
  }
  static void on_done(void* ctx, std::uint32_t, std::size_t bytes) {
    auto& self = *static_cast<PathReceiver*>(ctx);
    self.completed_bytes = bytes;
    self.done = true;
  }
};

struct Flag {
  static void set(SendMessage& m) { *static_cast<bool*>(m.context) = true; }
};

RecvTarget count_next(void* ctx, const Arrival&) {
  ++*static_cast<std::uint32_t*>(ctx);
  return RecvTarget::into({}, nullptr, nullptr);
}

void send_next(MessageLayer& ml, Rank to) {
  SendMessage m;
  m.dest = to;
  m.handler = kNext;
  m.protocol = Protocol::one_packet;
  bool sent = false;
  m.context = &sent;
  m.done = &Flag::set;
  ml.post(m);
  drive(ml, "send_next", [&] { return sent; });
}

int copath(Session& s, std::vector<Rank> receivers) {
  MessageLayer& ml = s.layer();
  const Rank me = s.rank();
  if (receivers.empty())
    for (Rank r = 1; r < static_cast<Rank>(s.size()); ++r)
      receivers.push_back(r);
  const bool co_mode = s.mode() == job_runtime::NodeMode::coprocessor;
  const bool unit = ml.config().coprocessor_receive;
  const auto cases = node_modes::path_cases();

  std::uint32_t nexts = 0;
  ml.register_handler(kNext, &count_next, &nexts);
  PathReceiver rx;
  rx.s = &s;
  rx.cases = cases;
  ml.register_handler(kData, &PathReceiver::on_arrival, &rx);

  for (const Rank to : receivers) {
    CHECK(to < static_cast<Rank>(s.size()) && to != 0);
    if (me == 0) {
      nexts = 0;
      for (std::uint32_t i = 0; i < cases.size(); ++i) {
        const auto& c = cases[i];
        test::GuardedBuffer data(c.bytes, (i * 5) % 32);
        data.fill(test::message_key(0, to, i));
        CaseHeader h{i};
        SendMessage m;
        m.dest = to;
        m.handler = kData;
        m.header = std::as_bytes(std::span(&h, 1));
        m.data.buffer = data.span();
        m.protocol = c.protocol;
        bool sent = false;
        m.context = &sent;
        m.done = &Flag::set;
        ml.post(m);
        // The next message only after the receiver has checked this one.
        drive(ml, "copath sender", [&] { return sent && nexts == i + 1; });
      }
    } else if (me == to) {
      std::uint64_t eligible = 0, eligible_packets = 0;
      for (const auto& c : cases)
        rx.dests.push_back(c.destination());
      for (std::uint32_t i = 0; i < cases.size(); ++i) {
        const auto& c = cases[i];
        const char* where = label("copath case " + c.name);
        drive(ml, where, [&] { return rx.arrived == i + 1; });
        if (rx.pending) {
          const RecvHandle h = *rx.pending;
          rx.pending.reset();
          // Leave the message waiting a moment before its destination is known.
          for (int k = 0; k < 100; ++k)
            ml.advance();
          CHECK_MSG(!rx.done, c.name + ": completed before accept()");
          ml.accept(h, PathReceiver::target(rx, i));
        }
        drive(ml, where, [&] { return rx.done; });
        const Statistics& after = ml.statistics();
        const node_modes::Destination& d = rx.dests[i];
        const bool rendezvous = rx.protocol == Protocol::rendezvous;
        const bool expect = node_modes::coprocessor_should_receive(
            co_mode, unit, rendezvous, c.bytes, !d.is_scatter(), d.buffer.data(), d.capacity());
        const std::string what = mode_name(s.mode()) + (unit ? "" : " (unit off)") + " 0->" +
                                 std::to_string(to) + " " + c.name;
        if (c.protocol) CHECK_MSG(rx.protocol == *c.protocol, what);
        CHECK_MSG(after.coprocessor_messages - rx.before.coprocessor_messages == (expect ? 1u : 0u),
                  what + ": coprocessor_messages grew by " +
                      std::to_string(after.coprocessor_messages - rx.before.coprocessor_messages));
        CHECK_MSG(after.coherence_operations - rx.before.coherence_operations == (expect ? 1u : 0u),
                  what + ": coherence_operations grew by " +
                      std::to_string(after.coherence_operations - rx.before.coherence_operations));
        const std::uint64_t packets = expect ? node_modes::rendezvous_packets(c.bytes) : 0;
        CHECK_MSG(after.coprocessor_packets - rx.before.coprocessor_packets == packets,
                  what + ": coprocessor_packets grew by " +
                      std::to_string(after.coprocessor_packets - rx.before.coprocessor_packets));
        const std::size_t fits = std::min(c.bytes, d.capacity());
        CHECK_MSG(rx.completed_bytes == fits,
                  what + ": completion reports " + std::to_string(rx.completed_bytes));
        const auto bad = test::find_mismatch(d.contents(fits), test::message_key(0, to, i));
        CHECK_MSG(bad == test::kNoMismatch, what + ": byte " + std::to_string(bad) + " differs");
        CHECK_MSG(d.tail_untouched(fits), what + ": wrote beyond the message");
        CHECK_MSG(d.guards_intact(), what + ": wrote outside the destination");
        eligible += expect;
        eligible_packets += packets;
        rx.dests[i] = node_modes::Destination{};  // free it
        send_next(ml, 0);
      }
      drive(ml, "copath idle", [&] { return ml.idle(); });
      std::printf(
          "copath: rank %u (%s%s): %zu messages, %llu received by the coprocessor (%llu packets, "
          "%llu coherence operations in all)\n",
          me, mode_name(s.mode()).c_str(), unit ? "" : ", unit off", cases.size(),
          static_cast<unsigned long long>(eligible),
          static_cast<unsigned long long>(eligible_packets),
          static_cast<unsigned long long>(ml.statistics().coherence_operations));
      CHECK(ml.statistics().coprocessor_messages == eligible);
      CHECK(ml.statistics().coherence_operations == eligible);
      CHECK(ml.statistics().coprocessor_packets == eligible_packets);
      rx.arrived = 0;
      rx.dests.clear();
    }
    drive(ml, "copath idle", [&] { return ml.idle(); });
    s.bootstrap().barrier();
  }
  if (me == 0) std::printf("copath: ok\n");
  return 0;
}

// ---------------------------------------------------------------------------------------------
// pktflood

std::size_t flood_payload_size(std::uint32_t source, std::uint64_t seq) {
  return static_cast<std::size_t>((seq * 37 + source * 11) % (packet_layer::kMaxPayloadBytes + 1));
}
std::byte flood_byte(std::uint32_t source, std::uint64_t seq, std::size_t i) {
  return static_cast<std::byte>((source * 131u + seq * 7u + i * 13u) & 0xff);
}

int pktflood(std::uint64_t n, bool adaptive) {
  auto rt = packet_layer::Runtime::from_environment();
  auto& ep = rt.endpoint();
  const Rank me = rt.rank();
  const int size = rt.size();
  const auto& machine = rt.machine();
  std::optional<Rank> sibling;
  if (machine.config().mode == job_runtime::NodeMode::virtual_node) {
    const auto loc = machine.mapping().location(me);
    sibling = machine.mapping().rank_at(loc.node, 1 - loc.t);
    CHECK(sibling.has_value());
  }
  std::vector<Rank> dests;
  for (int k = 1; k < size; ++k)
    dests.push_back(static_cast<Rank>((me + static_cast<Rank>(k)) % static_cast<Rank>(size)));
  std::vector<packet_layer::PacketSpec> specs;
  for (const Rank d : dests)
    specs.push_back({.dest = ep.destination_of(d),
                     .dispatch = 42,
                     .routing = adaptive ? packet_layer::Routing::adaptive
                                         : packet_layer::Routing::deterministic});
  std::vector<std::uint64_t> sent(dests.size(), 0), next(static_cast<std::size_t>(size), 0);
  // Adaptive routing may reorder: each packet must arrive exactly once.
  std::vector<std::vector<bool>> seen(adaptive ? static_cast<std::size_t>(size) : 0);
  for (auto& v : seen)
    v.assign(n, false);
  const std::uint64_t expected = n * dests.size();
  std::uint64_t received = 0, through_virtual = 0;
  std::byte out[packet_layer::kMaxPayloadBytes], in[packet_layer::kMaxPayloadBytes];

  const auto take = [&](packet_layer::FifoRef f) {
    const packet_layer::PacketHeader h = ep.peek(f);
    const Rank src = h.source_rank();
    CHECK(src < static_cast<Rank>(size) && src != me);
    CHECK(h.dispatch == 42);
    std::uint64_t seq = next[src];
    if (adaptive) {
      seq = h.word;
      CHECK_MSG(seq < n && !seen[src][seq], "from rank " + std::to_string(src) + ": packet " +
                                                std::to_string(seq) + " twice or out of range");
      seen[src][seq] = true;
    } else {
      CHECK_MSG(h.word == static_cast<std::uint32_t>(seq),
                "from rank " + std::to_string(src) + ": packet " + std::to_string(h.word) +
                    ", expected " + std::to_string(seq) + " (lost, duplicated or reordered)");
    }
    CHECK_MSG(next[src] < n,
              "more than " + std::to_string(n) + " packets from rank " + std::to_string(src));
    const bool virt = f.index == packet_layer::kVirtualFifo;
    CHECK_MSG(virt == (sibling && src == *sibling), "packet from rank " + std::to_string(src) +
                                                        " in reception FIFO " +
                                                        std::to_string(f.index));
    const std::size_t bytes = h.payload_bytes;
    CHECK(bytes == flood_payload_size(src, seq));
    ep.receive(f, in);
    for (std::size_t i = 0; i < bytes; ++i)
      CHECK_MSG(in[i] == flood_byte(src, seq, i), "packet " + std::to_string(seq) + " from rank " +
                                                      std::to_string(src) + ": byte " +
                                                      std::to_string(i) + " differs");
    ++next[src];
    ++received;
    through_virtual += virt;
  };

  rt.barrier();
  const auto start = Clock::now();
  g_watchdog->arm("pktflood");
  std::uint64_t total_sent = 0;
  while (total_sent < expected || received < expected) {
    bool any = false;
    for (std::size_t d = 0; d < dests.size(); ++d) {
      for (int burst = 0; burst < 16 && sent[d] < n; ++burst) {
        const std::uint64_t seq = sent[d];
        const std::size_t bytes = flood_payload_size(me, seq);
        for (std::size_t i = 0; i < bytes; ++i)
          out[i] = flood_byte(me, seq, i);
        specs[d].word = static_cast<std::uint32_t>(seq);
        // One injection FIFO per destination keeps each destination's packets in order.
        if (ep.inject(static_cast<int>(dests[d] % packet_layer::kInjectionFifos), specs[d],
                      {out, bytes}) != packet_layer::InjectStatus::ok)
          break;
        ++sent[d];
        ++total_sent;
        any = true;
      }
    }
    for (int burst = 0; burst < 64; ++burst) {
      const auto f = ep.poll();
      if (!f) break;
      take(*f);
      any = true;
    }
    if (any)
      g_watchdog->pet();
    else
      ep.wait();
  }
  while (!ep.advance()) {
    if (const auto f = ep.poll()) take(*f);  // fails: nothing more may come
    ep.wait();
  }
  g_watchdog->disarm();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  rt.barrier();  // every task has delivered everything it injected
  CHECK_MSG(!ep.poll().has_value(), "a packet beyond the expected ones arrived");
  for (int src = 0; src < size; ++src)
    CHECK(next[static_cast<std::size_t>(src)] == (static_cast<Rank>(src) == me ? 0 : n));
  const auto& counters = ep.counters();
  CHECK(counters.packets_injected == expected);
  CHECK(counters.packets_received == expected);
  CHECK_MSG(counters.virtual_packets == (sibling ? n : 0),
            "virtual_packets " + std::to_string(counters.virtual_packets));
  CHECK(through_virtual == (sibling ? n : 0));
  std::printf(
      "pktflood: rank %u (%s): %llu packets from each of %zu tasks %s, %llu through the "
      "virtual FIFO, %.2f s\n",
      me, mode_name(machine.config().mode).c_str(), static_cast<unsigned long long>(n),
      dests.size(), adaptive ? "each exactly once (adaptive)" : "in order",
      static_cast<unsigned long long>(through_virtual), seconds);
  rt.barrier();
  return 0;
}

// ---------------------------------------------------------------------------------------------
// mlflood

struct FloodHeader {
  std::uint32_t seq = 0;
  std::uint32_t bytes = 0;
  std::uint64_t checksum = 0;  // the sender's checksum of the data
};
constexpr std::size_t kFloodOnePacket = 228 - sizeof(FloodHeader);  // with this header

std::size_t flood_bytes(Rank from, Rank to, std::uint32_t seq, std::size_t max) {
  switch (seq % 11) {
    case 0:
      return 0;
    case 1:
      return std::min(kFloodOnePacket, max);
    case 2:
      return std::min(kFloodOnePacket + 1, max);
    default:
      return static_cast<std::size_t>(test::mix64(test::message_key(from, to, seq)) % (max + 1));
  }
}

struct FloodIn {
  std::uint32_t seq = 0;
  std::size_t bytes = 0;
  Protocol protocol = Protocol::one_packet;
  std::optional<RecvHandle> pending;
  node_modes::Destination dest;
  int completions = 0;
  std::size_t completed_bytes = 0;
  bool eligible = false;  // the coprocessor should receive it
  std::uint64_t checksum = 0;
};

struct FloodReceiver {
  Session* s = nullptr;
  std::deque<std::deque<FloodIn>> from;  // per source, in arrival order
  std::vector<std::uint32_t> arrived;
  std::uint64_t total_arrived = 0, total_completed = 0;
  std::deque<std::pair<Rank, FloodIn*>> to_accept;

  static RecvTarget target(FloodIn& in) {
    if (in.dest.is_scatter()) return RecvTarget::scatter(in.dest.iov, &on_done, &in);
    return RecvTarget::into(in.dest.buffer.span(), &on_done, &in);
  }
  static RecvTarget on_arrival(void* ctx, const Arrival& a) {
    auto& self = *static_cast<FloodReceiver*>(ctx);
    FloodHeader h;
    CHECK(a.header.size() == sizeof h);
    std::memcpy(&h, a.header.data(), sizeof h);
    auto& expect = self.arrived[a.source];
    CHECK_MSG(h.seq == expect, "from rank " + std::to_string(a.source) + ": message " +
                                   std::to_string(h.seq) + " arrived before " +
                                   std::to_string(expect) + " (overtaking, loss or duplicate)");
    CHECK(a.bytes == h.bytes);
    ++expect;
    const std::uint64_t sum = h.checksum;
    ++self.total_arrived;
    FloodIn& in = self.from[a.source].emplace_back();
    in.seq = h.seq;
    in.bytes = a.bytes;
    in.protocol = a.protocol;
    in.checksum = sum;
    // Every other message into a 32-byte aligned buffer (eligible for the coprocessor when it is
    // a contiguous rendezvous), the others at offsets 1..31.
    const std::size_t offset = h.seq % 2 == 0 ? 0 : h.seq % 32;
    if (h.seq % 5 == 4)
      in.dest = node_modes::Destination::scatter({a.bytes / 2, a.bytes - a.bytes / 2}, offset);
    else
      in.dest = node_modes::Destination::contiguous(a.bytes, offset);
    const auto& cfg = self.s->layer().config();
    in.eligible = node_modes::coprocessor_should_receive(
        self.s->mode() == job_runtime::NodeMode::coprocessor, cfg.coprocessor_receive,
        a.protocol == Protocol::rendezvous, a.bytes, !in.dest.is_scatter(), in.dest.buffer.data(),
        in.dest.capacity());
    if (h.seq % 3 == 2) {
      in.pending = a.handle;
      self.to_accept.emplace_back(a.source, &in);
      return RecvTarget::later();
    }
    return target(in);
  }
  static void on_done(void* ctx, std::uint32_t, std::size_t bytes) {
    auto& in = *static_cast<FloodIn*>(ctx);
    ++in.completions;
    in.completed_bytes = bytes;
  }
};

int mlflood(Session& s, std::uint32_t n, std::size_t max) {
  MessageLayer& ml = s.layer();
  const Rank me = s.rank();
  const int size = s.size();
  constexpr std::uint32_t kWindow = 8;
  FloodReceiver rx;
  rx.s = &s;
  rx.from.resize(static_cast<std::size_t>(size));
  rx.arrived.assign(static_cast<std::size_t>(size), 0);
  ml.register_handler(kData, &FloodReceiver::on_arrival, &rx);

  struct Out {
    SendMessage m;
    FloodHeader h;
    test::GuardedBuffer data;
    bool done = false;
  };
  struct Flow {
    Rank to;
    std::deque<Out> window;
    std::uint32_t posted = 0, completed = 0;
  };
  std::deque<Flow> flows;
  for (int k = 0; k < size; ++k)  // every task, oneself included
    flows.emplace_back().to = (me + static_cast<Rank>(k)) % static_cast<Rank>(size);
  const auto post_more = [&] {
    for (Flow& f : flows) {
      while (!f.window.empty() && f.window.front().done) {
        f.window.pop_front();
        ++f.completed;
      }
      while (f.posted < n && f.window.size() < kWindow) {
        Out& o = f.window.emplace_back();
        const std::uint32_t seq = f.posted++;
        const std::size_t bytes = flood_bytes(me, f.to, seq, max);
        o.data = test::GuardedBuffer(bytes, seq % 7);
        o.data.fill(test::message_key(me, f.to, seq));
        o.h = {seq, static_cast<std::uint32_t>(bytes), test::checksum(o.data.span())};
        o.m.dest = f.to;
        o.m.handler = kData;
        o.m.header = std::as_bytes(std::span(&o.h, 1));
        o.m.data.buffer = o.data.span();
        o.m.context = &o.done;
        o.m.done = &Flag::set;
        ml.post(o.m);
      }
    }
  };
  std::uint64_t eligible = 0;
  std::map<Protocol, std::uint64_t> protocols;
  const auto check_completed = [&] {
    for (int src = 0; src < size; ++src) {
      auto& q = rx.from[static_cast<std::size_t>(src)];
      while (!q.empty() && q.front().completions > 0) {
        FloodIn& in = q.front();
        const std::string what = "message " + std::to_string(in.seq) + " from rank " +
                                 std::to_string(src) + " (" + std::to_string(in.bytes) +
                                 " bytes, " + std::string(to_string(in.protocol)) + ")";
        CHECK_MSG(in.completions == 1, what);
        CHECK_MSG(in.completed_bytes == in.bytes, what);
        CHECK_MSG(
            arrives_as(s, static_cast<Rank>(src), me, in.bytes, in.protocol, sizeof(FloodHeader)),
            what);
        const auto got = in.dest.contents(in.bytes);
        CHECK_MSG(test::checksum(got) == in.checksum, what + ": checksum differs");
        const auto bad =
            test::find_mismatch(got, test::message_key(static_cast<Rank>(src), me, in.seq));
        CHECK_MSG(bad == test::kNoMismatch, what + ": byte " + std::to_string(bad) + " differs");
        CHECK_MSG(in.dest.guards_intact(), what + ": wrote outside its destination");
        eligible += in.eligible;
        ++protocols[in.protocol];
        ++rx.total_completed;
        q.pop_front();
      }
    }
  };

  s.bootstrap().barrier();
  const auto start = Clock::now();
  const std::uint64_t expected = std::uint64_t{n} * static_cast<std::uint64_t>(size);
  g_watchdog->arm("mlflood");
  for (;;) {
    post_more();
    // Accept unexpected messages a little later than they arrived.
    while (rx.to_accept.size() > 2) {
      auto [src, in] = rx.to_accept.front();
      rx.to_accept.pop_front();
      const RecvHandle h = *in->pending;
      in->pending.reset();
      ml.accept(h, FloodReceiver::target(*in));
    }
    if (rx.total_arrived == expected)
      while (!rx.to_accept.empty()) {
        auto [src, in] = rx.to_accept.front();
        rx.to_accept.pop_front();
        const RecvHandle h = *in->pending;
        in->pending.reset();
        ml.accept(h, FloodReceiver::target(*in));
      }
    check_completed();
    bool sends_done = true;
    for (const Flow& f : flows)
      sends_done &= f.posted == n && f.window.empty();
    if (sends_done && rx.total_completed == expected && ml.idle()) break;
    if (ml.advance())
      g_watchdog->pet();
    else
      idle_wait(ml);
  }
  g_watchdog->disarm();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  s.bootstrap().barrier();
  ml.advance();
  CHECK(rx.total_arrived == expected);  // nothing beyond the expected messages
  const auto& st = ml.statistics();
  CHECK_MSG(st.coprocessor_messages == eligible, "coprocessor_messages " +
                                                     std::to_string(st.coprocessor_messages) +
                                                     ", expected " + std::to_string(eligible));
  CHECK(st.coherence_operations == eligible);
  const auto virt = s.runtime().endpoint().counters().virtual_packets;
  CHECK_MSG((virt > 0) == (sibling_of(s, me).has_value() && n > 0),
            "virtual_packets " + std::to_string(virt));
  std::string mix;
  for (const auto& [p, count] : protocols)
    mix += " " + std::string(to_string(p)) + "=" + std::to_string(count);
  std::printf(
      "mlflood: rank %u (%s): %llu messages from %d tasks in order:%s; %llu on the coprocessor; "
      "%llu virtual-FIFO packets; %.2f s\n",
      me, mode_name(s.mode()).c_str(), static_cast<unsigned long long>(expected), size, mix.c_str(),
      static_cast<unsigned long long>(eligible), static_cast<unsigned long long>(virt), seconds);
  s.bootstrap().barrier();
  return 0;
}

// ---------------------------------------------------------------------------------------------
// sizes

struct SizeItem {
  std::size_t bytes, so, ro;
  bool unexpected, scatter;
};

std::vector<SizeItem> size_plan(std::size_t max_bytes) {
  const std::size_t sizes[] = {0, 1, 227, 228, 229, 4095, 4096, 65537, (1u << 20) + 3, 16u << 20};
  std::vector<SizeItem> plan;
  for (const std::size_t b : sizes) {
    if (b > max_bytes) continue;
    std::size_t n = 0;
    for (std::size_t i = 0; i < test::kAlignments.size(); ++i)
      for (std::size_t j = 0; j < test::kAlignments.size(); ++j) {
        // 16 MiB: seven pairs (every offset once on each side), not all 49.
        if (b == (16u << 20) && j != (i + 3) % test::kAlignments.size()) continue;
        plan.push_back({b, test::kAlignments[i], test::kAlignments[j], n % 2 == 1, n % 4 == 3});
        ++n;
      }
  }
  return plan;
}

// Makes the kernel refuse process_vm_readv of this task's memory by the node's other task (as
// under Yama or a hardened kernel): this task becomes non-dumpable and gives up CAP_SYS_PTRACE
// (which would override that) from its effective set, as its sibling does.
void refuse_memory_reads() {
  CHECK(::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0);
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2]{};
  CHECK(::syscall(SYS_capget, &header, data) == 0);
  data[CAP_SYS_PTRACE / 32].effective &= ~(1u << (CAP_SYS_PTRACE % 32));
  CHECK(::syscall(SYS_capset, &header, data) == 0);
}

int sizes(Session& s, std::size_t max_bytes, bool refuse) {
  MessageLayer& ml = s.layer();
  const Rank me = s.rank();
  const auto sib = sibling_of(s, me);
  Rank partner = 0;
  if (sib) {
    partner = *sib;
  } else {
    CHECK_MSG(s.size() % 2 == 0, "sizes needs an even number of tasks outside VN mode");
    partner = me ^ 1u;
  }
  const auto plan = size_plan(max_bytes);
  const bool co_mode = s.mode() == job_runtime::NodeMode::coprocessor;

  struct In {
    std::optional<RecvHandle> pending;
    node_modes::Destination dest;
    Protocol protocol = Protocol::one_packet;
    int completions = 0;
    std::size_t completed_bytes = 0;
  };
  struct Rx {
    const std::vector<SizeItem>* plan;
    std::deque<In> got;
    static RecvTarget target(In& in) {
      if (in.dest.is_scatter()) return RecvTarget::scatter(in.dest.iov, &on_done, &in);
      return RecvTarget::into(in.dest.buffer.span(), &on_done, &in);
    }
    static RecvTarget on_arrival(void* ctx, const Arrival& a) {
      auto& self = *static_cast<Rx*>(ctx);
      CHECK(self.got.size() < self.plan->size());
      const SizeItem& it = (*self.plan)[self.got.size()];  // non-overtaking: the plan's order
      CHECK_MSG(a.bytes == it.bytes, "message " + std::to_string(self.got.size()) + " has " +
                                         std::to_string(a.bytes) + " bytes, expected " +
                                         std::to_string(it.bytes));
      In& in = self.got.emplace_back();
      in.protocol = a.protocol;
      if (it.scatter)
        in.dest = node_modes::Destination::scatter(
            {it.bytes / 3, it.bytes - it.bytes / 3 - it.bytes / 4, it.bytes / 4}, it.ro);
      else
        in.dest = node_modes::Destination::contiguous(it.bytes, it.ro);
      if (it.unexpected) {
        in.pending = a.handle;
        return RecvTarget::later();
      }
      return target(in);
    }
    static void on_done(void* ctx, std::uint32_t, std::size_t bytes) {
      auto& in = *static_cast<In*>(ctx);
      ++in.completions;
      in.completed_bytes = bytes;
    }
  } rx{&plan, {}};
  ml.register_handler(kData, &Rx::on_arrival, &rx);

  struct Out {
    SendMessage m;
    test::GuardedBuffer data;
    bool done = false;
  };
  std::deque<Out> window;
  std::size_t posted = 0, sent = 0, accepted = 0, checked = 0;
  std::uint64_t vn_expected = 0, co_expected = 0;
  const auto window_for = [&](std::size_t bytes) { return bytes >= (1u << 20) ? 2u : 6u; };

  if (refuse) refuse_memory_reads();
  s.bootstrap().barrier();
  const auto start = Clock::now();
  g_watchdog->arm("sizes");
  while (sent < plan.size() || checked < plan.size() || !ml.idle()) {
    bool any = false;
    while (!window.empty() && window.front().done) {
      window.pop_front();
      ++sent;
      any = true;
    }
    while (posted < plan.size() && window.size() < window_for(plan[posted].bytes)) {
      const SizeItem& it = plan[posted];
      Out& o = window.emplace_back();
      o.data = test::GuardedBuffer(it.bytes, it.so);
      o.data.fill(test::message_key(me, partner, posted));
      o.m.dest = partner;
      o.m.handler = kData;
      o.m.data.buffer = o.data.span();
      o.m.context = &o.done;
      o.m.done = &Flag::set;
      ml.post(o.m);
      ++posted;
      any = true;
    }
    for (; accepted < rx.got.size(); ++accepted) {
      In& in = rx.got[accepted];
      if (in.pending) {
        const RecvHandle h = *in.pending;
        in.pending.reset();
        ml.accept(h, Rx::target(in));
      }
      any = true;
    }
    for (; checked < rx.got.size() && rx.got[checked].completions > 0; ++checked) {
      In& in = rx.got[checked];
      const SizeItem& it = plan[checked];
      const std::string what =
          "message " + std::to_string(checked) + " (" + std::to_string(it.bytes) +
          " bytes, offsets " + std::to_string(it.so) + "/" + std::to_string(it.ro) +
          (it.unexpected ? ", unexpected" : "") + (it.scatter ? ", scatter" : "") + ", " +
          std::string(to_string(in.protocol)) + ")";
      CHECK_MSG(in.completions == 1, what);
      CHECK_MSG(in.completed_bytes == it.bytes, what);
      CHECK_MSG(arrives_as(s, partner, me, it.bytes, in.protocol), what);
      const auto got = in.dest.contents(it.bytes);
      // Every byte against the sender's pattern (stronger than comparing checksums).
      const auto bad = test::find_mismatch(got, test::message_key(partner, me, checked));
      CHECK_MSG(bad == test::kNoMismatch, what + ": byte " + std::to_string(bad) + " differs");
      CHECK_MSG(in.dest.guards_intact(), what + ": wrote outside its destination");
      vn_expected += in.protocol == Protocol::virtual_node;
      co_expected += node_modes::coprocessor_should_receive(
          co_mode, ml.config().coprocessor_receive, in.protocol == Protocol::rendezvous, it.bytes,
          !in.dest.is_scatter(), in.dest.buffer.data(), in.dest.capacity());
      in.dest = node_modes::Destination{};
      any = true;
    }
    if (any || ml.advance())
      g_watchdog->pet();
    else
      idle_wait(ml);
  }
  g_watchdog->disarm();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  const auto& st = ml.statistics();
  const auto& vn = st.protocol[static_cast<std::size_t>(Protocol::virtual_node)];
  CHECK(vn.messages_received == vn_expected);
  const bool streamed = vn.packets_received > vn_expected;
  if (sib) {
    CHECK_MSG(vn_expected > 0, "no virtual-node message between the tasks of a node");
    if (ml.config().vn_direct_copy && !refuse)
      CHECK_MSG(!streamed, "direct copy: only the requests travel as packets, got " +
                               std::to_string(vn.packets_received) + " packets");
    else
      CHECK_MSG(streamed, "the fallback streams the data as packets");
  } else {
    CHECK(vn_expected == 0);
  }
  CHECK_MSG(st.coprocessor_messages == co_expected,
            "coprocessor_messages " + std::to_string(st.coprocessor_messages) + ", expected " +
                std::to_string(co_expected));
  std::printf(
      "sizes: rank %u (%s) <-> rank %u: %zu messages each way, %llu virtual-node (%s), %llu on the "
      "coprocessor, %.2f s\n",
      me, mode_name(s.mode()).c_str(), partner, plan.size(),
      static_cast<unsigned long long>(vn_expected), streamed ? "streamed" : "direct copy",
      static_cast<unsigned long long>(co_expected), seconds);
  s.bootstrap().barrier();
  return 0;
}

std::uint64_t number(int argc, char** argv, int i, std::uint64_t fallback) {
  return i < argc ? std::strtoull(argv[i], nullptr, 10) : fallback;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: node_modes_scenarios mode|copath|pktflood|mlflood|sizes ...\n");
    return 2;
  }
  const std::string what = argv[1];
  if (const char* r = std::getenv("BGL_RANK")) g_rank = static_cast<unsigned>(std::atoi(r));
  if (const char* w = std::getenv("NM_WAIT")) g_poll = std::string(w) == "poll";
  StallWatchdog watchdog("NM_STALL_SECONDS", 20.0);
  g_watchdog = &watchdog;
  try {
    if (what == "pktflood")
      return pktflood(number(argc, argv, 2, 10000), argc > 3 && std::string(argv[3]) == "adaptive");
    auto session = Session::from_launcher();
    g_rank = session->rank();
    if (what == "mode") return mode_check(*session, argc > 2 ? argv[2] : "heater");
    if (what == "copath") {
      std::vector<Rank> receivers;
      for (int i = 2; i < argc; ++i)
        receivers.push_back(static_cast<Rank>(std::atoi(argv[i])));
      return copath(*session, receivers);
    }
    if (what == "mlflood")
      return mlflood(*session, static_cast<std::uint32_t>(number(argc, argv, 2, 200)),
                     number(argc, argv, 3, 20000));
    if (what == "sizes")
      return sizes(*session, number(argc, argv, 2, 16u << 20),
                   argc > 3 && std::string(argv[3]) == "refuse");
    std::fprintf(stderr, "node_modes_scenarios: unknown scenario '%s'\n", what.c_str());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "CHECK FAILED rank %u: exception: %s\n", g_rank, e.what());
    return 1;
  }
}
