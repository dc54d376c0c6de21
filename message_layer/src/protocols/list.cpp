// The list of protocols: the one place a new protocol is added (after its enumerator in
// bgl/message_layer/protocol.hpp and its file in this directory). Names, parsing, statistics and
// the engine's dispatch all come from here.
#include "protocol_ops.hpp"

namespace bgl::message_layer {

const std::array<const ProtocolOps*, kProtocols> kProtocolTable = {
    &one_packet_protocol,     &eager_protocol,        &rendezvous_protocol,
    &adaptive_eager_protocol, &virtual_node_protocol,
};

std::string_view to_string(Protocol p) {
  const auto i = static_cast<std::size_t>(p);
  return i < kProtocolTable.size() ? kProtocolTable[i]->name : "?";
}

std::optional<Protocol> parse_protocol(std::string_view text) {
  for (const ProtocolOps* ops : kProtocolTable) {
    if (text == ops->name) return ops->id;
    for (std::string_view alias : ops->aliases)
      if (!alias.empty() && text == alias) return ops->id;
  }
  return std::nullopt;
}

std::string protocol_names() {
  std::string names;
  for (std::size_t i = 0; i < kProtocolTable.size(); ++i)
    names += (i == 0                           ? ""
              : i + 1 == kProtocolTable.size() ? " or "
                                               : ", ") +
             std::string(kProtocolTable[i]->name);
  return names;
}

}  // namespace bgl::message_layer
