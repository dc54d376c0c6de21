#include "bgl/collective_net_emu/tree_endpoint.hpp"

#include "bgl/virtual_time/collective_timing.hpp"

#include <new>
#include <stdexcept>
#include <string>
#include <utility>

#include "bgl/collective_net_emu/region.hpp"
#include "rung_wait.hpp"

namespace bgl::collective_net_emu {
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

TreeEndpoint::TreeEndpoint(const job_runtime::Job& job, torus_emu::Rank rank,
                           const job_runtime::WaitPolicy& policy)
    : job_(&job), rank_(rank), policy_(rung_waits(policy)) {
  const auto region = attach_region(job);
  region_ = region.data();
  header_ = at<const RegionHeader>(region_, 0);
  mask_ = header_->ring - 1;
  if (rank >= header_->ntasks) throw std::invalid_argument("rank outside the job");
  const auto* nodes = at<const NodeEntry>(region_, header_->nodes_offset);
  vt_levels_ = nodes[job.node_slot(job.mapping().location(rank).node)].vt_levels;
  entry_position_ = chain_of(rank, chain_);
  direct_ = chain_.empty();
  proxy_chain_.reserve(header_->height + 2);  // the longest path from a node to the root
  multi_ = header_->hosts > 1;
  host_ = host_of(rank);
  const auto* host_tasks = at<const std::uint32_t>(region_, header_->host_tasks_offset);
  local_tasks_ = host_tasks[host_];
  for (std::uint32_t h = 0; h < header_->hosts; ++h)
    if (host_tasks[h] > 0) task_hosts_.push_back(h);
  if (multi_) region_index_ = static_cast<std::uint8_t>(job.region_index(kRegionName));
  for (int c = 0; c < kCombineClasses; ++c) {
    ClassState& s = classes_[static_cast<std::size_t>(c)];
    const std::uint64_t down =
        header_->down_offset + static_cast<std::uint64_t>(c) * header_->down_stride;
    s.control = at<DownControl>(region_, down);
    s.slots = at<DownSlot>(region_, down + align_up(sizeof(DownControl), 64));
    s.up = region_ + header_->up_offset + static_cast<std::uint64_t>(c) * header_->up_stride;
    s.deferred =
        at<DeferredControl>(region_, header_->deferred_offset +
                                         static_cast<std::uint64_t>(c) * header_->deferred_stride);
    if (multi_) {
      s.partials =
          at<PartialSlot>(region_, header_->partials_offset + c * header_->partials_stride);
      s.free =
          at<std::atomic<std::uint64_t>>(region_, header_->free_offset + c * header_->free_stride);
    }
  }
  for (std::uint32_t lane = 0; lane < header_->hosts; ++lane) {
    my_lanes_.push_back(inbox(rank, lane));
    lane_heads_.push_back(my_lanes_.back().control->head.load(std::memory_order_acquire));
  }
}

std::uint8_t TreeEndpoint::chain_of(torus_emu::Rank r, std::vector<Level>& chain) const {
  chain.clear();
  const auto* nodes = at<const NodeEntry>(region_, header_->nodes_offset);
  // Where r's contributions land: its node, or the parent when the node has no other input.
  // Only nodes with tasks have entries (every tree node hosts tasks), found by their node slot.
  const NodeEntry* e = &nodes[job_->node_slot(job_->mapping().location(r).node)];
  int position = e->local_rank[0] == static_cast<std::int32_t>(r) ? 0 : 1;
  while (e->inputs == 1 && e->parent >= 0) {
    position = e->position;
    e = &nodes[job_->node_slot(static_cast<torus_emu::NodeId>(e->parent))];
  }
  if (e->inputs > 1) {
    for (;; e = &nodes[job_->node_slot(static_cast<torus_emu::NodeId>(e->parent))]) {
      chain.push_back({e->ring_offset, e->slot_stride, e->inputs, e->position});
      if (e->parent < 0) break;
    }
  }
  return static_cast<std::uint8_t>(position);
}

std::uint32_t TreeEndpoint::host_of(torus_emu::Rank r) const {
  if (header_->hosts == 1) return 0;
  return job_->placement().node_host[job_->mapping().location(r).node];
}

void TreeEndpoint::forward(const void* from, std::size_t bytes,
                           const std::atomic<std::uint64_t>* word, std::uint64_t value,
                           const job_runtime::Doorbell* bell) const {
  const job_runtime::StoreRequest base{0,
                                       region_index_,
                                       bytes ? offset_of(from) : 0,
                                       word ? offset_of(word) : job_runtime::kNoOffset,
                                       value,
                                       bell ? offset_of(bell) : job_runtime::kNoOffset};
  const std::span<const std::byte> data(static_cast<const std::byte*>(from), bytes);
  for (const std::uint32_t h : task_hosts_) {
    if (h == host_) continue;
    job_runtime::StoreRequest r = base;
    r.host = static_cast<std::uint16_t>(h);
    job_->remote_store(rank_, r, data, policy_);
  }
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
  if (direct_) {
    if (multi_) return PacketSpan(partial(s, host_, seq).data, kPacketBytes);
    return PacketSpan(down(s, seq).data, kPacketBytes);
  }
  return input(up_slot(s, chain_.front(), seq), entry_position_);
}

void TreeEndpoint::commit(RouteClass c, Seq seq, Op op) {
  ClassState& s = state(c);
  s.next_inject = seq + 1;
  ++counters_.injected;
  if (direct_) {
    if (multi_) {
      if (clock_) partial(s, host_, seq).vt = depart() + vt_levels_ * level_cycles_;
      return publish_partial(s, seq, op.code());
    }
    if (clock_) down(s, seq).vt = result_vt(s, depart());
    completed(s, seq, down(s, seq));
    return publish(s, seq, op.code(), 1);
  }
  std::byte* entry = up_slot(s, chain_.front(), seq);
  at<UpSlotMeta>(entry, 0)->op[entry_position_] = op.code();
  // Several hosts: the levels of the whole partition's tree up to its root at once; the host's
  // tree then only carries the latest of them up (arrive()).
  if (clock_) [[unlikely]]
    raise_vt(entry, depart() + (multi_ ? vt_levels_ * level_cycles_ : 0));
  arrive(s, seq, chain_);
}

// --- contributions made for other tasks ------------------------------------------------------

std::span<std::byte, kDeferredBytes> TreeEndpoint::deferred_line(RouteClass c, torus_emu::Rank r) {
  if (r >= header_->ntasks) throw std::invalid_argument("rank outside the job");
  auto* lines = reinterpret_cast<std::byte*>(state(c).deferred + 1);
  return std::span<std::byte, kDeferredBytes>(lines + std::uint64_t{r} * kDeferredBytes,
                                              kDeferredBytes);
}

bool TreeEndpoint::claim(RouteClass c, Seq seq) {
  auto& claimed = state(c).deferred->claimed;
  std::uint64_t seen = claimed.load(std::memory_order_acquire);
  while (seen < seq + 1)
    if (claimed.compare_exchange_weak(seen, seq + 1, std::memory_order_acq_rel)) return true;
  return false;
}

void TreeEndpoint::skip(RouteClass c, Seq last) {
  ClassState& s = state(c);
  if (last < s.next_inject)
    throw std::invalid_argument("sequence number " + std::to_string(last) +
                                " skipped out of order (next allowed " +
                                std::to_string(s.next_inject) + ")");
  s.next_inject = last + 1;
}

void TreeEndpoint::enter_as(torus_emu::Rank r) {
  if (!can_inject_for())
    throw std::invalid_argument("contributions for other tasks need one host and several tasks");
  if (r >= header_->ntasks) throw std::invalid_argument("rank outside the job");
  proxy_position_ = chain_of(r, proxy_chain_);
}

// Every task injected an earlier sequence number of the operation (its window is open): the
// contributor's slot is free, as for the task's own injection.
PacketSpan TreeEndpoint::reserve_for(RouteClass c, Seq seq) {
  return input(up_slot(state(c), proxy_chain_.front(), seq), proxy_position_);
}

void TreeEndpoint::commit_for(RouteClass c, Seq seq, Seq after, Op op) {
  ClassState& s = state(c);
  std::byte* entry = up_slot(s, proxy_chain_.front(), seq);
  at<UpSlotMeta>(entry, 0)->op[proxy_position_] = op.code();
  if (clock_) [[unlikely]] {
    // The task would have read the result of `after` and then written its packets for after + 1
    // up to this one.
    const auto& p = *job_->vt_params();
    raise_vt(entry, down(s, after).vt + virtual_time::Params::ticks(p.packet_read_cycles) +
                        (seq - after) * virtual_time::Params::ticks(p.packet_write_cycles));
  }
  arrive(s, seq, proxy_chain_);
}

// --- virtual time ------------------------------------------------------------------------------

void TreeEndpoint::set_clock(virtual_time::Clock& clock, virtual_time::Horizon horizon) {
  const auto* params = job_->vt_params();
  if (!params) return;
  clock_ = &clock;
  horizon_ = horizon;
  level_cycles_ = virtual_time::tree_latency(*params, 1);
  packet_cycles_ = virtual_time::tree_packet_cycles(*params);
}

virtual_time::Tick TreeEndpoint::depart() {
  clock_->charge(virtual_time::Params::ticks(job_->vt_params()->packet_write_cycles));
  return clock_->now();
}

void TreeEndpoint::raise_vt(std::byte* slot, virtual_time::Tick t) const {
  raise(at<UpSlotMeta>(slot, 0)->vt, t);
}

void TreeEndpoint::raise(std::atomic<virtual_time::Tick>& vt, virtual_time::Tick t) {
  virtual_time::Tick seen = vt.load(std::memory_order_relaxed);
  while (t > seen && !vt.compare_exchange_weak(seen, t, std::memory_order_relaxed)) {
  }
}

// Down the tree to the deepest node, then serialised behind the class's previous result: packets
// of a stream pipeline, one packet time apart.
virtual_time::Tick TreeEndpoint::result_vt(const ClassState& s, virtual_time::Tick at_root) const {
  const virtual_time::Tick candidate = at_root + header_->height * level_cycles_ + packet_cycles_;
  auto& last = s.control->vt_last;
  virtual_time::Tick prev = last.load(std::memory_order_relaxed);
  virtual_time::Tick t;
  do {
    t = std::max(candidate, prev + packet_cycles_);
  } while (!last.compare_exchange_weak(prev, t, std::memory_order_relaxed));
  return t;
}

void TreeEndpoint::take_time(const DownSlot& slot) {
  clock_->arrive(slot.vt);
  clock_->charge(virtual_time::Params::ticks(job_->vt_params()->packet_read_cycles));
}

// Counts this contribution in; whoever completes a slot combines it and carries the result on.
void TreeEndpoint::arrive(ClassState& s, Seq seq, std::span<const Level> chain) {
  for (std::size_t level = 0; level < chain.size(); ++level) {
    const Level& l = chain[level];
    std::byte* slot = up_slot(s, l, seq);
    auto* meta = at<UpSlotMeta>(slot, 0);
    if (meta->arrived.fetch_add(1, std::memory_order_acq_rel) + 1 != l.inputs) return;
    ++counters_.combines;
    // Virtual time: the combined packet leaves this node when its last input is in.
    const virtual_time::Tick out = meta->vt.exchange(0, std::memory_order_relaxed);
    if (level + 1 == chain.size() && multi_) {
      // This host's tree is complete: its partial goes to every host.
      PartialSlot& p = partial(s, host_, seq);
      const std::uint16_t code = combine_slot(slot, l.inputs, PacketSpan(p.data, kPacketBytes));
      meta->arrived.store(0, std::memory_order_relaxed);
      if (clock_) p.vt = out;
      return publish_partial(s, seq, code);
    }
    if (level + 1 == chain.size()) {
      DownSlot& d = down(s, seq);
      // The window guarantees every task has read this slot's previous result; the acquire makes
      // that visible (and would wait if a caller broke the protocol).
      if (d.writable.load(std::memory_order_acquire) != seq) wait_writable(s, seq);
      const std::uint16_t code = combine_slot(slot, l.inputs, PacketSpan(d.data, kPacketBytes));
      meta->arrived.store(0, std::memory_order_relaxed);
      if (clock_) d.vt = result_vt(s, out);
      completed(s, seq, d);
      return publish(s, seq, code, header_->ntasks);
    }
    const Level& up = chain[level + 1];
    std::byte* parent = up_slot(s, up, seq);
    const std::uint16_t code = combine_slot(slot, l.inputs, input(parent, l.position));
    meta->arrived.store(0, std::memory_order_relaxed);
    at<UpSlotMeta>(parent, 0)->op[l.position] = code;
    if (clock_) raise_vt(parent, multi_ ? out : out + level_cycles_);
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
  ring_results(s);
}

void TreeEndpoint::ring_results(ClassState& s) {
  if (!holding_rings_) {
    s.control->results.ring();
    return;
  }
  held_rings_[static_cast<std::size_t>(&s - classes_.data())] = true;
}

void TreeEndpoint::ring_held() {
  holding_rings_ = false;
  for (std::size_t i = 0; i < classes_.size(); ++i)
    if (std::exchange(held_rings_[i], false)) classes_[i].control->results.ring();
}

bool TreeEndpoint::slot_writable(const ClassState& s, Seq seq) const {
  if (!multi_) return down(s, seq).writable.load(std::memory_order_acquire) == seq;
  for (const std::uint32_t h : task_hosts_)
    if (slot_free(s, seq, h).load(std::memory_order_acquire) != seq) return false;
  return true;
}

// The slot of `seq` in partials rings 2 * ring deep is free again: this host producing seq means
// its tasks received seq - ring, so every task injected seq - ring and received seq - 2 * ring,
// which no host's task could do before its host had combined seq - 2 * ring, the slot's last
// occupant.
void TreeEndpoint::publish_partial(ClassState& s, Seq seq, std::uint16_t code) {
  PartialSlot& p = partial(s, host_, seq);
  p.op = code;
  const auto* end = reinterpret_cast<const std::byte*>(&p + 1);
  forward(&p.op, static_cast<std::size_t>(end - reinterpret_cast<const std::byte*>(&p.op)),
          &p.ready, seq + 1, &s.control->results);
  p.ready.store(seq + 1, std::memory_order_release);
  ring_results(s);
}

bool TreeEndpoint::finish_partials(ClassState& s, Seq seq) {
  for (const std::uint32_t h : task_hosts_)
    if (partial(s, h, seq).ready.load(std::memory_order_acquire) != seq + 1) return false;
  DownSlot& d = down(s, seq);
  std::uint64_t claimed = d.claimed.load(std::memory_order_relaxed);
  if (claimed == seq + 1 ||
      !d.claimed.compare_exchange_strong(claimed, seq + 1, std::memory_order_acq_rel))
    return d.published.load(std::memory_order_acquire) == seq + 1;
  // Every task of this host has read the slot's previous occupant (the window); the acquire makes
  // that visible, and would wait if a caller broke the protocol.
  auto& free = slot_free(s, seq, host_);
  if (free.load(std::memory_order_acquire) != seq)
    block(s.control->space, [&] { return free.load(std::memory_order_acquire) == seq; });
  // Combine in host order; mismatch when hosts disagree or one found a mismatch.
  const PartialSlot& first = partial(s, task_hosts_.front(), seq);
  auto code = static_cast<std::uint16_t>(first.op);
  bool agree = code != kMismatchCode && Op::from_code(code).valid();
  for (const std::uint32_t h : task_hosts_)
    agree = agree && static_cast<std::uint16_t>(partial(s, h, seq).op) == code;
  if (!agree) {
    code = kMismatchCode;
    std::memset(d.data, 0, kPacketBytes);
  } else {
    const Op op = Op::from_code(code);
    std::memcpy(d.data, first.data, kPacketBytes);
    for (std::size_t i = 1; i < task_hosts_.size(); ++i)
      combine_into(op, PacketSpan(d.data, kPacketBytes),
                   ConstPacketSpan(partial(s, task_hosts_[i], seq).data, kPacketBytes));
  }
  d.op = code;
  d.source = rank_;
  if (clock_) {
    // The partials hold their contributions' times at the whole tree's root: the latest is the
    // one host's root time.
    virtual_time::Tick at_root = 0;
    for (const std::uint32_t h : task_hosts_)
      at_root = std::max(at_root, partial(s, h, seq).vt);
    d.vt = result_vt(s, at_root);
  }
  d.readers_left.store(local_tasks_, std::memory_order_relaxed);
  d.published.store(seq + 1, std::memory_order_release);
  s.control->results.ring();
  return true;
}

// The last reader of `seq` on this host: the slot may take seq + ring as far as this host goes.
void TreeEndpoint::free_slot(ClassState& s, Seq seq) {
  if (!multi_) {
    down(s, seq).writable.store(seq + header_->ring, std::memory_order_release);
  } else {
    auto& free = slot_free(s, seq, host_);
    forward(nullptr, 0, &free, seq + header_->ring, &s.control->space);
    free.store(seq + header_->ring, std::memory_order_release);
  }
  s.control->space.ring();
}

// --- broadcast ---------------------------------------------------------------------------------

std::optional<PacketSpan> TreeEndpoint::reserve_broadcast(RouteClass c, Seq seq) {
  ClassState& s = state(c);
  if (seq != s.next_result || seq < s.next_inject)
    throw std::invalid_argument("broadcast of sequence number " + std::to_string(seq) +
                                " out of order (receive up to it first; next result " +
                                std::to_string(s.next_result) + ")");
  DownSlot& d = down(s, seq);
  if (!slot_writable(s, seq)) {
    ++counters_.window_full;
    return std::nullopt;
  }
  return PacketSpan(d.data, kPacketBytes);
}

void TreeEndpoint::commit_broadcast(RouteClass c, Seq seq) {
  ClassState& s = state(c);
  // Virtual time: up to the root, then down like a combined result.
  if (clock_) down(s, seq).vt = result_vt(s, depart() + header_->height * level_cycles_);
  if (!multi_) {
    publish(s, seq, kBroadcastCode, header_->ntasks - 1);
  } else {
    // Every host's replica of the slot gets the packet, with its own count of readers; the slot is
    // free everywhere (slot_writable), so nobody reads or writes it meanwhile.
    DownSlot& d = down(s, seq);
    d.op = kBroadcastCode;
    d.source = rank_;
    auto* image = reinterpret_cast<std::byte*>(&d.op);
    const auto bytes = static_cast<std::size_t>(reinterpret_cast<std::byte*>(&d + 1) - image);
    const auto* host_tasks = at<const std::uint32_t>(region_, header_->host_tasks_offset);
    for (const std::uint32_t h : task_hosts_) {
      if (h == host_) continue;
      d.readers_left.store(host_tasks[h], std::memory_order_relaxed);
      job_runtime::StoreRequest r{
          static_cast<std::uint16_t>(h), region_index_, offset_of(image),
          offset_of(&d.published),       seq + 1,       offset_of(&s.control->results)};
      job_->remote_store(rank_, r, {image, bytes}, policy_);
    }
    d.readers_left.store(local_tasks_ - 1, std::memory_order_relaxed);
    d.published.store(seq + 1, std::memory_order_release);
    ring_results(s);
    if (local_tasks_ == 1) free_slot(s, seq);
  }
  s.next_inject = seq + 1;
  s.next_result = seq + 1;
  ++counters_.broadcasts;
}

// --- results -----------------------------------------------------------------------------------

const DownSlot* TreeEndpoint::arrived(RouteClass c, Seq seq) {
  ClassState& s = state(c);
  if (seq != s.next_result)
    throw std::invalid_argument("results are received in order: asked for " + std::to_string(seq) +
                                ", next is " + std::to_string(s.next_result));
  return result_ready(c, seq) ? &down(s, seq) : nullptr;
}

bool TreeEndpoint::result_ready(RouteClass c, Seq seq) {
  ClassState& s = state(c);
  if (down(s, seq).published.load(std::memory_order_acquire) == seq + 1) return true;
  return multi_ && finish_partials(s, seq);
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
  if (horizon_) [[unlikely]]
    raise(d.vt_read, clock_->now());
  if (d.readers_left.fetch_sub(1, std::memory_order_acq_rel) == 1) free_slot(s, seq);
}

template <class Ready>
void TreeEndpoint::block(job_runtime::Doorbell& bell, Ready&& ready, std::uint64_t event) {
  const job_runtime::wait_record::Reason reason(job_runtime::WaitKind::tree, 0);
  counters_.sleeps += wait_until(bell, ready, policy_, meanwhile_, event);
}

void TreeEndpoint::wait_result(RouteClass c, Seq seq) {
  ClassState& s = state(c);
  block(
      s.control->results, [&] { return result_ready(c, seq); }, result_event(s, seq));
}

std::uint64_t TreeEndpoint::result_event(const ClassState& s, Seq seq) const {
  return virtual_time::event_key(virtual_time::EventKind::tree_result,
                                 static_cast<std::uint32_t>(&s - classes_.data()), seq);
}

// Conservative synchronisation: the tasks waiting for this result act again when it reaches them,
// published before anybody can read it.
void TreeEndpoint::completed(const ClassState& s, Seq seq, const DownSlot& d) {
  if (horizon_) [[unlikely]]
    horizon_.complete(result_event(s, seq), d.vt);
}

void TreeEndpoint::wait_broadcast_space(RouteClass c, Seq seq) {
  wait_writable(state(c), seq);
}

void TreeEndpoint::wait_writable(ClassState& s, Seq seq) {
  if (!horizon_) return block(s.control->space, [&] { return slot_writable(s, seq); });
  // Conservatively synchronised, the writer waits in virtual time too: until the last task read
  // the slot's previous result (which the others' bounds bound from below while it waits).
  block(
      s.control->space, [&] { return slot_writable(s, seq); },
      virtual_time::event_key(virtual_time::EventKind::tree_slot,
                              static_cast<std::uint32_t>(&s - classes_.data()), seq));
  clock_->arrive(down(s, seq).vt_read.exchange(0, std::memory_order_acq_rel));
}

// --- point-to-point class ----------------------------------------------------------------------
// Each task's inbox is a bounded multi-producer single-consumer ring (D. Vyukov's, as the packet
// layer's reception FIFO): a sequence number per slot, producers claim slots with a CAS.

TreeEndpoint::Inbox TreeEndpoint::inbox(torus_emu::Rank r, std::uint32_t lane) const {
  std::byte* base = region_ + header_->inbox_offset +
                    (std::uint64_t{r} * header_->hosts + lane) * header_->inbox_stride;
  Inbox in;
  in.control = at<InboxControl>(base, 0);
  in.seq = at<std::atomic<std::uint64_t>>(base, sizeof(InboxControl));
  in.slots =
      at<InboxSlot>(base, sizeof(InboxControl) +
                              align_up(header_->inbox * sizeof(std::atomic<std::uint64_t>), 64));
  return in;
}

// Several hosts: the senders of one host share a lane of the receiver's inbox. They claim its
// slots in their own host's replica (where that lane's tail lives), and the packet and the slot's
// sequence number are forwarded to the receiver's host; the receiver's pop is forwarded back.
// Sequence numbers only grow, as remote stores require. With one host there is one lane.
InjectStatus TreeEndpoint::send(torus_emu::Rank dest, std::uint32_t tag,
                                std::span<const std::byte> data) {
  if (dest >= header_->ntasks) throw std::invalid_argument("destination rank outside the job");
  if (dest != root_rank() && rank_ != root_rank())
    throw std::invalid_argument("the point-to-point class only connects tasks with the tree root");
  if (data.size() > kPacketBytes) throw std::invalid_argument("more than 256 bytes in a packet");
  const Inbox in = inbox(dest, host_);
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
  // The local sequence number first: once the packet is forwarded, the receiver's pop may come
  // back (raising it to pos + capacity), which a later plain store would undo.
  in.seq[pos & mask].store(pos + 1, std::memory_order_release);
  const std::uint32_t dest_host = host_of(dest);
  if (dest_host != host_) {
    // The receiver sleeps on the bell of its own host's lane.
    const job_runtime::StoreRequest r{static_cast<std::uint16_t>(dest_host),
                                      region_index_,
                                      offset_of(&slot),
                                      offset_of(&in.seq[pos & mask]),
                                      pos + 1,
                                      offset_of(&inbox(dest, dest_host).control->bell)};
    job_->remote_store(
        rank_, r,
        {reinterpret_cast<const std::byte*>(&slot), offsetof(InboxSlot, data) + data.size()},
        policy_);
  }
  in.control->bell.ring();
  return InjectStatus::ok;
}

std::optional<std::uint32_t> TreeEndpoint::lane_with_packet() const {
  const std::uint64_t mask = header_->inbox - 1;
  const auto lanes = static_cast<std::uint32_t>(my_lanes_.size());
  for (std::uint32_t k = 0; k < lanes; ++k) {
    const std::uint32_t lane = (next_lane_ + k) % lanes;
    const std::uint64_t head = lane_heads_[lane];
    if (my_lanes_[lane].seq[head & mask].load(std::memory_order_acquire) == head + 1) return lane;
  }
  return std::nullopt;
}

std::optional<Incoming> TreeEndpoint::peek_inbox() const {
  const std::uint64_t mask = header_->inbox - 1;
  const auto lane = lane_with_packet();
  if (!lane) return std::nullopt;
  peeked_lane_ = *lane;
  const InboxSlot& slot = my_lanes_[*lane].slots[lane_heads_[*lane] & mask];
  return Incoming{slot.source, slot.tag, {slot.data, slot.bytes}};
}

void TreeEndpoint::pop_inbox() {
  const std::uint64_t mask = header_->inbox - 1;
  // The packet peek_inbox() showed, even if an earlier lane has received one since.
  std::uint32_t lane = peeked_lane_;
  if (lane >= my_lanes_.size() || my_lanes_[lane].seq[lane_heads_[lane] & mask].load(
                                      std::memory_order_acquire) != lane_heads_[lane] + 1) {
    const auto found = lane_with_packet();
    if (!found) throw std::invalid_argument("pop_inbox on an empty inbox");
    lane = *found;
  }
  peeked_lane_ = ~0u;
  const Inbox& in = my_lanes_[lane];
  std::uint64_t& head = lane_heads_[lane];
  auto& seq = in.seq[head & mask];
  // Local first: the forward lets a sender of that host refill the slot, and the refill's sequence
  // number (head + capacity + 1) must not be overwritten by ours.
  seq.store(head + mask + 1, std::memory_order_release);
  if (lane != host_) forward_to(lane, &seq, head + mask + 1, &in.control->bell);
  ++head;
  in.control->head.store(head, std::memory_order_relaxed);
  in.control->bell.ring();  // a sender may wait for room (wait_send_space)
  next_lane_ = (lane + 1) % static_cast<std::uint32_t>(my_lanes_.size());
}

void TreeEndpoint::forward_to(std::uint32_t host, const std::atomic<std::uint64_t>* word,
                              std::uint64_t value, const job_runtime::Doorbell* bell) const {
  const job_runtime::StoreRequest r{
      static_cast<std::uint16_t>(host), region_index_, 0, offset_of(word), value, offset_of(bell)};
  job_->remote_store(rank_, r, {}, policy_);
}

void TreeEndpoint::wait_send_space(torus_emu::Rank dest) {
  const Inbox in = inbox(dest, host_);
  const std::uint64_t mask = header_->inbox - 1;
  block(in.control->bell, [&] {
    const std::uint64_t pos = in.control->tail.load(std::memory_order_relaxed);
    return in.seq[pos & mask].load(std::memory_order_acquire) == pos;
  });
}

void TreeEndpoint::wait_inbox() {
  block(my_lanes_[host_].control->bell, [&] { return peek_inbox().has_value(); });
}

}  // namespace bgl::collective_net_emu
