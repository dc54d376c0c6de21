#pragma once
// The objects exchanged with the message layer. Send messages are owned by the caller (typically
// embedded in its request object) and linked into the layer's queues while posted: posting never
// allocates. Receive-side state lives in a fixed table inside the layer; the caller refers to a
// message by its RecvHandle.
#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "bgl/message_layer/bgl_ids.h"
#include "bgl/message_layer/protocol.hpp"

namespace bgl::message_layer {

using Rank = std::uint32_t;
using HandlerId = std::uint8_t;
inline constexpr std::size_t kMaxUserHeader = 128;
inline constexpr int kMaxHandlers = BGL_MSG_MAX_HANDLERS;  // bgl/message_layer/bgl_ids.h

struct SendMessage;
using SendDone = void (*)(SendMessage& message);

// Where the data of an outgoing message comes from: one buffer or a gather list.
struct SendData {
  std::span<const std::byte> buffer;
  std::span<const iovec> iov;  // used when non-empty
  std::size_t size() const;
};

struct SendMessage {
  // Filled in by the caller before post().
  Rank dest = 0;
  HandlerId handler = 0;
  std::span<const std::byte> header;  // up to kMaxUserHeader bytes, copied at post()
  SendData data;
  std::optional<Protocol> protocol;  // force a protocol for this message (experiments)
  SendDone done = nullptr;           // the send buffer may be reused (called from advance())
  SendDone remote_done = nullptr;    // rendezvous only: the receiver has all the data
  void* context = nullptr;
  // The receiver needs to see this message only once it has all of it, and never answers it: its
  // last packet counts down the receiver's counted sleep (MessageLayer::expect_counted) instead of
  // waking it, and its earlier packets do not ring at all. One-packet and eager messages only;
  // the other protocols always wake.
  bool counted = false;

  // The message layer's bookkeeping while posted; do not touch.
  struct State {
    SendMessage* next = nullptr;
    std::size_t offset = 0;       // data bytes already injected
    std::uint32_t packets = 0;    // packets injected so far
    std::uint32_t remote_id = 0;  // rendezvous: the receiver's slot
    std::uint32_t local_id = 0;   // rendezvous: our slot
    std::uint16_t seq = 0;        // message number towards dest
    Protocol protocol = Protocol::one_packet;
    std::uint8_t phase = 0;
    std::uint8_t header_bytes = 0;
    std::uint8_t data_group = 0;  // rendezvous: the receiver's FIFO group for the data
    std::uint64_t vt_posted = 0;  // virtual time: the sender's clock at post()
    std::byte header_copy[kMaxUserHeader];
  } state;
};

// Identifies a message being received (or an unexpected one waiting for its buffer).
struct RecvHandle {
  std::uint32_t id = 0;
};

// `handle` is the RecvHandle's id (a plain integer so that C callers share this exact type).
using RecvDone = void (*)(void* context, std::uint32_t handle, std::size_t bytes);

// What the arrival handler answers: where the data goes and whom to tell when it is all there.
struct RecvTarget {
  enum class Kind : std::uint8_t { buffer, iov, later };
  Kind kind = Kind::later;
  std::span<std::byte> buffer;
  std::span<const iovec> iov;  // must stay valid until the completion call
  RecvDone done = nullptr;
  void* context = nullptr;

  static RecvTarget into(std::span<std::byte> b, RecvDone d, void* ctx) {
    return {Kind::buffer, b, {}, d, ctx};
  }
  static RecvTarget scatter(std::span<const iovec> v, RecvDone d, void* ctx) {
    return {Kind::iov, {}, v, d, ctx};
  }
  // Unexpected: eager data are kept in the layer's bounded pool, a rendezvous waits; the caller
  // hands over the destination later with MessageLayer::accept().
  static RecvTarget later() { return {}; }
};

// The up-call made when the first packet of a message arrives.
struct Arrival {
  Rank source;
  HandlerId handler;
  std::span<const std::byte> header;  // valid during the call only
  std::size_t bytes;                  // total data bytes of the message
  Protocol protocol;
  RecvHandle handle;
};

using ArrivalHandler = RecvTarget (*)(void* context, const Arrival& arrival);

}  // namespace bgl::message_layer
