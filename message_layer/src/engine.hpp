#pragma once
// The message layer's engine: a send side (per-destination queues of caller-owned messages, the
// rendezvous table, the list of messages whose data stream, control packets) and a receive side
// (per-source message sequence numbers and stall queues, the table of messages being received, the
// unexpected pool). What each protocol does lives in protocols/<name>.cpp behind the table of
// protocols/protocol_ops.hpp; the engine is the protocols' only user, and they use the services
// below (everything after the public interface is for them and the engine's own files).
#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "bgl/job_runtime/rate_limit.hpp"
#include "bgl/job_runtime/traffic_matrix.hpp"
#include "bgl/message_layer/message_layer.hpp"
#include "bgl/packet_layer/virtual_fifo.hpp"
#include "slot_table.hpp"
#include "wire.hpp"

namespace bgl::message_layer {

struct PacketOps;

class MessageLayer::Engine {
 public:
  Engine(packet_layer::Endpoint& endpoint, Config config);

  Rank rank() const { return ep_.rank(); }
  int size() const { return size_; }
  void register_handler(HandlerId id, ArrivalHandler handler, void* context);
  void register_packet_handler(std::uint8_t dispatch, PacketHandler handler, void* context);
  packet_layer::Endpoint& endpoint() { return ep_; }
  void post(SendMessage& m);
  void accept(RecvHandle handle, const RecvTarget& target);
  bool advance();
  void wait() { ep_.wait(counted_wait_); }
  void expect_counted(std::uint32_t messages) {
    counted_wait_ = coprocessor_ || messages == 0 ? 1 : messages;
  }
  bool idle() const;
  bool flushed() const { return control_count_ == 0 && ep_.injection_idle(); }
  Protocol choose(const SendMessage& m) const;
  Protocol choose(const SendMessage& m, std::size_t bytes) const;
  const Statistics& statistics() const;
  std::span<const job_runtime::PairTraffic> traffic() const { return traffic_; }
  const Config& config() const { return config_; }
  Coprocessor* coprocessor() { return coprocessor_.get(); }
  ~Engine();

  // --- for the protocols (protocols/*.cpp) and the engine's own files ---
  static constexpr std::uint32_t kNone = ~0u;
  static constexpr int kBudget = 64;      // packets per direction per advance() call
  static constexpr int kDataFifo = 6;     // adaptively routed data: order does not matter
  static constexpr int kControlFifo = 7;  // acks, fins, tokens

  // --- send side ---
  struct DestState {
    SendMessage* head = nullptr;
    SendMessage* tail = nullptr;
    bool token = true;    // adaptive eager: may start a message (receiver returned the token)
    bool parity = false;  // adaptive eager: parity bit of the next message
    bool active = false;  // listed in active_
    std::uint16_t next_seq = 0;
    packet_layer::Destination where;  // the destination's node and FIFO group, looked up once
    std::uint8_t fifo = 0;            // its injection FIFO (ordered_fifo)
  };
  struct RzvSend {
    SendMessage* message = nullptr;
    Rank dest = 0;  // acks and fins must come from here
    bool notify_remote = false;
  };
  enum class Step : std::uint8_t { blocked, more, finished };
  // SendMessage::State::phase of a slotted protocol's message whose data left the caller's buffer
  // with its first packet: it is done when that packet is injected, and has no slot.
  static constexpr std::uint8_t kPhaseDoneAtInjection = 0xff;

  void activate(Rank dest);
  // An acknowledged message whose data go out now (ProtocolOps::send_data), after the others.
  void queue_data(SendMessage& m);
  // The head message may (continue to) send: a new message needs the adaptive-eager token back,
  // so that it cannot overtake an adaptive-eager message the receiver has not matched yet.
  static bool may_start(const DestState& d) {
    return d.token || (d.head && d.head->state.packets > 0);
  }
  bool send_some();
  bool send_data_some(int budget);
  std::span<const std::byte> first_prefix(const SendMessage& m, std::byte* buffer) const;
  std::span<const std::byte> data_view(const SendMessage& m, std::size_t offset, std::size_t n,
                                       std::byte* scratch) const;
  void finish_send(SendMessage& m);

