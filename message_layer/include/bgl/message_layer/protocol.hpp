#pragma once
// BG/L's point-to-point protocols and the size thresholds that choose between them. Each protocol
// is one file of message_layer/src/protocols/, listed once in protocols/list.cpp in the order of
// this enum (which the C API's bgl_msg_protocol repeats); docs/MESSAGE_LAYER.md says how to add
// one.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace bgl::message_layer {

enum class Protocol : std::uint8_t {
  one_packet,      // header and data in one ordered packet
  eager,           // ordered packets, written at their offsets by the receiver
  rendezvous,      // ordered scout, receiver's ack, adaptive data straight into the buffer, fin
  adaptive_eager,  // adaptive packets only; a per-destination token keeps message order
  virtual_node,  // to the node's other task (VN mode): the receiver copies from the sender's memory
};
inline constexpr int kProtocols = 5;

std::string_view to_string(Protocol p);
std::optional<Protocol> parse_protocol(std::string_view text);
// The protocols' names, "a, b or c", for messages.
std::string protocol_names();

struct ProtocolLimits {
  // Largest data size sent as one packet (with the default header budget: 240 - 12 - header).
  std::size_t eager_limit = 16 * 1024;  // larger messages use rendezvous
  bool adaptive_eager = false;     // use adaptive eager instead of eager (BGL_ML_ADAPTIVE_EAGER)
  std::optional<Protocol> forced;  // every message uses this protocol (BGL_ML_PROTOCOL)

  // BGL_ML_EAGER_LIMIT, BGL_ML_ADAPTIVE_EAGER, BGL_ML_PROTOCOL; ConfigError names bad values.
  static ProtocolLimits from_environment();
};

}  // namespace bgl::message_layer
