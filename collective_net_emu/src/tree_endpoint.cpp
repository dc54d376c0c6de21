#include "bgl/collnet/tree_endpoint.hpp"

#include <new>
#include <stdexcept>
#include <string>

#include "bgl/collnet/region.hpp"
#include "rung_wait.hpp"

namespace bgl::collnet {
namespace {

using namespace layout;

template <class T>
T* at(std::byte* base, std::uint64_t offset) {
  return std::launder(reinterpret_cast<T*>(base + offset));
}

PacketSpan input(std::byte* slot, int index) {
  return PacketSpan(slot + sizeof(UpSlotMeta) + static_cast<std::size_t>(index) * kPacketBytes,
                    kPacketBytes);
}

}  // namespace

TreeEndpoint::TreeEndpoint(const pkt::Machine& machine, torus::Rank rank,
                           const pkt::WaitPolicy& policy)
    : machine_(&machine), rank_(rank), policy_(rung_waits(policy)) {
  const auto region = attach_region(machine);
  region_ = region.data();
  header_ = at<const RegionHeader>(region_, 0);
  mask_ = header_->ring - 1;
  if (rank >= header_->ntasks) throw std::invalid_argument("rank outside the job");
  const auto* nodes = at<const NodeEntry>(region_, header_->nodes_offset);
  // Where this task's contributions land: its node, or the parent when the node has no other input.
  auto node = machine.mapping().location(rank).node;
  const NodeEntry* e = &nodes[node];
  int position = e->local_rank[0] == static_cast<std::int32_t>(rank) ? 0 : 1;
  while (e->inputs == 1 && e->parent >= 0) {
    position = e->position;
    node = static_cast<torus::NodeId>(e->parent);
    e = &nodes[node];
  }
  entry_position_ = static_cast<std::uint8_t>(position);
  direct_ = e->inputs == 1;
  for (; !direct_; e = &nodes[e->parent]) {
    chain_.push_back({e->ring_offset, e->slot_stride, e->inputs, e->position});
    if (e->parent < 0) break;
  }
  for (int c = 0; c < kCombineClasses; ++c) {
    ClassState& s = classes_[static_cast<std::size_t>(c)];
    const std::uint64_t down =
        header_->down_offset + static_cast<std::uint64_t>(c) * header_->down_stride;
    s.control = at<DownControl>(region_, down);
    s.slots = at<DownSlot>(region_, down + align_up(sizeof(DownControl), 64));
    s.up = region_ + header_->up_offset + static_cast<std::uint64_t>(c) * header_->up_stride;
  }
  my_inbox_ = inbox(rank);
  inbox_head_ = my_inbox_.control->head.load(std::memory_order_acquire);
}

void TreeEndpoint::copy_padded(PacketSpan dst, std::span<const std::byte> src) {
  if (src.size() > kPacketBytes)
    throw std::invalid_argument("collective network packets carry at most 256 bytes, not " +
                                std::to_string(src.size()));
  if (!src.empty()) std::memcpy(dst.data(), src.data(), src.size());
  std::memset(dst.data() + src.size(), 0, kPacketBytes - src.size());
}

std::size_t TreeEndpoint::class_index(RouteClass c) {
  const auto i = static_cast<std::size_t>(c);
  if (i >= kCombineClasses) throw std::invalid_argument("not a combining route class");
  return i;
}

// --- reductions --------------------------------------------------------------------------------

std::optional<PacketSpan> TreeEndpoint::reserve(RouteClass c, Seq seq, Op op) {
  const ClassState& s = state(c);
  if (!op.valid())
    throw std::invalid_argument("invalid collective network operation " + to_string(op));
  if (seq < s.next_inject)
    throw std::invalid_argument("sequence number " + std::to_string(seq) +
                                " injected out of order (next allowed " +
                                std::to_string(s.next_inject) + ")");
  if (seq >= s.next_result + header_->ring) {
    ++counters_.window_full;
    return std::nullopt;
  }
  if (direct_) return PacketSpan(down(s, seq).data, kPacketBytes);
  return input(up_slot(s, chain_.front(), seq), entry_position_);
}

void TreeEndpoint::commit(RouteClass c, Seq seq, Op op) {
  ClassState& s = state(c);
  s.next_inject = seq + 1;
  ++counters_.injected;
  if (direct_) return publish(s, seq, op.code(), 1);
  at<UpSlotMeta>(up_slot(s, chain_.front(), seq), 0)->op[entry_position_] = op.code();
  arrive(s, seq);
}

// Counts this contribution in; whoever completes a slot combines it and carries the result on.
void TreeEndpoint::arrive(ClassState& s, Seq seq) {
  for (std::size_t level = 0; level < chain_.size(); ++level) {
    const Level& l = chain_[level];
    std::byte* slot = up_slot(s, l, seq);
    auto* meta = at<UpSlotMeta>(slot, 0);
    if (meta->arrived.fetch_add(1, std::memory_order_acq_rel) + 1 != l.inputs) return;
    ++counters_.combines;
    if (level + 1 == chain_.size()) {
      DownSlot& d = down(s, seq);
      // The window guarantees every task has read this slot's previous result; the acquire makes
      // that visible (and would wait if a caller broke the protocol).
      if (d.writable.load(std::memory_order_acquire) != seq) wait_writable(s, seq);
      const std::uint16_t code = combine_slot(slot, l.inputs, PacketSpan(d.data, kPacketBytes));
      meta->arrived.store(0, std::memory_order_relaxed);
      return publish(s, seq, code, header_->ntasks);
    }
    const Level& up = chain_[level + 1];
    std::byte* parent = up_slot(s, up, seq);
    const std::uint16_t code = combine_slot(slot, l.inputs, input(parent, l.position));
    meta->arrived.store(0, std::memory_order_relaxed);
    at<UpSlotMeta>(parent, 0)->op[l.position] = code;
  }
}

// dst = inputs combined in index order; the operation code they agreed on, or kMismatchCode.
std::uint16_t TreeEndpoint::combine_slot(std::byte* slot, int inputs, PacketSpan dst) {
  const auto* meta = at<const UpSlotMeta>(slot, 0);
  const std::uint16_t code = meta->op[0];
  bool agree = code != kMismatchCode && Op::from_code(code).valid();
  for (int i = 1; i < inputs; ++i)
    agree = agree && meta->op[i] == code;
  if (!agree) {
    std::memset(dst.data(), 0, kPacketBytes);
    return kMismatchCode;
  }
  const Op op = Op::from_code(code);
  combine(op, dst, input(slot, 0), input(slot, 1));
  for (int i = 2; i < inputs; ++i)
    combine_into(op, dst, input(slot, i));
  return code;
}

void TreeEndpoint::publish(ClassState& s, Seq seq, std::uint16_t code, std::uint32_t readers) {
  DownSlot& d = down(s, seq);
  d.op = code;
  d.source = rank_;
  d.readers_left.store(readers, std::memory_order_relaxed);
  d.published.store(seq + 1, std::memory_order_release);
  if (readers == 0) d.writable.store(seq + header_->ring, std::memory_order_release);
  s.control->results.ring();
}

// --- broadcast ---------------------------------------------------------------------------------

std::optional<PacketSpan> TreeEndpoint::reserve_broadcast(RouteClass c, Seq seq) {
  ClassState& s = state(c);
  if (seq != s.next_result || seq < s.next_inject)
    throw std::invalid_argument("broadcast of sequence number " + std::to_string(seq) +
                                " out of order (receive up to it first; next result " +
                                std::to_string(s.next_result) + ")");
  DownSlot& d = down(s, seq);
  if (d.writable.load(std::memory_order_acquire) != seq) {
    ++counters_.window_full;
    return std::nullopt;
  }
  return PacketSpan(d.data, kPacketBytes);
}

void TreeEndpoint::commit_broadcast(RouteClass c, Seq seq) {
  ClassState& s = state(c);
  publish(s, seq, kBroadcastCode, header_->ntasks - 1);
  s.next_inject = seq + 1;
  s.next_result = seq + 1;
  ++counters_.broadcasts;
}

// --- results -----------------------------------------------------------------------------------

const DownSlot* TreeEndpoint::arrived(RouteClass c, Seq seq) const {
  const ClassState& s = state(c);
  if (seq != s.next_result)
    throw std::invalid_argument("results are received in order: asked for " + std::to_string(seq) +
                                ", next is " + std::to_string(s.next_result));
  const DownSlot& d = down(s, seq);
  return d.published.load(std::memory_order_acquire) == seq + 1 ? &d : nullptr;
}

bool TreeEndpoint::result_ready(RouteClass c, Seq seq) const {
  return down(state(c), seq).published.load(std::memory_order_acquire) == seq + 1;
}

Result TreeEndpoint::describe(const DownSlot& slot, Seq seq) const {
  Result r;
  r.seq = seq;
  r.broadcast = slot.op == kBroadcastCode;
  r.source = slot.source;
  if (slot.op == kMismatchCode)
    r.status = Status::mismatch;
  else if (!r.broadcast)
    r.op = Op::from_code(slot.op);
  return r;
}

void TreeEndpoint::release(RouteClass c, Seq seq) {
  ClassState& s = state(c);
  DownSlot& d = down(s, seq);
  ++s.next_result;
  ++counters_.received;
  if (d.readers_left.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    d.writable.store(seq + header_->ring, std::memory_order_release);
    s.control->space.ring();
  }
}

template <class Ready>
void TreeEndpoint::block(pkt::Doorbell& bell, Ready&& ready) {
  counters_.sleeps += wait_until(bell, ready, policy_, meanwhile_);
}

void TreeEndpoint::wait_result(RouteClass c, Seq seq) {
  ClassState& s = state(c);
  block(s.control->results, [&] { return result_ready(c, seq); });
}

void TreeEndpoint::wait_broadcast_space(RouteClass c, Seq seq) {
  wait_writable(state(c), seq);
}

void TreeEndpoint::wait_writable(ClassState& s, Seq seq) {
  const DownSlot& d = down(s, seq);
  block(s.control->space, [&] { return d.writable.load(std::memory_order_acquire) == seq; });
}

// --- point-to-point class ----------------------------------------------------------------------
// Each task's inbox is a bounded multi-producer single-consumer ring (D. Vyukov's, as the packet
// layer's reception FIFO): a sequence number per slot, producers claim slots with a CAS.

TreeEndpoint::Inbox TreeEndpoint::inbox(torus::Rank r) const {
  std::byte* base = region_ + header_->inbox_offset + std::uint64_t{r} * header_->inbox_stride;
  Inbox in;
  in.control = at<InboxControl>(base, 0);
  in.seq = at<std::atomic<std::uint64_t>>(base, sizeof(InboxControl));
  in.slots =
      at<InboxSlot>(base, sizeof(InboxControl) +
                              align_up(header_->inbox * sizeof(std::atomic<std::uint64_t>), 64));
  return in;
}

InjectStatus TreeEndpoint::send(torus::Rank dest, std::uint32_t tag,
                                std::span<const std::byte> data) {
  if (dest >= header_->ntasks) throw std::invalid_argument("destination rank outside the job");
  if (dest != root_rank() && rank_ != root_rank())
    throw std::invalid_argument("the point-to-point class only connects tasks with the tree root");
  if (data.size() > kPacketBytes) throw std::invalid_argument("more than 256 bytes in a packet");
  const Inbox in = inbox(dest);
  const std::uint64_t mask = header_->inbox - 1;
  std::uint64_t pos = in.control->tail.load(std::memory_order_relaxed);
  for (;;) {
    const auto diff =
        static_cast<std::int64_t>(in.seq[pos & mask].load(std::memory_order_acquire) - pos);
    if (diff < 0) return InjectStatus::full;
    if (diff == 0 &&
        in.control->tail.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed))
      break;
    if (diff > 0) pos = in.control->tail.load(std::memory_order_relaxed);
  }
  InboxSlot& slot = in.slots[pos & mask];
  slot.source = rank_;
  slot.tag = tag;
  slot.bytes = static_cast<std::uint32_t>(data.size());
  if (!data.empty()) std::memcpy(slot.data, data.data(), data.size());
  in.seq[pos & mask].store(pos + 1, std::memory_order_release);
  in.control->bell.ring();
  return InjectStatus::ok;
}

