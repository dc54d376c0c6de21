// Adaptive-eager protocol: every packet routed adaptively, so they may arrive in any order,
// [First][user header][data...] and [data] with word = parity << 31 | offset. A per-destination
// token keeps message order: the sender starts a message only when the receiver has returned the
// token for the previous one (an empty kAeToken packet), and each message's parity bit tells its
// data from the next message's. Data that overtake their first packet wait in the source's staging
// buffer until the first packet says where they go.
#include <algorithm>

#include "protocol_ops.hpp"

namespace bgl::message_layer {
namespace protocols {
namespace {

using P = virtual_time::Params;

constexpr EagerWire kWire{wire::kAeFirst, wire::kAeData, true, &P::adaptive_send_cycles,
                          &P::adaptive_data_cycles};

// Early data buffers larger than this are freed once their message is matched.
constexpr std::size_t kKeptStaging = 64 * 1024;

Engine::Step send(Engine& e, SendMessage& m, Engine::DestState& d) {
  return send_eager(e, m, d, kWire);
}

const char* check_first(const Engine&, const packet_layer::PacketHeader& h, std::uint64_t bytes,
                        std::span<const std::byte> chunk, const Engine::SourceState& src) {
  if (const char* why = check_eager_size(bytes, chunk)) return why;
  if ((h.word & ~wire::kParityBit) != 0) return "adaptive-eager first packet at a nonzero offset";
  if (src.adaptive != Engine::kNone || ((h.word & wire::kParityBit) != 0) != src.parity)
    return "adaptive-eager message out of turn";
  return nullptr;
}

void drop_staging(Engine& e, Engine::SourceState& src) {
  e.staged_bytes_ -= src.staging.size();
  e.stats_.early_adaptive_bytes = e.staged_bytes_;
  src.staged.clear();
  src.staging.clear();
  // A large burst of early data (a big adaptive-eager message) does not keep its memory.
  if (src.staging.capacity() > kKeptStaging) {
    src.staging.shrink_to_fit();
    src.staged.shrink_to_fit();
  }
}

// The data that overtook the first packet go to their places now.
void unstage(Engine& e, Engine::SourceState& src, Engine::RecvState& r, std::size_t first_bytes) {
  const std::uint32_t id = src.adaptive;
  std::size_t at = 0;
  for (const auto& [offset, n] : src.staged) {
    const std::span<const std::byte> data(src.staging.data() + at, n);
    at += n;
    // The first packet's own data (offset 0) arrive after these: leave room for them.
    if (offset < first_bytes || !Engine::fits(r, offset, n) ||
        n + first_bytes > r.bytes - r.received) {
      e.malformed(r.source, "early adaptive-eager data beyond the message", nullptr);
      continue;
    }
    e.data_arrived(id, r, offset, data);
    if (!e.recvs_.find(id)) break;  // completed (and released) by this data
  }
  drop_staging(e, src);
}

void start(Engine& e, std::uint32_t id, Engine::RecvState& r, Engine::SourceState& src,
           std::span<const std::byte> chunk) {
  src.adaptive = id;
  src.parity = !src.parity;
  unstage(e, src, r, chunk.size());
  if (e.recvs_.find(id)) e.data_arrived(id, r, 0, chunk);
}

// The whole message is here: the sender may start its next message.
void complete(Engine& e, std::uint32_t, Engine::RecvState& r, Engine::SourceState& src) {
  src.adaptive = Engine::kNone;
  e.send_control({r.source, wire::kAeToken, 0, {}});
}

void on_data(Engine& e, const packet_layer::PacketHeader& h, std::span<const std::byte> payload) {
  Engine::SourceState& src = e.sources_[h.source_rank()];
  const bool parity = (h.word & wire::kParityBit) != 0;
  const std::uint64_t offset = h.word & ~wire::kParityBit;
  ++e.stats_.protocol[static_cast<std::size_t>(Protocol::adaptive_eager)].packets_received;
  e.charge(&P::adaptive_data_cycles);
  Engine::RecvState* r = src.adaptive == Engine::kNone ? nullptr : e.recvs_.find(src.adaptive);
  // The message in progress has the parity before the flip made when its first packet arrived.
  if (r && parity != src.parity) {
    if (!Engine::fits(*r, offset, payload.size()))
      return e.malformed(h, "adaptive-eager data beyond the message");
    e.data_arrived(src.adaptive, *r, offset, payload);
    return;
  }
  if (r || parity != src.parity) return e.malformed(h, "adaptive-eager data out of turn");
  // Overtook its first packet: keep it until the first packet says where it goes. The token lets
  // one adaptive-eager message per source be in flight, so a source's early data never exceed
  // the largest adaptive-eager message (staging_limit_).
  if (payload.empty() || offset + payload.size() > e.staging_limit_)
    return e.malformed(h, "adaptive-eager data beyond the largest adaptive-eager message");
  if (src.staging.size() + payload.size() > e.staging_limit_)
    return e.malformed(h, "early adaptive-eager data beyond the largest adaptive-eager message");
  ++e.stats_.early_adaptive_packets;
  src.staging.insert(src.staging.end(), payload.begin(), payload.end());
  src.staged.emplace_back(offset, static_cast<std::uint32_t>(payload.size()));
  e.staged_bytes_ += payload.size();
  e.stats_.early_adaptive_bytes = e.staged_bytes_;
  e.stats_.early_adaptive_bytes_max = std::max(e.stats_.early_adaptive_bytes_max, e.staged_bytes_);
}

void on_token(Engine& e, const packet_layer::PacketHeader& h, std::span<const std::byte>) {
  const Rank source = h.source_rank();
  Engine::DestState& d = e.dests_[source];
  if (d.token) return e.malformed(source, "adaptive-eager token that was never lent", nullptr);
  // The receiver returns it when it has the whole message: not while this one still sends it.
  const SendMessage* head = d.head;
  if (head && head->state.protocol == Protocol::adaptive_eager && head->state.packets > 0 &&
      head->state.offset < head->data.size())
    return e.malformed(source, "adaptive-eager token before the message was sent", nullptr);
  e.charge(&P::token_cycles);
  d.token = true;
  e.activate(source);
}

constexpr PacketOps kPackets[] = {{wire::kAeData, false, on_data},
                                  {wire::kAeToken, false, on_token}};

}  // namespace
}  // namespace protocols

const ProtocolOps adaptive_eager_protocol{
    .id = Protocol::adaptive_eager,
    .name = "adaptive_eager",
    .aliases = {"adaptive-eager", "ae"},
    .first_packet = wire::kAeFirst,
    .first_overtakes = true,
    .slotted = false,
    .match_cost = &virtual_time::Params::adaptive_recv_cycles,
    .check_post = protocols::check_eager_post,
    .send = protocols::send,
    .check_first = protocols::check_first,
    .start = protocols::start,
    .accepted = protocols::finish_if_complete,
    .complete = protocols::complete,
    .packets = protocols::kPackets,
};

}  // namespace bgl::message_layer
