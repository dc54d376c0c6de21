// Coprocessor mode: the communication unit that receives rendezvous data on the coprocessor's own
// FIFO group, and the main task's side of it (completion after the software-coherence step).
#include <cstring>
#include <stdexcept>
#include <string>

#include "bgl/job_runtime/log.hpp"
#include "engine.hpp"

namespace bgl::message_layer {
namespace {

constexpr std::uint32_t slot_index(std::uint32_t id) {
  return id & (SlotTable<int>::kMaxCapacity - 1);
}
constexpr std::uintptr_t kCoherenceLine = 32;  // BG/L's L1 line: the unit of software coherence

}  // namespace

MessageLayer::Engine::~Engine() = default;

const Statistics& MessageLayer::Engine::statistics() const {
  stats_.malformed_packets = malformed_packets_ + co_malformed_.load(std::memory_order_relaxed);
  return stats_;
}

// malformed() for the coprocessor's thread: its own count and log limit.
void MessageLayer::Engine::co_malformed(const packet_layer::PacketHeader& h, const char* why) {
  const std::uint64_t count = co_malformed_.fetch_add(1, std::memory_order_relaxed) + 1;
  co_malformed_log_.report(rank(), " (coprocessor)", count, [&] {
    spdlog::error("rank {} (coprocessor): discarding packet from rank {}: {} [{}]", rank(),
                  h.source_rank(), why, h.describe());
  });
}

void MessageLayer::Engine::start_coprocessor() {
  const auto& machine = ep_.machine();
  co_policy_ = job_runtime::WaitPolicy::for_job(size_ + 1, machine.job().vt_params() != nullptr);
  co_table_ = std::make_unique<CoReceive[]>(config_.max_receives);
  co_active_.reserve(config_.max_receives);
  auto& bell = machine.doorbell(ep_.node(), 1);
  coprocessor_ = std::make_unique<Coprocessor>(bell, co_policy_);
  if (!config_.coprocessor_receive) return;
  co_endpoint_ = std::make_unique<packet_layer::Endpoint>(machine, ep_.rank(), 1, co_policy_);
  co_unit_ = coprocessor_->add_permanent(
      [](void* self) { return static_cast<Engine*>(self)->coprocessor_receive(); },
      [](void* self) { return static_cast<Engine*>(self)->co_endpoint_->poll_ready(); }, this);
}

// The paper's condition: contiguous and cache-line aligned (and here: large enough for the data).
bool MessageLayer::Engine::coprocessor_eligible(const RecvState& r) const {
  return co_endpoint_ && r.bytes > 0 && r.target.kind == RecvTarget::Kind::buffer &&
         r.target.buffer.size() >= r.bytes &&
         reinterpret_cast<std::uintptr_t>(r.target.buffer.data()) % kCoherenceLine == 0;
}

std::uint32_t MessageLayer::Engine::data_group_for(RecvState& r, std::uint32_t id) {
  if (!coprocessor_eligible(r)) return static_cast<std::uint32_t>(ep_.group());  // t in VN mode
  CoReceive& d = co_table_[slot_index(id)];
  d.buffer = r.target.buffer.data();
  d.bytes = r.bytes;
  d.received.store(0, std::memory_order_relaxed);
  charge(&virtual_time::Params::coprocessor_unit_cycles);  // posting the work unit
  d.vt_posted = vt_ ? ep_.clock().now() : 0;
  d.id.store(id, std::memory_order_release);  // published before the ack can bring data
  r.on_coprocessor = true;
  co_active_.push_back(id);
  ++stats_.coprocessor_messages;
  return 1;
}

// The coprocessor's own clock: it starts a receive no earlier than it was handed over, and charges
// each data packet's handling as the main task would (reading the packet, which its endpoint
// charges, puts the data in place: there is no further copy).
void MessageLayer::Engine::co_charge(CoReceive& d, bool last) {
  auto& clock = co_endpoint_->clock();
  clock.arrive(d.vt_posted);
  clock.charge(virtual_time::Params::ticks(vt_->rzv_data_cycles));
  if (last) d.vt_done = clock.now();
}

bool MessageLayer::Engine::coprocessor_receive() {
  bool worked = false;
  for (int budget = kBudget; budget > 0; --budget) {
    const auto f = co_endpoint_->poll();
    if (!f) break;
    const packet_layer::PacketHeader& h = co_endpoint_->peek(*f);
    const auto payload = co_endpoint_->payload(*f);
    CoReceive* d = h.dispatch == wire::kRzvData && payload.size() >= wire::kRzvIndexBytes &&
                           slot_index(h.word) < config_.max_receives
                       ? &co_table_[slot_index(h.word)]
                       : nullptr;
    if (!d || d->id.load(std::memory_order_acquire) != h.word) {
      co_malformed(h, "coprocessor FIFO packet for no coprocessor receive");
    } else {
      // The descriptor is ours until the last byte is in: the main task reuses it only after it
      // sees `received` reach `bytes`, so nothing of it may be read after that store.
      const std::uint64_t bytes = d->bytes;
      const std::uint64_t before = d->received.load(std::memory_order_relaxed);  // we write it
      const std::uint64_t offset =
          std::uint64_t{wire::load<std::uint32_t>(payload)} * wire::kRzvChunk;
      const auto data = payload.subspan(wire::kRzvIndexBytes);
      if (offset + data.size() > bytes || before + data.size() > bytes) {
        co_malformed(h, "coprocessor data beyond the message");
      } else {
        std::memcpy(d->buffer + offset, data.data(), data.size());
        co_packets_.fetch_add(1, std::memory_order_relaxed);
        const bool last = before + data.size() == bytes;
        if (vt_) [[unlikely]]
          co_charge(*d, last);
        // Retired before completion is published: a stray packet naming this receive later
        // (duplicate, forged) finds no descriptor instead of a buffer the task has reused.
        if (last) d->id.store(kNone, std::memory_order_relaxed);
        // Releases our writes; the main task completes the message when it sees the total.
        d->received.store(before + data.size(), std::memory_order_release);
        if (last) ep_.machine().doorbell(ep_.node(), ep_.group()).ring();
      }
    }
    co_endpoint_->discard(*f);
    worked = true;
  }
  return worked;
}

bool MessageLayer::Engine::coprocessor_complete() {
  // Receives handed to a communication unit that died would wait for ever: say so instead.
  if (co_endpoint_ && coprocessor_->permanent_failed(co_unit_))
    throw std::runtime_error("rank " + std::to_string(rank()) +
                             ": the coprocessor's communication unit failed (" +
                             coprocessor_->permanent_error(co_unit_) + "); " +
                             std::to_string(co_active_.size()) + " receives cannot complete");
  bool progress = false;
  for (std::size_t i = 0; i < co_active_.size();) {
    const std::uint32_t id = co_active_[i];
    CoReceive& d = co_table_[slot_index(id)];
    if (d.received.load(std::memory_order_acquire) != d.bytes) {
      ++i;
      continue;
    }
    // The software-coherence step: make the coprocessor's writes visible to this processor. On
    // BG/L both cores flush/invalidate the buffer's L1 lines; here an acquire fence, counted.
    std::atomic_thread_fence(std::memory_order_acquire);
    ++stats_.coherence_operations;  // (the coprocessor has retired d.id already)
    co_active_[i] = co_active_.back();
    co_active_.pop_back();
    stats_.coprocessor_packets = co_packets_.load(std::memory_order_relaxed);
    if (vt_) [[unlikely]]
      ep_.clock().arrive(d.vt_done);
    RecvState& r = *recvs_.find(id);
    r.received = r.bytes;
    complete(id, r);
    progress = true;
  }
  return progress;
}

}  // namespace bgl::message_layer