  // --- virtual time: each protocol action's cost (docs/VIRTUAL_TIME.md) ---
  using Cost = double virtual_time::Params::*;
  // Cycles of a protocol action that produces a packet (PacketSpec::vt_cycles); 0 when off.
  std::uint32_t cost(Cost c) const {
    return vt_ ? static_cast<std::uint32_t>(virtual_time::Params::ticks(vt_->*c)) : 0;
  }
  // A protocol action that sends nothing by itself (a handler), charged at once.
  void charge(Cost c) {
    if (vt_) [[unlikely]]
      ep_.clock().charge(virtual_time::Params::ticks(vt_->*c));
  }
  // A message's end-to-end latency, from its sender's post() to now, in its protocol's histogram.
  void record_latency(Protocol p, std::uint64_t origin) {
    if (vt_) [[unlikely]] {
      const std::uint64_t now = ep_.clock().now();
      stats_.latency[static_cast<std::size_t>(p)].record(now > origin ? now - origin : 0);
    }
  }
  std::uint64_t vt_origin_ = 0;  // the stamp's origin of the packet being handled

  // --- control packets (acks, fins, tokens): injected at once or queued, never lost ---
  struct Control {
    Rank dest;
    std::uint8_t type;
    std::uint32_t word;
    wire::Ack ack;
  };
  void send_control(const Control& c);
  bool inject_control(const Control& c);
  bool flush_controls();

  // --- receive side ---
  struct RecvState {
    Protocol protocol = Protocol::one_packet;
    Rank source = 0;
    std::uint64_t bytes = 0;
    std::uint64_t received = 0;
    std::uint32_t sender_slot = 0;
    wire::VnSource vn{};  // virtual-node protocol: where the data are
    RecvTarget target;
    std::unique_ptr<std::byte[]> pool;  // unexpected data until accept()
    bool unexpected = false;
    // Answered "later" but the pool had no room: its packets wait in the source's stall queue
    // until pool space frees up or accept() names a destination.
    bool pool_wait = false;
    bool data_complete = false;
    bool on_coprocessor = false;
    std::uint64_t vt_origin = 0;  // virtual time: the sender's clock when it posted the message
  };
  // Scratchpad descriptor of a rendezvous receive done by the coprocessor: the main task fills it
  // and publishes `id`; the coprocessor writes the data and counts `received`.
  struct CoReceive {
    std::atomic<std::uint32_t> id{kNone};
    std::byte* buffer = nullptr;
    std::uint64_t bytes = 0;
    std::atomic<std::uint64_t> received{0};
    // Virtual time: the main task's clock when it handed the receive over (the coprocessor cannot
    // start earlier), and the coprocessor's clock when the last byte was in (published with
    // `received`; the main task cannot see completion earlier).
    std::uint64_t vt_posted = 0;
    std::uint64_t vt_done = 0;
  };
  void co_charge(CoReceive& d, bool last);
  struct SourceState {
    std::uint32_t eager = kNone;     // eager message in progress (ordered stream)
    std::uint32_t adaptive = kNone;  // adaptive-eager message in progress
    bool parity = false;             // adaptive eager: parity of the next first packet
    std::uint16_t expected_seq = 0;  // number of the next message to match
    // An adaptive-eager first packet that overtook earlier (ordered) messages waits in held_.
    bool holds_first = false;
    // The stall queue (indices into hold_, oldest first): a first packet that lacked a receive
    // entry or pool space, and every packet of this source that must follow it. Taking them out of
    // the reception FIFO keeps the FIFO flowing for everybody else (backpressure stays per source).
    std::uint32_t stall_head = kNone;
    std::uint32_t stall_tail = kNone;
    // The stall queue's head is the first packet of this message, already matched (its handler
    // ran and answered "later"); it resumes when the message has pool space or a destination.
    std::uint32_t resume = kNone;
    // Adaptive-eager data that overtook its first packet: the packets' bytes one after the other
    // (memory follows what arrived, not the offsets a packet claims), and their (offset, size).
    std::vector<std::byte> staging;
    std::vector<std::pair<std::uint64_t, std::uint32_t>> staged;
  };
  // consumed: done with the packet; blocked: leave it in its FIFO (no room to hold it);
  // hold: keep it in the source's stall queue (its message waits for resources).
  enum class Taken : std::uint8_t { consumed, blocked, hold };
  struct HeldPacket {
    packet_layer::Packet packet;
    std::uint32_t next = kNone;
    std::uint64_t vt_origin = 0;
  };