std::optional<Incoming> TreeEndpoint::peek_inbox() const {
  const std::uint64_t mask = header_->inbox - 1;
  if (my_inbox_.seq[inbox_head_ & mask].load(std::memory_order_acquire) != inbox_head_ + 1)
    return std::nullopt;
  const InboxSlot& slot = my_inbox_.slots[inbox_head_ & mask];
  return Incoming{slot.source, slot.tag, {slot.data, slot.bytes}};
}

void TreeEndpoint::pop_inbox() {
  const std::uint64_t mask = header_->inbox - 1;
  if (!peek_inbox()) throw std::invalid_argument("pop_inbox on an empty inbox");
  my_inbox_.seq[inbox_head_ & mask].store(inbox_head_ + mask + 1, std::memory_order_release);
  ++inbox_head_;
  my_inbox_.control->head.store(inbox_head_, std::memory_order_relaxed);
  my_inbox_.control->bell.ring();  // a sender may wait for room (wait_send_space)
}

void TreeEndpoint::wait_send_space(torus::Rank dest) {
  const Inbox in = inbox(dest);
  const std::uint64_t mask = header_->inbox - 1;
  block(in.control->bell, [&] {
    const std::uint64_t pos = in.control->tail.load(std::memory_order_relaxed);
    return in.seq[pos & mask].load(std::memory_order_acquire) == pos;
  });
}

void TreeEndpoint::wait_inbox() {
  block(my_inbox_.control->bell, [&] { return peek_inbox().has_value(); });
}

}  // namespace bgl::collnet
