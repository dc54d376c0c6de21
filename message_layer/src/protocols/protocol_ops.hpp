#pragma once
// The message layer's protocols as a table. Each protocol lives in one file of this directory and
// owns its wire format, its send step, its checks of a first packet, what happens once its
// receive's destination is known, its completion and its other packet types; the engine keeps the
// queues, message sequence numbers, stall queues, the unexpected pool and the receive table, and
// calls a protocol only through its ProtocolOps entry (docs/MESSAGE_LAYER.md, "Adding a protocol").
#include <array>
#include <cstdint>
#include <span>
#include <string_view>

#include "../engine.hpp"

namespace bgl::message_layer {

using Engine = MessageLayer::Engine;

// A packet type a protocol sends after its first packet (data, acks, fins, tokens).
struct PacketOps {
  std::uint8_t type;  // wire::Type
  // Travels in its sender's ordered stream: it must not overtake a stalled message of its source.
  bool ordered;
  void (*on_packet)(Engine& e, const packet_layer::PacketHeader& h,
                    std::span<const std::byte> payload);
};

struct ProtocolOps {
  Protocol id;
  std::string_view name;                    // statistics, BGL_ML_PROTOCOL, bglrun --stats
  std::array<std::string_view, 2> aliases;  // also accepted by parse_protocol ("" for none)
  std::uint8_t first_packet;                // wire::Type of the first packet
  // The first packet is routed adaptively and may overtake earlier messages of its sender (the
  // engine holds it until its turn); otherwise it travels in the sender's ordered stream.
  bool first_overtakes;
  // The sender keeps a rendezvous slot until the receiver's fin, and an unexpected receive takes
  // no pool space: the data stay with the sender until accept() names a destination.
  bool slotted;
  double virtual_time::Params::*match_cost;  // the receiver's matching of the first packet

  // Refuses (std::invalid_argument) a message this protocol cannot carry.
  void (*check_post)(const Engine& e, const SendMessage& m, std::size_t bytes);
  // Sends (more of) the head message of its destination's queue.
  Engine::Step (*send)(Engine& e, SendMessage& m, Engine::DestState& d);
  // What is wrong with a first packet's protocol-specific claims (nullptr: nothing). `chunk` is
  // what follows the user header.
  const char* (*check_first)(const Engine& e, const packet_layer::PacketHeader& h,
                             std::uint64_t bytes, std::span<const std::byte> chunk,
                             const Engine::SourceState& src);
  // The message was matched (its destination is known, or it is unexpected and its pool entry is
  // ready): the first packet's data go there.
  void (*start)(Engine& e, std::uint32_t id, Engine::RecvState& r, Engine::SourceState& src,
                std::span<const std::byte> chunk);
  // accept() named the destination of an unexpected message.
  void (*accepted)(Engine& e, std::uint32_t id, Engine::RecvState& r);
  // Every byte is in: what the protocol owes its sender (a fin, a token) and its own bookkeeping.
  void (*complete)(Engine& e, std::uint32_t id, Engine::RecvState& r, Engine::SourceState& src);
  // Sends more of an acknowledged message's data (protocols whose receiver asks for them).
  Engine::Step (*send_data)(Engine& e, SendMessage& m) = nullptr;
  std::span<const PacketOps> packets;  // its packet types after the first
};

// The protocols, one per file (protocols/<name>.cpp), indexed by Protocol.
extern const ProtocolOps one_packet_protocol;
extern const ProtocolOps eager_protocol;
extern const ProtocolOps rendezvous_protocol;
extern const ProtocolOps adaptive_eager_protocol;
extern const ProtocolOps virtual_node_protocol;
extern const std::array<const ProtocolOps*, kProtocols> kProtocolTable;

inline const ProtocolOps& protocol_ops(Protocol p) {
  return *kProtocolTable[static_cast<std::size_t>(p)];
}

// Shared steps (defined with the protocol they belong to, used by its relatives).
namespace protocols {
// One-packet messages: post()'s immediate injection and the receive side's latency path.
bool inject_one_packet(Engine& e, SendMessage& m, const Engine::DestState& d, std::size_t bytes);
Engine::Taken take_one_packet(Engine& e, const packet_layer::PacketHeader& h,
                              std::span<const std::byte> payload);
// Eager and adaptive eager: the message's packets, first and data, on the given wire.
struct EagerWire {
  std::uint8_t first, data;
  bool adaptive;
  double virtual_time::Params::*first_cost, virtual_time::Params::*data_cost;
};
Engine::Step send_eager(Engine& e, SendMessage& m, Engine::DestState& d, const EagerWire& w);
const char* check_eager_size(std::uint64_t bytes, std::span<const std::byte> chunk);
void check_eager_post(const Engine& e, const SendMessage& m, std::size_t bytes);
// Rendezvous and virtual node: the request for data (ack) and the fin owed at completion.
Engine::Step send_scout(Engine& e, SendMessage& m, std::uint8_t type,
                        double virtual_time::Params::*cost, std::span<const std::byte> extra);
void request_data(Engine& e, Engine::RecvState& r, std::uint32_t id);
Engine::Step send_rendezvous_data(Engine& e, SendMessage& m);
void complete_slotted(Engine& e, std::uint32_t id, Engine::RecvState& r, Engine::SourceState&);
void no_post_check(const Engine&, const SendMessage&, std::size_t);
void finish_if_complete(Engine& e, std::uint32_t id, Engine::RecvState& r);
}  // namespace protocols

}  // namespace bgl::message_layer