  bool receive_some(bool arrived_only = false);
  Taken take(const packet_layer::PacketHeader& h, std::span<const std::byte> payload);
  Taken unexpected(std::uint32_t id, RecvState& r, SourceState& src,
                   std::span<const std::byte> chunk);
  bool joins_stall(const packet_layer::PacketHeader& h, std::span<const std::byte> payload,
                   const SourceState& src) const;
  bool hold_packet(Rank source, const packet_layer::PacketHeader& h,
                   std::span<const std::byte> payload);
  void pop_held(SourceState& src);
  Taken dispatch(const packet_layer::PacketHeader& h, std::span<const std::byte> payload,
                 bool from_queue);
  Taken on_first(const packet_layer::PacketHeader& h, std::span<const std::byte> payload,
                 bool from_queue);
  Taken match(const packet_layer::PacketHeader& h, std::span<const std::byte> payload,
              const wire::First& first, bool from_queue);
  Taken resume(SourceState& src, const packet_layer::Packet& p);
  bool charge_pool(RecvState& r);
  bool release_held();
  bool release_stalled();
  void place(RecvState& r, std::uint64_t offset, std::span<const std::byte> data);
  void data_arrived(std::uint32_t id, RecvState& r, std::uint64_t offset,
                    std::span<const std::byte> data);
  void complete(std::uint32_t id, RecvState& r);
  void finish_receive(std::uint32_t id, RecvState& r);
  void malformed(const packet_layer::PacketHeader& h, const char* why);
  void malformed(Rank source, const char* why, const packet_layer::PacketHeader* h);
  // Whether `n` bytes at `offset` fit in the message and in what it still expects.
  static bool fits(const RecvState& r, std::uint64_t offset, std::size_t n) {
    return offset <= r.bytes && n <= r.bytes - offset && n <= r.bytes - r.received;
  }
  void start_coprocessor();
  bool coprocessor_eligible(const RecvState& r) const;
  // The FIFO group a rendezvous receive's data go to: this task's, or the coprocessor's (1) when it
  // takes the receive (the hand-over happens here).
  std::uint32_t data_group_for(RecvState& r, std::uint32_t id);
  bool coprocessor_receive();   // runs on the coprocessor
  bool coprocessor_complete();  // main task: coprocessor receives that are done
  void release_pool(RecvState& r);

  // bglrun --trace: a message's send is a span from post() to done(), its receive an instant at
  // completion. Out of line: with tracing off the hot paths only test trace_.
  [[gnu::cold, gnu::noinline]] void trace_send(const SendMessage& m, bool begin);
  [[gnu::cold, gnu::noinline]] void trace_receive(Rank source, std::uint64_t bytes, Protocol p);

  packet_layer::Endpoint& ep_;
  const virtual_time::Params* vt_;  // nullptr: virtual time off
  job_runtime::Trace* trace_;       // nullptr: tracing off
  struct TraceNames {
    job_runtime::Trace::Name send = 0, recv = 0;
    std::array<job_runtime::Trace::Name, kProtocols> protocol{};
  } trace_names_;
  Config config_;
  int size_;
  std::optional<Rank> sibling_;     // virtual-node mode: the other task of this node
  bool vn_copy_refused_ = false;    // process_vm_readv is not allowed here: stream instead
  bool vn_reader_allowed_ = false;  // allow_sibling_reads() done
  // Virtual-node mode: the node's shared cells to and from the other task (null: not used).
  packet_layer::VirtualCells* vn_out_cells_ = nullptr;
  packet_layer::VirtualCells* vn_in_cells_ = nullptr;
  std::uint32_t vn_next_cell_ = 0;  // where the search for a free outgoing cell starts
  std::int32_t pid_ = 0;            // this task's pid, for virtual-node requests
  std::vector<std::pair<ArrivalHandler, void*>> handlers_;
  // By wire type: the protocol whose first packet it is (kProtocols: none), or the handler of a
  // protocol's later packet (and whether it travels in its source's ordered stream).
  std::array<std::uint8_t, kForeignDispatchFirst> first_protocol_{};
  std::array<const PacketOps*, kForeignDispatchFirst> packet_ops_{};
  // Indexed by dispatch id - kForeignDispatchFirst.
  std::array<std::pair<PacketHandler, void*>, kForeignDispatchLast - kForeignDispatchFirst + 1>
      packet_handlers_{};

