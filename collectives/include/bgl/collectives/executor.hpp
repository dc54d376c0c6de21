#pragma once
// Runs one rank's Program over the message layer (point-to-point and line steps) and the
// collective network / global interrupt (tree and barrier steps).
//
// One Executor per task owns the message-layer handler (kHandler) and matches arriving messages to
// posted receives by (communicator context, collective sequence number, source, tag); messages of
// a collective this rank has not reached yet wait as unexpected messages. A Communicator is a
// group of ranks with a context id; every rank of it calls its collectives in the same order.
//
// Deposit-bit line steps are real line multicasts when the receivers are exactly the nodes along
// the line (as the torus3 broadcast's lines are): the executor injects the part as packets with the
// deposit bit through the task's endpoint, every node on the line takes a copy, and a receiver's
// ordinary recv step matches the copies by (context, collective, source, tag) like a message.
// Otherwise (a receiver missing on the line, another node in between) the step falls back to one
// point-to-point message per receiver.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "bgl/collectives/flat_map.hpp"
#include "bgl/collectives/params.hpp"
#include "bgl/collectives/schedule.hpp"
#include "bgl/job_runtime/rate_limit.hpp"
#include "bgl/message_layer/message_layer.hpp"

namespace bgl::collective_net_emu {
class CollectiveNetwork;
}

namespace bgl::collectives {

inline constexpr message_layer::HandlerId kHandler =
    BGL_HANDLER_COLL_EXECUTOR;  // bgl/message_layer/bgl_ids.h
// Packet-header dispatch id of the deposit-bit line packets (one of the message layer's foreign
// ids).
inline constexpr std::uint8_t kLineDispatch = BGL_DISPATCH_COLL_LINE;

class Executor {
 public:
  // Registers kHandler on `layer`. `net` (optional) is this task's collective-network object for
  // tree and global-interrupt steps; it must outlive the executor.
  explicit Executor(message_layer::MessageLayer& layer,
                    collective_net_emu::CollectiveNetwork* net = nullptr);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  message_layer::MessageLayer& layer() { return layer_; }
  collective_net_emu::CollectiveNetwork* network() { return net_; }
  // Whether line steps may use deposit-bit multicasts (default); off, every line step sends one
  // message per receiver (benchmarks compare the two). Every task of a job must agree.
  void set_line_multicast(bool on) { line_multicast_ = on; }
  bool line_multicast() const { return line_multicast_; }

  // How a collective waits. By default the executor advances the message layer and idles on its
  // doorbell. A caller that owns the task's progress loop supplies one round of it instead: the
  // MPI device, whose own active messages arrive through the same layer and must be handled by
  // its progress executor, not dispatched behind its back. `round` returns whether anything
  // happened (and idles a little itself when nothing did); it throws to abort the collective.
  // Tree and global-interrupt steps run `meanwhile` (default: `round`) while they wait
  // (collective_net_emu::Meanwhile); those waits idle themselves, so it must not sleep. By default
  // they advance the message layer.
  using ProgressRound = bool (*)(void* context);
  void set_progress(ProgressRound round, void* context, ProgressRound meanwhile = nullptr);
  // One round of progress; `busy` (this task injected something itself) skips idling. `awaited`:
  // the messages of this executor that must all arrive before the caller can act, so that an idle
  // round may sleep until then (MessageLayer::expect_counted).
  void progress(bool busy = false, std::uint32_t awaited = 1);
  // After a run that passed `awaited`: the task's waits wake at every packet again.
  void end_awaiting();
  // Rounds until everything this task owes has been handed to the network.
  void flush();

  struct Key {
    std::uint32_t context, seq, source, tag;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    std::size_t operator()(const Key& k) const;
  };
  // A receive waiting for its message, or a message waiting for its receive.
  struct Slot {
    bool posted = false;
    bool line = false;            // the data come as deposit-bit line packets
    std::span<std::byte> buffer;  // posted
    message_layer::RecvDone done = nullptr;
    void* context = nullptr;
    message_layer::RecvHandle handle{};  // unexpected message
    std::size_t bytes = 0;               // unexpected: the message's size
    std::size_t got = 0;                 // line: bytes arrived so far
    // Unexpected line: the packets' data that arrived before the receive, one after the other
    // (memory follows what arrived, not the size a packet claims), and their (offset, size).
    std::vector<std::byte> early;
    std::vector<std::pair<std::uint32_t, std::uint32_t>> early_parts;
  };

  // Posts a receive (or accepts a message that already arrived).
  void expect(const Key& key, std::span<std::byte> buffer, message_layer::RecvDone done,
              void* context);
  // Messages that arrived for receives not posted yet (for tests: 0 after every collective).
  std::size_t unexpected() const;
  // Line packets discarded because they contradicted their part (size, offset, bytes).
  std::uint64_t malformed_packets() const { return malformed_packets_; }

 private:
  static message_layer::RecvTarget arrival(void* self, const message_layer::Arrival& a);
  static void line_packet(void* self, const packet_layer::PacketHeader& h,
                          std::span<const std::byte> payload);
  message_layer::MessageLayer& layer_;
  collective_net_emu::CollectiveNetwork* net_;
  bool line_multicast_ = true;
  ProgressRound progress_round_ = nullptr;
  std::uint32_t awaited_ = 1;  // what the message layer's waits were last told to expect
  void* progress_context_ = nullptr;
  // A slot comes and goes with every message: in place in one array, not a node each.
  detail::FlatMap<Key, Slot, KeyHash> slots_;
  std::uint64_t malformed_packets_ = 0;
  job_runtime::log::RateLimit malformed_log_;
  void malformed(const packet_layer::PacketHeader& h, const std::string& why);
};

struct Buffers {
  std::span<const std::byte> send;
  std::span<std::byte> recv;
};

namespace detail {
class Run;
}

class Communicator {
 public:
  // `topology.world_ranks` lists the job ranks of the members (empty: the whole job, in order);
  // `rank` is this task's rank in the communicator. All members use the same `context`.
  Communicator(Executor& executor, Topology topology, int size, int rank, std::uint32_t context);
  ~Communicator();
  Communicator(Communicator&&) noexcept;

  int size() const { return size_; }
  int rank() const { return rank_; }
  const Topology& topology() const { return topology_; }
  Executor& executor() { return executor_; }

  // Executes this rank's program of a schedule for `params` (blocking). Buffer sizes must be at
  // least params.send_bytes(rank) / recv_bytes(rank). Throws std::invalid_argument for bad
  // buffers, std::runtime_error when a message of the wrong size arrives.
  // With bglrun --stats/--report/--trace, each call is counted at its call site (the caller's
  // return address) with program.algorithm() and the rule "the caller's program".
  void run(const Program& program, const Params& params, Buffers buffers);

 private:
  friend class Library;  // counts its calls itself, with the rule that chose the algorithm
  void execute(const Program& program, const Params& params, Buffers buffers);
  Executor& executor_;
  Topology topology_;
  int size_, rank_;
  std::uint32_t context_;
  std::uint32_t seq_ = 0;
  std::vector<std::byte> scratch_;    // reused across calls
  std::unique_ptr<detail::Run> run_;  // its tables too
};

}  // namespace bgl::collectives
