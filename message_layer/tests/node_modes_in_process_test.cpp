// Node modes inside one test process: a whole emulated job in an anonymous shared
// mapping, one MessageLayer per task, pumped by the test thread. In coprocessor mode every task's
// coprocessor thread really runs (so ThreadSanitizer sees the communication unit writing into
// receive buffers that the main thread then reads); in virtual-node mode the virtual-node protocol
// really copies with process_vm_readv (from this same process).
//   - the coprocessor path is taken exactly when its conditions hold (every mode, per message);
//   - intra-node virtual-node messages of many sizes and alignments, direct copy and streaming.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "bgl/job_runtime/log.hpp"
#include "bgl/message_layer/message_layer.hpp"
#include "bgl/packet_layer/endpoint.hpp"
#include "bgl/packet_layer/machine.hpp"
#include "ml_in_process.hpp"
#include "node_modes_test_util.hpp"

namespace bgl::message_layer {
namespace {

using Clock = std::chrono::steady_clock;

using test::QuietLog;

class Job : public test::InProcessJob {
 public:
  Job(int ntasks, const std::string& shape, const std::string& mode, const Config& config)
      : InProcessJob({.ntasks = ntasks, .shape = shape, .mode = mode}, config) {}

  const torus_emu::Mapping& mapping() const { return machine().mapping(); }
  // Advances every layer until pred() holds; false when nothing moved for `stall` seconds (the
  // coprocessor threads move data that advance() does not report, hence time, not rounds).
  template <class Pred>
  bool pump(Pred&& pred, double stall = 3.0) {
    return run_until(pred, stall);
  }
  bool all_idle() {
    for (Rank r = 0; r < static_cast<Rank>(size()); ++r)
      if (!ml(r).idle()) return false;
    return true;
  }
};

// One message: its send buffer, its destination and its completion.
struct Transfer {
  std::size_t bytes = 0;
  std::uint64_t key = 0;
  test::GuardedBuffer source;
  SendMessage m;
  int sent = 0;
  // receive side
  node_modes::Destination dest;
  bool unexpected = false;
  std::optional<RecvHandle> handle;
  Protocol protocol = Protocol::one_packet;
  int arrivals = 0;
  int completions = 0;
  std::size_t completed_bytes = 0;
};

// The receiver's handler: the test names the next transfer to arrive from each source.
struct Receiver {
  std::deque<Transfer*> expected;  // in arrival order
  static RecvTarget on_arrival(void* ctx, const Arrival& a) {
    auto& self = *static_cast<Receiver*>(ctx);
    if (self.expected.empty()) throw std::logic_error("unexpected arrival");
    Transfer& t = *self.expected.front();
    self.expected.pop_front();
    ++t.arrivals;
    t.protocol = a.protocol;
    t.handle = a.handle;
    if (a.bytes != t.bytes) throw std::logic_error("arrival of the wrong size");
    if (t.unexpected) return RecvTarget::later();
    return target(t);
  }
  static RecvTarget target(Transfer& t) {
    if (t.dest.is_scatter()) return RecvTarget::scatter(t.dest.iov, &on_done, &t);
    return RecvTarget::into(t.dest.buffer.span(), &on_done, &t);
  }
  static void on_done(void* ctx, std::uint32_t, std::size_t bytes) {
    auto& t = *static_cast<Transfer*>(ctx);
    ++t.completions;
    t.completed_bytes = bytes;
  }
};

void post(MessageLayer& ml, Rank dest, Transfer& t, std::size_t send_offset,
          std::optional<Protocol> protocol) {
  t.source = test::GuardedBuffer(t.bytes, send_offset);
  t.source.fill(t.key);
  t.m.dest = dest;
  t.m.handler = 5;
  t.m.data.buffer = t.source.span();
  t.m.protocol = protocol;
  t.m.context = &t;
  t.m.done = [](SendMessage& m) { ++static_cast<Transfer*>(m.context)->sent; };
  ml.post(t.m);
}

// Checks a delivered transfer: once, the right bytes, nothing written outside.
void expect_delivered(const Transfer& t, const std::string& what) {
  EXPECT_EQ(t.arrivals, 1) << what;
  EXPECT_EQ(t.completions, 1) << what;
  EXPECT_EQ(t.sent, 1) << what;
  const std::size_t fits = std::min(t.bytes, t.dest.capacity());
  EXPECT_EQ(t.completed_bytes, fits) << what;
  const auto got = t.dest.contents(fits);
  EXPECT_EQ(test::find_mismatch(got, t.key), test::kNoMismatch) << what;
  EXPECT_TRUE(t.dest.tail_untouched(fits)) << what << ": wrote beyond the message";
  EXPECT_TRUE(t.dest.guards_intact()) << what << ": wrote outside the destination";
}

// ---------------------------------------------------------------------------------------------
// The coprocessor path, per message, in every mode.

struct ModeCase {
  std::string name;
  std::string mode;
  bool unit_enabled = true;  // BGL_ML_COPROCESSOR_RECEIVE
};

using node_modes::PathCase;

void PrintTo(const ModeCase& c, std::ostream* os) {
  *os << c.name;
}

// BUG (seen by ThreadSanitizer in the coprocessor cases here and in MixedTargetsInFlightTogether):
// the communication unit reads CoReceive::bytes after its last fetch_add on `received`
// (engine_coprocessor.cpp:64, `... + data.size() == d->bytes`), i.e. after it has handed the
// message to the main task, which may already have completed it and reused the slot for the next
// coprocessor receive (engine_receive.cpp begin_rendezvous_data writes d.bytes): a data race; a
// stale comparison can skip the doorbell ring (the main task then notices after its sleep
// timeout) or ring for nothing. Fix: read d->bytes into a local before the fetch_add.
class CoprocessorPath : public ::testing::TestWithParam<ModeCase> {};

TEST_P(CoprocessorPath, TakenExactlyWhenItsConditionsHold) {
  const ModeCase& mode = GetParam();
  QuietLog quiet;  // a stalled rendezvous would log every one of its data packets
  Config config;
  config.coprocessor_receive = mode.unit_enabled;
  const bool vn = mode.mode == "vn";
  Job job(vn ? 4 : 2, "2x1x1", mode.mode, config);
  const bool co_mode = mode.mode == "coprocessor";
  for (Rank r = 0; r < (vn ? 4u : 2u); ++r)
    EXPECT_EQ(job.ml(r).coprocessor() != nullptr, co_mode) << "rank " << r;

  // Rank 0 sends to a task on the other node (in virtual-node mode also to the other node's
  // second task and to its own sibling, with rendezvous forced through the virtual FIFO; see
  // RendezvousReachesTheSecondTaskOfANode below).
  std::vector<Rank> receivers = {1};
  if (vn) receivers.insert(receivers.end(), {3, 2});
  std::vector<Receiver> rx(vn ? 4 : 2);
  for (Rank r = 0; r < rx.size(); ++r)
    job.ml(r).register_handler(5, &Receiver::on_arrival, &rx[r]);

  std::uint32_t seq = 0;
  for (const Rank to : receivers) {
    for (const PathCase& c : node_modes::path_cases()) {
      const std::string what = mode.name + " 0->" + std::to_string(to) + " " + c.name;
      Transfer t;
      t.bytes = c.bytes;
      t.key = test::message_key(0, to, seq++);
      t.unexpected = c.unexpected;
      t.dest = c.destination();
      rx[to].expected.push_back(&t);
      MessageLayer& receiver = job.ml(to);
      const Statistics before = receiver.statistics();
      post(job.ml(0), to, t, (seq * 5) % 32, c.protocol);
      if (c.unexpected) {
        ASSERT_TRUE(job.pump([&] { return t.arrivals == 1; })) << what;
        // Let whatever could move move before the destination is known.
        job.pump([] { return false; }, 0.02);
        EXPECT_EQ(t.completions, 0) << what;
        receiver.accept(*t.handle, Receiver::target(t));
      }
      ASSERT_TRUE(job.pump([&] { return t.completions == 1 && t.sent == 1 && job.all_idle(); }))
          << what << ": stalled";
      expect_delivered(t, what);
      const Statistics& after = receiver.statistics();
      const bool rendezvous = t.protocol == Protocol::rendezvous;
      const bool eligible = node_modes::coprocessor_should_receive(
          co_mode, mode.unit_enabled, rendezvous, c.bytes, c.scatter.empty(), t.dest.buffer.data(),
          t.dest.capacity());
      EXPECT_EQ(after.coprocessor_messages - before.coprocessor_messages, eligible ? 1u : 0u)
          << what;
      EXPECT_EQ(after.coherence_operations - before.coherence_operations, eligible ? 1u : 0u)
          << what;
      EXPECT_EQ(after.coprocessor_packets - before.coprocessor_packets,
                eligible ? node_modes::rendezvous_packets(c.bytes) : 0u)
          << what;
      if (c.protocol) {
        EXPECT_EQ(t.protocol, *c.protocol) << what;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, CoprocessorPath,
                         ::testing::Values(ModeCase{"heater", "heater"},
                                           ModeCase{"coprocessor", "coprocessor"},
                                           ModeCase{"coprocessor_unit_off", "coprocessor", false},
                                           ModeCase{"vn", "vn"}),
                         [](const auto& info) { return info.param.name; });

// Many eligible and ineligible rendezvous messages in flight at once, both directions, so that
// the communication unit and the main task receive concurrently.
TEST(CoprocessorPathConcurrent, MixedTargetsInFlightTogether) {
  Job job(2, "2x1x1", "coprocessor", Config{});
  std::vector<Receiver> rx(2);
  for (Rank r = 0; r < 2; ++r)
    job.ml(r).register_handler(5, &Receiver::on_arrival, &rx[r]);
  std::deque<Transfer> transfers;
  std::uint64_t eligible[2] = {0, 0}, eligible_packets[2] = {0, 0};
  for (int i = 0; i < 60; ++i) {
    for (Rank from = 0; from < 2; ++from) {
      const Rank to = 1 - from;
      Transfer& t = transfers.emplace_back();
      t.bytes = 3000 + static_cast<std::size_t>(i) * 1733;
      t.key = test::message_key(from, to, static_cast<std::uint64_t>(i));
      const std::size_t offset = i % 3 == 0 ? 0 : static_cast<std::size_t>(i % 32);
      t.dest = i % 5 == 4
                   ? node_modes::Destination::scatter({t.bytes / 2, t.bytes - t.bytes / 2}, 0)
                   : node_modes::Destination::contiguous(t.bytes, offset);
      if (!t.dest.is_scatter() && offset == 0) {
        ++eligible[to];
        eligible_packets[to] += node_modes::rendezvous_packets(t.bytes);
      }
      rx[to].expected.push_back(&t);
      post(job.ml(from), to, t, static_cast<std::size_t>(i % 7), Protocol::rendezvous);
    }
  }
  ASSERT_TRUE(job.pump([&] {
    for (const auto& t : transfers)
      if (t.completions == 0 || t.sent == 0) return false;
    return job.all_idle();
  })) << "stalled";
  for (std::size_t i = 0; i < transfers.size(); ++i)
    expect_delivered(transfers[i], "transfer " + std::to_string(i));
  for (Rank r = 0; r < 2; ++r) {
    EXPECT_EQ(job.ml(r).statistics().coprocessor_messages, eligible[r]);
    EXPECT_EQ(job.ml(r).statistics().coherence_operations, eligible[r]);
    EXPECT_EQ(job.ml(r).statistics().coprocessor_packets, eligible_packets[r]);
  }
}

// MessageLayer::wait() must return when the coprocessor completes a receive, though no packet
// arrives for the main task. Regression (found at c0d0ff5, fixed in ea220c0):
// packet_layer::Endpoint::wait() re-checked only its reception FIFOs after the coprocessor's
// doorbell ring and slept again, so a task waiting for such a message hung until an unrelated
// packet came.
TEST(CoprocessorWait, WaitReturnsWhenTheCoprocessorCompletesAReceive) {
  Job job(2, "2x1x1", "coprocessor", Config{});
  std::vector<Receiver> rx(2);
  for (Rank r = 0; r < 2; ++r)
    job.ml(r).register_handler(5, &Receiver::on_arrival, &rx[r]);
  job.ml(1).register_handler(
      6, [](void*, const Arrival&) { return RecvTarget::into({}, nullptr, nullptr); }, nullptr);
  Transfer t;
  t.bytes = 64 * 1024;
  t.key = test::message_key(0, 1, 1);
  t.dest = node_modes::Destination::contiguous(t.bytes, 0);  // aligned: the coprocessor receives it
  rx[1].expected.push_back(&t);
  post(job.ml(0), 1, t, 0, Protocol::rendezvous);
  // Rank 1 matches the message and acks it; from then on only rank 0 advances, until every data
  // packet has left it (towards rank 1's coprocessor).
  ASSERT_TRUE(job.pump([&] { return t.arrivals == 1 && job.ep(1).injection_idle(); }));
  const auto until = Clock::now() + std::chrono::seconds(10);
  while (!(t.sent == 1 && job.ep(0).injection_idle()) && Clock::now() < until)
    job.ml(0).advance();
  ASSERT_EQ(t.sent, 1);
  ASSERT_EQ(t.completions, 0);
  // Rank 1's main thread now waits for something to do: the coprocessor's completion.
  std::atomic<bool> returned{false};
  double waited = 0;
  std::thread waiter([&] {
    const auto start = Clock::now();
    job.ml(1).wait();
    waited = std::chrono::duration<double>(Clock::now() - start).count();
    returned = true;
  });
  const auto give_up = Clock::now() + std::chrono::seconds(3);
  while (!returned && Clock::now() < give_up)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const bool returned_by_itself = returned;
  if (!returned) {
    // Unblock it with an unrelated packet.
    SendMessage poke;
    poke.dest = 1;
    poke.handler = 6;
    poke.protocol = Protocol::one_packet;
    job.ml(0).post(poke);
    while (!returned)
      job.ml(0).advance();
  }
  waiter.join();
  EXPECT_TRUE(returned_by_itself)
      << "MessageLayer::wait() slept through the coprocessor's completion of a receive";
  EXPECT_LT(waited, 2.0);
  ASSERT_TRUE(job.pump([&] { return t.completions == 1 && job.all_idle(); }));
  expect_delivered(t, "64 KiB on the coprocessor");
  EXPECT_EQ(job.ml(1).statistics().coprocessor_messages, 1u);
}

// Regression (found by these tests at c0d0ff5, fixed in ea220c0): in virtual-node mode the data of
// a rendezvous to a task with t = 1 went to FIFO group 0 of its node, i.e. to the node's other
// task, which discarded them ("rendezvous data for no matched message"): the receiver acked with
// data group 0 unless the coprocessor took the data (engine_receive.cpp, begin_rendezvous_data)
// and the sender sent to that group (engine_send.cpp, send_rzv_data). It hit rendezvous forced to
// the sibling, the virtual-node protocol's streaming fallback towards t = 1, and every rendezvous
// to a t = 1 task on another node.
TEST(VirtualNodeRendezvous, RendezvousReachesTheSecondTaskOfANode) {
  Job job(4, "2x1x1", "vn", Config{});
  // XYZT: rank 0 = (0,0,0) t0, 1 = (1,0,0) t0, 2 = (0,0,0) t1, 3 = (1,0,0) t1.
  ASSERT_EQ(job.mapping().location(2).t, 1);
  ASSERT_EQ(job.mapping().location(3).t, 1);
  std::vector<Receiver> rx(4);
  for (Rank r = 0; r < 4; ++r)
    job.ml(r).register_handler(5, &Receiver::on_arrival, &rx[r]);
  struct Route {
    Rank from, to;
    std::optional<Protocol> protocol;
  };
  const Route routes[] = {{0, 3, std::nullopt},  // another node's t = 1 (rendezvous by size)
                          {1, 2, std::nullopt},
                          {0, 2, Protocol::rendezvous},  // the sibling, rendezvous forced
                          {3, 0, std::nullopt},          // t = 1 to t = 0 (worked before)
                          {2, 0, Protocol::rendezvous}};
  std::deque<Transfer> transfers;
  for (const Route& r : routes) {
    Transfer& t = transfers.emplace_back();
    t.bytes = 40000;
    t.key = test::message_key(r.from, r.to, 77);
    t.dest = node_modes::Destination::contiguous(t.bytes, 0);
    rx[r.to].expected.push_back(&t);
    post(job.ml(r.from), r.to, t, 0, r.protocol);
  }
  {
    QuietLog quiet;  // the misdirected data are logged packet by packet
    job.pump(
        [&] {
          for (const auto& t : transfers)
            if (t.completions == 0 || t.sent == 0) return false;
          return job.all_idle();
        },
        2.0);
  }
  for (std::size_t i = 0; i < transfers.size(); ++i) {
    const Route& r = routes[i];
    EXPECT_EQ(transfers[i].protocol, Protocol::rendezvous);
    expect_delivered(transfers[i],
                     "rendezvous " + std::to_string(r.from) + " -> " + std::to_string(r.to) +
                         " (t = " + std::to_string(job.mapping().location(r.to).t) + ")");
  }
}

// ---------------------------------------------------------------------------------------------
// Intra-node virtual-node messages.

struct VnCase {
  std::string name;
  bool direct_copy;
  bool cells = true;  // messages up to 16 KiB through the node's shared cells (with direct_copy)
};

void PrintTo(const VnCase& c, std::ostream* os) {
  *os << c.name;
}

class IntraNode : public ::testing::TestWithParam<VnCase> {};

constexpr std::size_t kVnSizes[] = {0, 1, 227, 228, 229, 4095, 4096, 65537, (1u << 20) + 3};

// Every size at every pair of sender and receiver offsets, both directions at once; every other
// message is unexpected (accepted later), every fourth goes into a scatter list.
TEST_P(IntraNode, EverySizeAndAlignmentBothDirections) {
  QuietLog quiet;  // a stalled transfer would log every one of its data packets
  Config config;
  config.vn_direct_copy = GetParam().direct_copy;
  config.vn_cells = GetParam().cells;
  Job job(2, "1x1x1", "vn", config);
  ASSERT_EQ(job.mapping().location(0).node, job.mapping().location(1).node);
  std::vector<Receiver> rx(2);
  for (Rank r = 0; r < 2; ++r)
    job.ml(r).register_handler(5, &Receiver::on_arrival, &rx[r]);
  std::uint64_t vn_messages[2] = {0, 0};
  for (const std::size_t bytes : kVnSizes) {
    std::deque<Transfer> transfers;
    std::uint32_t n = 0;
    for (std::size_t i = 0; i < test::kAlignments.size(); ++i) {
      for (std::size_t j = 0; j < test::kAlignments.size(); ++j) {
        // 1 MiB + 3: seven offset pairs here (node_modes_scenarios sizes runs all 49 under bglrun).
        if (bytes > 65537 && j != (i + 3) % test::kAlignments.size()) continue;
        const std::size_t so = test::kAlignments[i], ro = test::kAlignments[j];
        for (Rank from = 0; from < 2; ++from) {
          const Rank to = 1 - from;
          Transfer& t = transfers.emplace_back();
          t.bytes = bytes;
          t.key = test::message_key(from, to, bytes * 1000 + n);
          t.unexpected = n % 2 == 1;
          if (n % 4 == 3)
            t.dest = node_modes::Destination::scatter({bytes / 3, 1, bytes - bytes / 3}, ro);
          else
            t.dest = node_modes::Destination::contiguous(bytes, ro);
          rx[to].expected.push_back(&t);
          post(job.ml(from), to, t, so, std::nullopt);
          if (bytes > 228) ++vn_messages[to];
          ++n;
        }
      }
    }
    // Accept the unexpected ones as they arrive.
    std::size_t accepted = 0;
    ASSERT_TRUE(job.pump([&] {
      for (auto& t : transfers)
        if (t.unexpected && t.arrivals == 1 && t.handle && t.completions == 0) {
          const RecvHandle h = *t.handle;
          t.handle.reset();
          ++accepted;
          job.ml(t.m.dest).accept(h, Receiver::target(t));
        }
      for (const auto& t : transfers)
        if (t.completions == 0 || t.sent == 0) return false;
      return job.all_idle();
    })) << bytes
        << " bytes: stalled";
    EXPECT_EQ(accepted, transfers.size() / 2);
    for (std::size_t i = 0; i < transfers.size(); ++i) {
      const auto& t = transfers[i];
      const std::string what = std::to_string(bytes) + " bytes, message " + std::to_string(i);
      expect_delivered(t, what);
      // With every shared cell taken, a message within the eager limit goes eager instead.
      const bool may_stream =
          GetParam().direct_copy && GetParam().cells && bytes <= packet_layer::kVirtualCellBytes;
      if (bytes <= 228)
        EXPECT_EQ(t.protocol, Protocol::one_packet) << what;
      else if (may_stream)
        EXPECT_TRUE(t.protocol == Protocol::virtual_node || t.protocol == Protocol::eager) << what;
      else
        EXPECT_EQ(t.protocol, Protocol::virtual_node) << what;
    }
  }
  for (Rank r = 0; r < 2; ++r) {
    const auto& stats = job.ml(r).statistics().protocol;
    const auto& vn = stats[static_cast<std::size_t>(Protocol::virtual_node)];
    const auto& eager = stats[static_cast<std::size_t>(Protocol::eager)];
    EXPECT_EQ(vn.messages_received + eager.messages_received, vn_messages[r]);
    EXPECT_EQ(vn.messages_sent + eager.messages_sent, vn_messages[1 - r]);
    if (GetParam().direct_copy)
      EXPECT_EQ(vn.packets_received, vn.messages_received)
          << "a direct copy receives only the request";
    else
      EXPECT_GT(vn.packets_received, vn_messages[r]) << "the fallback streams the data";
  }
}

// The virtual-node protocol forced for messages that would fit one packet (0 bytes included).
TEST_P(IntraNode, ForcedVirtualNodeProtocolForTinyMessages) {
  QuietLog quiet;  // a stalled transfer would log every one of its data packets
  Config config;
  config.vn_direct_copy = GetParam().direct_copy;
  config.vn_cells = GetParam().cells;
  Job job(2, "1x1x1", "vn", config);
  std::vector<Receiver> rx(2);
  for (Rank r = 0; r < 2; ++r)
    job.ml(r).register_handler(5, &Receiver::on_arrival, &rx[r]);
  std::deque<Transfer> transfers;
  std::uint32_t n = 0;
  for (const std::size_t bytes : {0, 1, 7, 227, 228}) {
    for (const bool unexpected : {false, true}) {
      Transfer& t = transfers.emplace_back();
      t.bytes = bytes;
      t.key = test::message_key(0, 1, n);
      t.unexpected = unexpected;
      t.dest = node_modes::Destination::contiguous(bytes, n % 32);
      rx[1].expected.push_back(&t);
      post(job.ml(0), 1, t, (n * 3) % 32, Protocol::virtual_node);
      ++n;
    }
  }
  ASSERT_TRUE(job.pump([&] {
    for (auto& t : transfers)
      if (t.unexpected && t.arrivals == 1 && t.handle && t.completions == 0) {
        const RecvHandle h = *t.handle;
        t.handle.reset();
        job.ml(1).accept(h, Receiver::target(t));
      }
    for (const auto& t : transfers)
      if (t.completions == 0 || t.sent == 0) return false;
    return job.all_idle();
  }));
  for (std::size_t i = 0; i < transfers.size(); ++i) {
    expect_delivered(transfers[i], "message " + std::to_string(i));
    EXPECT_EQ(transfers[i].protocol, Protocol::virtual_node);
  }
}

// A 16 MiB message each way (the largest size node modes are tested with), misaligned on both
// sides.
TEST_P(IntraNode, SixteenMebibytes) {
  QuietLog quiet;  // a stalled transfer would log every one of its data packets
  Config config;
  config.vn_direct_copy = GetParam().direct_copy;
  config.vn_cells = GetParam().cells;
  Job job(2, "1x1x1", "vn", config);
  std::vector<Receiver> rx(2);
  for (Rank r = 0; r < 2; ++r)
    job.ml(r).register_handler(5, &Receiver::on_arrival, &rx[r]);
  std::deque<Transfer> transfers;
  for (Rank from = 0; from < 2; ++from) {
    Transfer& t = transfers.emplace_back();
    t.bytes = 16u << 20;
    t.key = test::message_key(from, 1 - from, 16);
    t.dest = node_modes::Destination::contiguous(t.bytes, from == 0 ? 31 : 1);
    rx[1 - from].expected.push_back(&t);
    post(job.ml(from), 1 - from, t, from == 0 ? 3 : 16, std::nullopt);
  }
  ASSERT_TRUE(job.pump(
      [&] {
        return transfers[0].completions && transfers[1].completions && transfers[0].sent &&
               transfers[1].sent && job.all_idle();
      },
      30));
  for (const auto& t : transfers) {
    expect_delivered(t, "16 MiB");
    EXPECT_EQ(t.protocol, Protocol::virtual_node);
  }
}

// Scatter targets with many pieces: the direct copy must place every byte (a scatter list is
// valid with any number of pieces elsewhere in the layer).
TEST_P(IntraNode, ScatterTargetsWithManyPieces) {
  QuietLog quiet;  // a stalled transfer would log every one of its data packets
  Config config;
  config.vn_direct_copy = GetParam().direct_copy;
  config.vn_cells = GetParam().cells;
  Job job(2, "1x1x1", "vn", config);
  std::vector<Receiver> rx(2);
  for (Rank r = 0; r < 2; ++r)
    job.ml(r).register_handler(5, &Receiver::on_arrival, &rx[r]);
  std::deque<Transfer> transfers;
  std::uint32_t n = 0;
  for (const std::size_t pieces : {2u, 63u, 64u, 65u, 200u}) {
    Transfer& t = transfers.emplace_back();
    t.bytes = pieces * 1000 + 17;
    t.key = test::message_key(0, 1, 500 + n++);
    std::vector<std::size_t> sizes(pieces, 1000);
    sizes.back() += 17;
    t.dest = node_modes::Destination::scatter(sizes, n);
    rx[1].expected.push_back(&t);
    post(job.ml(0), 1, t, 0, std::nullopt);
  }
  ASSERT_TRUE(job.pump([&] {
    for (const auto& t : transfers)
      if (t.completions == 0 || t.sent == 0) return false;
    return job.all_idle();
  }));
  for (std::size_t i = 0; i < transfers.size(); ++i) {
    // Regression (found by this test at ea220c0): the direct copy placed at most 64 pieces of a
    // scatter list and reported the message complete, every byte past the 64th piece lost
    // (engine_receive.cpp, copy_from_sender).
    expect_delivered(transfers[i],
                     std::to_string(transfers[i].dest.pieces.size()) + " scatter pieces");
  }
}

// A message up to a shared cell's size leaves the sender's buffer when its request is injected:
// the send is done before the receiver has run at all, the sender may overwrite its buffer, and
// the receiver still gets the bytes as posted, with no fin coming back.
TEST(IntraNodeCells, MessagesUpToACellAreDoneAtInjection) {
  for (const std::size_t bytes :
       {std::size_t{229}, std::size_t{4096}, packet_layer::kVirtualCellBytes}) {
    Job job(2, "1x1x1", "vn", Config{});
    Receiver rx;
    job.ml(1).register_handler(5, &Receiver::on_arrival, &rx);
    Transfer t;
    t.bytes = bytes;
    t.key = test::message_key(0, 1, bytes);
    t.dest = node_modes::Destination::contiguous(bytes, 0);
    rx.expected.push_back(&t);
    post(job.ml(0), 1, t, 0, std::nullopt);
    for (int i = 0; i < 100 && t.sent == 0; ++i)
      job.ml(0).advance();  // the receiver does not run
    ASSERT_EQ(t.sent, 1) << bytes << " bytes: not done at injection";
    const std::vector<std::byte> posted(t.source.span().begin(), t.source.span().end());
    std::memset(const_cast<std::byte*>(t.source.span().data()), 0xee, bytes);
    ASSERT_TRUE(job.pump([&] { return t.completions == 1 && job.all_idle(); })) << bytes;
    EXPECT_EQ(t.protocol, Protocol::virtual_node);
    ASSERT_EQ(t.completed_bytes, bytes);
    const auto got = t.dest.contents(bytes);
    EXPECT_TRUE(std::equal(got.begin(), got.end(), posted.begin(), posted.end())) << bytes;
    const auto& vn =
        job.ml(0).statistics().protocol[static_cast<std::size_t>(Protocol::virtual_node)];
    EXPECT_EQ(vn.packets_received, 0u) << "no fin for a message that went through a cell";
  }
}

// Every cell held by unexpected messages: a message within the eager limit streams through the
// virtual FIFO as an eager one, done at once; one beyond it (or beyond a cell) goes by
// process_vm_readv, and its send is done only after the receiver has copied it.
void full_cells(std::size_t eager_limit) {
  Config config;
  config.limits.eager_limit = eager_limit;
  Job job(2, "1x1x1", "vn", config);
  Receiver rx;
  job.ml(1).register_handler(5, &Receiver::on_arrival, &rx);
  constexpr std::size_t kHeld = packet_layer::kVirtualCells + 2;
  std::deque<Transfer> transfers(kHeld + 1);
  for (std::size_t i = 0; i < transfers.size(); ++i) {
    Transfer& t = transfers[i];
    t.bytes = i == kHeld ? packet_layer::kVirtualCellBytes + 1 : 1000;
    t.key = test::message_key(0, 1, i);
    t.dest = node_modes::Destination::contiguous(t.bytes, 0);
    t.unexpected = true;  // held until the test accepts it
    rx.expected.push_back(&t);
    post(job.ml(0), 1, t, 0, std::nullopt);
  }
  // Every message arrives (unexpected); those that found a free cell or went eager are done.
  ASSERT_TRUE(job.pump([&] {
    return std::all_of(transfers.begin(), transfers.end(),
                       [](const Transfer& t) { return t.arrivals == 1; });
  }));
  job.settle();
  const bool eager = transfers.front().bytes <= eager_limit;
  for (std::size_t i = 0; i < transfers.size(); ++i) {
    const bool done_at_once = i < packet_layer::kVirtualCells || (eager && i < kHeld);
    EXPECT_EQ(transfers[i].sent, done_at_once ? 1 : 0) << "message " << i;
  }
  const auto& sent = job.ml(0).statistics().protocol;
  EXPECT_EQ(sent[static_cast<std::size_t>(Protocol::eager)].messages_sent,
            eager ? kHeld - packet_layer::kVirtualCells : 0);
  for (auto& t : transfers)
    job.ml(1).accept(*t.handle, Receiver::target(t));
  ASSERT_TRUE(job.pump([&] {
    return std::all_of(transfers.begin(), transfers.end(),
                       [](const Transfer& t) { return t.completions == 1 && t.sent == 1; }) &&
           job.all_idle();
  }));
  for (std::size_t i = 0; i < transfers.size(); ++i)
    expect_delivered(transfers[i], "message " + std::to_string(i));
}

TEST(IntraNodeCells, FullCellsSendSmallMessagesEagerAndLargerOnesByTheDirectCopy) {
  full_cells(16 * 1024);
}

TEST(IntraNodeCells, FullCellsSendMessagesBeyondTheEagerLimitByTheDirectCopy) {
  full_cells(500);
}

INSTANTIATE_TEST_SUITE_P(Copy, IntraNode,
                         ::testing::Values(VnCase{"direct_copy", true},
                                           VnCase{"process_vm_readv_only", true, false},
                                           VnCase{"streaming_fallback", false}),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace bgl::message_layer
