#pragma once
// BG/L's message layer: active messages of any size
// between ranks over the packet layer, with the one-packet, eager, rendezvous and adaptive-eager
// protocols. MPI non-overtaking holds for every mix of protocols: messages from one rank to another
// reach the arrival handler in the order they were posted.
//
// Threading: one MessageLayer per task, used by one thread at a time (the thread that owns the
// rank); the handlers and completion callbacks run inside advance().
#include <memory>
#include <span>

#include "bgl/job_runtime/traffic_matrix.hpp"
#include "bgl/message_layer/coprocessor.hpp"
#include "bgl/message_layer/messages.hpp"
#include "bgl/message_layer/protocol.hpp"
#include "bgl/message_layer/statistics.hpp"
#include "bgl/packet_layer/endpoint.hpp"

namespace bgl::message_layer {

struct Config {
  ProtocolLimits limits;
  std::size_t pool_bytes = 64u << 20;   // unexpected eager data per node (BGL_ML_POOL_BYTES)
  std::uint32_t max_receives = 16384;   // messages being received or unexpected (BGL_ML_MAX_RECVS)
  std::uint32_t max_rendezvous = 1024;  // rendezvous sends awaiting ack/fin (BGL_ML_MAX_RZV)
  // Packets a task takes out of its reception FIFOs and keeps while their message waits for a
  // receive entry or pool space (BGL_ML_HOLD_PACKETS); beyond that, backpressure in the FIFO.
  std::uint32_t hold_packets = 1024;
  bool vn_direct_copy = true;  // VN protocol copies with process_vm_readv (BGL_ML_VN_COPY)
  // VN protocol: messages up to a shared cell's size (16 KiB) go through the node's shared cells
  // (BGL_ML_VN_CELLS; only with vn_direct_copy).
  bool vn_cells = true;
  // Coprocessor mode: the coprocessor receives eligible rendezvous data
  // (BGL_ML_COPROCESSOR_RECEIVE).
  bool coprocessor_receive = true;

  static Config from_environment();
};

class MessageLayer {
 public:
  // `endpoint` is the task's packet-layer endpoint; it must outlive the message layer, which takes
  // the dispatch ids 1..15 of the packets it sends.
  MessageLayer(packet_layer::Endpoint& endpoint, Config config);
  ~MessageLayer();
  MessageLayer(const MessageLayer&) = delete;
  MessageLayer& operator=(const MessageLayer&) = delete;

  Rank rank() const;
  int size() const;

  void register_handler(HandlerId id, ArrivalHandler handler, void* context);

  // Packets of a component that shares this task's endpoint and injects packets of its own (the
  // collectives' deposit-bit line multicasts, which no message protocol can express), told apart
  // by dispatch ids kForeignDispatchFirst..kForeignDispatchLast. `handler` gets each such packet
  // as advance() polls it and must consume it before returning (copy what it needs; it may
  // throw, as arrival handlers may); the packet is then discarded. A packet with an id nobody
  // registered is malformed (logged, counted and discarded).
  using PacketHandler = void (*)(void* context, const packet_layer::PacketHeader& header,
                                 std::span<const std::byte> payload);
  static constexpr std::uint8_t kForeignDispatchFirst = BGL_DISPATCH_FOREIGN_FIRST;  // bgl_ids.h
  static constexpr std::uint8_t kForeignDispatchLast = BGL_DISPATCH_FOREIGN_LAST;
  void register_packet_handler(std::uint8_t dispatch, PacketHandler handler, void* context);
  // The endpoint, for that component's injections. What it injects is moved on by advance() and
  // counts in flushed() and idle() like the layer's own packets.
  packet_layer::Endpoint& endpoint();

  // Queues a message; never blocks. `message` must stay alive and unchanged until done() (and,
  // for rendezvous, remote_done()) has been called. Throws std::invalid_argument for bad input.
  void post(SendMessage& message);

  // Hands over the destination of an unexpected message (one answered with RecvTarget::later()).
  // Completion is reported through target.done, possibly before accept() returns.
  void accept(RecvHandle handle, const RecvTarget& target);

  // Injects queued packets and dispatches arrivals; returns true if anything happened.
  bool advance();
  // After an advance() that did nothing, with the job's waiting policy. wait(): blocks until
  // something may have happened (spin, yield, doorbell sleep). poll_yield(): a poll returns now,
  // giving the core away once when the host's tasks outnumber its cores.
  void wait();
  void poll_yield() const;
  // The waits from now on may sleep until `messages` counted messages (SendMessage::counted) have
  // arrived, or any other packet: their caller cannot act before (a collective waiting only for
  // its last receives). 1, the default, wakes at any packet. Ignored in coprocessor mode, where
  // the coprocessor's completions ring the same doorbell.
  void expect_counted(std::uint32_t messages);
  // Advances until pred() is true.
  template <class Pred>
  void progress_until(Pred&& pred) {
    while (!pred())
      if (!advance()) wait();
  }
  // True when nothing is queued, in flight or expected at the sender side.
  bool idle() const;
  // True when no packet of this task waits in its injection FIFOs or control queue: everything
  // of every message whose done() has run has been handed to the network (messages still queued
  // may remain). What a barrier or finalisation waits for before the task may stop advancing.
  bool flushed() const;

  Protocol choose(const SendMessage& message) const;
  const Statistics& statistics() const;
  // Per destination rank: the messages this task sent there and their user data bytes (counted
  // when a send completes, as in statistics()).
  std::span<const job_runtime::PairTraffic> traffic() const;
  const Config& config() const;
  // Coprocessor mode: the node's second processor, for costart()/cojoin(); nullptr otherwise.
  Coprocessor* coprocessor();

  // The implementation (src/engine.hpp), named here so the library's protocol files can use it.
  class Engine;

 private:
  std::unique_ptr<Engine> engine_;
  bool metered_ = false;  // virtual time with a CPU factor: calls measure the time between them
};

}  // namespace bgl::message_layer