  std::vector<DestState> dests_;
  std::vector<job_runtime::PairTraffic> traffic_;  // per destination: messages and bytes sent
  std::vector<Rank> active_;
  std::vector<Rank> visiting_;
  std::size_t queued_ = 0;  // posted messages not yet out of their destination queue
  std::size_t next_active_ = 0;
  SlotTable<RzvSend> rzv_sends_;
  SendMessage* sent_head_ = nullptr;  // sent by post() itself, done() not yet called
  SendMessage* sent_tail_ = nullptr;
  SendMessage* data_head_ = nullptr;  // acknowledged messages whose data stream
  SendMessage* data_tail_ = nullptr;
  std::size_t control_capacity_;
  std::unique_ptr<Control[]> controls_;  // ring of control_capacity_ entries
  std::size_t control_head_ = 0, control_count_ = 0;

  std::vector<SourceState> sources_;
  SlotTable<RecvState> recvs_;
  std::size_t pool_in_use_ = 0;
  // Unexpected messages of up to one packet (a collective's early arrivals come by the dozen)
  // reuse the blocks of earlier ones instead of an allocation each.
  static constexpr std::size_t kSmallPoolBlock = packet_layer::kMaxPayloadBytes;
  static constexpr std::size_t kSmallPoolBlocksKept = 1024;
  std::vector<std::unique_ptr<std::byte[]>> small_pool_blocks_;
  std::uint32_t blocked_fifos_ = 0;
  std::uint64_t delivered_ = 0;  // messages handed to their receiver (completion calls)
  // Out-of-sequence adaptive-eager first packets, at most one per source (kept here, not in each
  // source's entry, so that a job's per-source table stays small: 1,024 sources each kept a
  // packet's worth of memory before). Reserved for every source, so it never grows; only the
  // pages it uses are ever touched.
  struct HeldFirst {
    Rank source;
    std::uint64_t vt_origin;
    packet_layer::Packet packet;
  };
  std::vector<HeldFirst> held_;
  LazyPool<HeldPacket> hold_;  // stall queues' packets (BGL_ML_HOLD_PACKETS)
  std::vector<Rank> stalled_;  // sources with a non-empty stall queue

  job_runtime::WaitPolicy co_policy_;
  std::unique_ptr<packet_layer::Endpoint>
      co_endpoint_;                        // FIFO group 1, used by the coprocessor only
  std::unique_ptr<CoReceive[]> co_table_;  // indexed like recvs_
  std::vector<std::uint32_t> co_active_;   // main task: receives on the coprocessor
  std::atomic<std::uint64_t> co_packets_{0};
  std::size_t co_unit_ = 0;         // the communication unit's index among the permanent units
  std::uint32_t counted_wait_ = 1;  // expect_counted()
  std::unique_ptr<Coprocessor> coprocessor_;  // last: its thread uses the members above
  std::uint64_t staged_bytes_ = 0;            // early adaptive-eager data of every source
  // The largest adaptive-eager message a source may send (and so keep early data of).
  std::uint64_t staging_limit_ = 0;
  std::uint64_t malformed_packets_ = 0;
  job_runtime::log::RateLimit malformed_log_;
  bool table_full_reported_ = false;
  void report_table_full();
  // The coprocessor's own (it runs on another thread): counted here, added up by statistics().
  std::atomic<std::uint64_t> co_malformed_{0};
  job_runtime::log::RateLimit co_malformed_log_;
  void co_malformed(const packet_layer::PacketHeader& h, const char* why);
  mutable Statistics stats_;  // statistics() brings the malformed-packet count up to date
};

}  // namespace bgl::message_layer
