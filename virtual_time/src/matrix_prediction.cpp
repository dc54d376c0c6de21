#include "bgl/virtual_time/matrix_prediction.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "bgl/torus_emu/direction.hpp"
#include "bgl/torus_emu/error.hpp"

namespace bgl::virtual_time {

namespace {

// The packet layer's and message layer's packet formats
// (packet_layer/include/bgl/packet_layer/header.hpp, message_layer/src/wire.hpp): 256-byte packets
// in 32-byte chunks, a 16-byte packet header, a 12-byte message header in every first packet, a
// 4-byte index in every rendezvous data packet.
constexpr std::uint64_t kChunk = 32;
constexpr std::uint64_t kPacketHeader = 16;
constexpr std::uint64_t kMaxPayload = 256 - kPacketHeader;
constexpr std::uint64_t kFirstHeader = 12;
constexpr std::uint64_t kRzvIndex = 4;

// What one message costs: software cycles at either end, wire cycles of the packets going
// forward (source to destination) and back, and the packets.
struct MessageCost {
  double send_cycles = 0;
  double recv_cycles = 0;
  double forward_wire = 0;
  double backward_wire = 0;
  std::uint64_t packets = 0;
};

class Costs {
 public:
  Costs(const Params& p, const PredictOptions& o) : p_(p), o_(o) {}

  // A packet carrying `payload` bytes, on the wire.
  double wire(std::uint64_t payload) const {
    const std::uint64_t chunks = (payload + kPacketHeader + kChunk - 1) / kChunk;
    return static_cast<double>(p_.link_cycles(static_cast<std::uint32_t>(chunks * kChunk)));
  }

  MessageCost torus_message(std::uint64_t bytes) const {
    MessageCost c;
    const std::uint64_t first_room = kMaxPayload - kFirstHeader - o_.user_header_bytes;
    const double write = p_.packet_write_cycles, read = p_.packet_read_cycles;
    if (bytes <= first_room) {  // one packet
      c.send_cycles = p_.one_packet_send_cycles + write;
      c.recv_cycles = p_.one_packet_recv_cycles + read;
      c.forward_wire = wire(kFirstHeader + o_.user_header_bytes + bytes);
      c.packets = 1;
      return c;
    }
    if (bytes <= o_.eager_limit) {  // a full first packet, then data packets
      const std::uint64_t rest = bytes - first_room;
      const std::uint64_t n = (rest + kMaxPayload - 1) / kMaxPayload;
      const double data = static_cast<double>(n) * p_.eager_data_cycles;
      c.send_cycles = p_.eager_send_cycles + data + static_cast<double>(n + 1) * write;
      c.recv_cycles = p_.eager_recv_cycles + data + static_cast<double>(n + 1) * read;
      c.forward_wire =
          wire(kMaxPayload) * static_cast<double>(n) + wire(rest - (n - 1) * kMaxPayload);
      c.packets = n + 1;
      return c;
    }
    // rendezvous: scout forward, acknowledgement back, data forward, the fin back
    const std::uint64_t chunk = kMaxPayload - kRzvIndex;
    const std::uint64_t n = (bytes + chunk - 1) / chunk;
    const double data = static_cast<double>(n) * (p_.rzv_data_cycles);
    c.send_cycles = p_.rzv_send_cycles + write + p_.rzv_ack_cycles + read + data +
                    static_cast<double>(n) * write + read;
    c.recv_cycles = read + p_.rzv_match_cycles + write + data + static_cast<double>(n) * read +
                    p_.rzv_complete_cycles + write;
    c.forward_wire = wire(kFirstHeader + o_.user_header_bytes) +
                     wire(kMaxPayload) * static_cast<double>(n - 1) +
                     wire(kRzvIndex + bytes - (n - 1) * chunk);
    c.backward_wire = wire(kFirstHeader) + wire(0);
    c.packets = n + 3;
    return c;
  }

  // Between the two tasks of a virtual-node node: a descriptor, then the receiver's copy.
  MessageCost node_message(std::uint64_t bytes) const {
    MessageCost c;
    c.send_cycles = p_.vn_send_cycles + p_.vn_packet_cycles;
    c.recv_cycles = p_.vn_recv_cycles + static_cast<double>(bytes) / p_.copy_bytes_per_cycle;
    c.packets = 1;
    return c;
  }

 private:
  const Params& p_;
  const PredictOptions& o_;
};

}  // namespace

Prediction predict_time(const torus_emu::CommMatrix& matrix, const torus_emu::Mapping& mapping,
                        const Params& params, const PredictOptions& options) {
  if (matrix.tasks() != mapping.size())
    throw ConfigError("the communication matrix has " + std::to_string(matrix.tasks()) +
                      " tasks, the mapping " + std::to_string(mapping.size()));
  const torus_emu::Shape& shape = mapping.shape();
  const Costs costs(params, options);
  std::vector<double> link(static_cast<std::size_t>(shape.node_count()) * torus_emu::kDirections);
  std::vector<double> task(static_cast<std::size_t>(matrix.tasks()));
  Prediction out;
  int longest = 0;

  for (const torus_emu::Flow& f : matrix.flows()) {
    // unknown count: messages of the eager limit
    const std::uint64_t m =
        f.messages
            ? f.messages
            : std::max<std::uint64_t>(1, (f.bytes + options.eager_limit - 1) / options.eager_limit);
    out.messages += m;
    out.rounds = std::max(out.rounds, m);
    const auto from = mapping.location(f.source), to = mapping.location(f.dest);
    const bool same_node = from.node == to.node && f.source != f.dest;
    const auto forward = torus_emu::deterministic_route(shape, from.node, to.node);
    const auto backward = torus_emu::deterministic_route(shape, to.node, from.node);
    longest = std::max(longest, forward.hops());
    // m messages of the average size: the remainder spread one byte each over the first ones
    const std::uint64_t small = f.bytes / m, large_count = f.bytes % m;
    for (const auto& [bytes, count] :
         {std::pair{small + 1, large_count}, std::pair{small, m - large_count}}) {
      if (count == 0) continue;
      const MessageCost c = same_node ? costs.node_message(bytes) : costs.torus_message(bytes);
      const double k = static_cast<double>(count);
      task[f.source] += k * c.send_cycles;
      task[f.dest] += k * c.recv_cycles;
      out.packets += count * c.packets;
      if (same_node) continue;
      forward.for_each_link(shape, [&](const torus_emu::Link& l) {
        link[l.node * torus_emu::kDirections + torus_emu::index_of(l.dir)] += k * c.forward_wire;
      });
      if (c.backward_wire > 0)
        backward.for_each_link(shape, [&](const torus_emu::Link& l) {
          link[l.node * torus_emu::kDirections + torus_emu::index_of(l.dir)] += k * c.backward_wire;
        });
    }
  }
  for (std::size_t i = 0; i < link.size(); ++i)
    if (link[i] > out.link_cycles) {
      out.link_cycles = link[i];
      out.busiest_link = {static_cast<torus_emu::NodeId>(i / torus_emu::kDirections),
                          static_cast<torus_emu::Direction>(i % torus_emu::kDirections)};
    }
  for (std::size_t t = 0; t < task.size(); ++t)
    if (task[t] > out.task_cycles) {
      out.task_cycles = task[t];
      out.busiest_task = static_cast<std::uint32_t>(t);
    }
  if (out.rounds > 0)
    out.latency_cycles =
        static_cast<double>(out.rounds) * (longest * params.hop_cycles + costs.wire(kMaxPayload));
  return out;
}

}  // namespace bgl::virtual_time
