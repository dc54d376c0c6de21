#include "bgl/collective_net_emu/global_interrupt.hpp"

#include <algorithm>
#include <new>
#include <span>
#include <stdexcept>

#include "bgl/collective_net_emu/region.hpp"
#include "bgl/virtual_time/collective_timing.hpp"
#include "rung_wait.hpp"

namespace bgl::collective_net_emu {

GlobalInterrupt::GlobalInterrupt(const job_runtime::Job& job, torus_emu::Rank rank,
                                 const job_runtime::WaitPolicy& policy)
    : job_(&job), rank_(rank), policy_(rung_waits(policy)) {
  const auto region = attach_region(job);
  const auto* h = std::launder(reinterpret_cast<const layout::RegionHeader*>(region.data()));
  if (rank >= h->ntasks) throw std::invalid_argument("rank outside the job");
  ntasks_ = h->ntasks;
  wires_ = std::launder(reinterpret_cast<layout::WireState*>(region.data() + h->wires_offset));
  region_ = region.data();
  hosts_ = h->hosts;
  host_words_ = std::launder(
      reinterpret_cast<std::atomic<std::uint64_t>*>(region.data() + h->host_words_offset));
  host_vt_ = std::launder(reinterpret_cast<std::uint64_t*>(region.data() + h->host_vt_offset));
  const auto* host_tasks =
      std::launder(reinterpret_cast<const std::uint32_t*>(region.data() + h->host_tasks_offset));
  if (hosts_ > 1) {
    host_ = job.placement().node_host[job.mapping().location(rank).node];
    region_index_ = static_cast<std::uint8_t>(job.region_index(kRegionName));
  }
  local_tasks_ = host_tasks[host_];
  for (std::uint32_t host = 0; host < hosts_; ++host)
    if (host_tasks[host] > 0) task_hosts_.push_back(host);
}

void GlobalInterrupt::forward(int channel, std::uint64_t value,
                              std::optional<virtual_time::Tick> vt) const {
  const auto& word = host_word(channel, host_);
  const auto offset = [&](const void* p) {
    return static_cast<std::uint64_t>(static_cast<const std::byte*>(p) - region_);
  };
  const std::uint64_t* at = host_vt(host_, static_cast<std::uint32_t>(value));
  for (const std::uint32_t host : task_hosts_) {
    if (host == host_) continue;
    const job_runtime::StoreRequest r{
        static_cast<std::uint16_t>(host), region_index_, vt ? offset(at) : 0, offset(&word), value,
        offset(&wires_[channel].bell)};
    job_->remote_store(
        rank_, r, vt ? std::as_bytes(std::span(&*vt, 1)) : std::span<const std::byte>{}, policy_);
  }
}

layout::WireState& GlobalInterrupt::wire(int channel) const {
  if (channel < 0 || channel >= kChannels)
    throw std::invalid_argument("global-interrupt channel " + std::to_string(channel) +
                                " is not in 0..3");
  return wires_[channel];
}

void GlobalInterrupt::set_clock(virtual_time::Clock& clock, virtual_time::Horizon horizon) {
  if (!job_->vt_params()) return;
  clock_ = &clock;
  horizon_ = horizon;
}

std::uint32_t GlobalInterrupt::arrive() {
  layout::WireState& w = wires_[kBarrierChannel];
  const bool raise = arrivals_ % 2 == 0;
  ++arrivals_;
  if (clock_) [[unlikely]] {
    // Before the count: the task that completes the barrier sees every arrival time.
    auto& latest = w.vt_arrival[arrivals_ % 2];
    virtual_time::Tick seen = latest.load(std::memory_order_relaxed);
    while (clock_->now() > seen &&
           !latest.compare_exchange_weak(seen, clock_->now(), std::memory_order_relaxed)) {
    }
  }
  // acq_rel: the completing task sees everybody's writes before their arrival and passes them on.
  const std::uint32_t before = raise ? w.raised.fetch_add(1, std::memory_order_acq_rel)
                                     : w.raised.fetch_sub(1, std::memory_order_acq_rel);
  if (hosts_ > 1) {
    // The count is this host's: its last arrival tells every host.
    if (raise ? before + 1 == local_tasks_ : before == 1) {
      // Virtual time: the host's latest arrival travels with the count (the stores of the
      // other tasks' clocks happen before their counts, which this fetch_add read).
      std::optional<virtual_time::Tick> vt;
      if (clock_) vt = w.vt_arrival[arrivals_ % 2].load(std::memory_order_relaxed);
      forward(kBarrierChannel, arrivals_, vt);
      host_word(kBarrierChannel, host_).store(arrivals_, std::memory_order_release);
      w.bell.ring();
    }
    return arrivals_;
  }
  if (raise ? before + 1 == ntasks_ : before == 1) {
    // Conservative synchronisation: the waiting tasks act again at the release, published before
    // any of them can see it.
    if (horizon_) [[unlikely]]
      horizon_.complete(
          virtual_time::event_key(virtual_time::EventKind::gi_barrier, 0, arrivals_),
          virtual_time::barrier_release(
              *job_->vt_params(), w.vt_arrival[arrivals_ % 2].load(std::memory_order_relaxed)));
    w.completed.fetch_add(1, std::memory_order_acq_rel);
    w.bell.ring();
  }
  return arrivals_;
}

bool GlobalInterrupt::test(std::uint32_t ticket) const {
  if (hosts_ > 1) {
    for (const std::uint32_t host : task_hosts_)
      if (host_word(kBarrierChannel, host).load(std::memory_order_acquire) < ticket) return false;
    return true;
  }
  const std::uint32_t done = wires_[kBarrierChannel].completed.load(std::memory_order_acquire);
  return static_cast<std::int32_t>(done - ticket) >= 0;
}

void GlobalInterrupt::wait(std::uint32_t ticket) {
  layout::WireState& w = wires_[kBarrierChannel];
  const job_runtime::wait_record::Reason reason(job_runtime::WaitKind::global_interrupt, ticket);
  sleeps_ += wait_until(
      w.bell, [&] { return test(ticket); }, policy_, meanwhile_,
      virtual_time::event_key(virtual_time::EventKind::gi_barrier, 0, ticket));
  if (clock_) [[unlikely]] {
    // Several hosts: the other hosts' latest arrivals came with their counts (test() acquired
    // them).
    virtual_time::Tick latest = w.vt_arrival[ticket % 2].load(std::memory_order_relaxed);
    if (hosts_ > 1)
      for (const std::uint32_t host : task_hosts_)
        if (host != host_) latest = std::max(latest, *host_vt(host, ticket));
    clock_->arrive(virtual_time::barrier_release(*job_->vt_params(), latest));
  }
}

void GlobalInterrupt::set_wire(int channel, bool raised) {
  if (channel == kBarrierChannel) throw std::invalid_argument("channel 0 is the barrier's");
  layout::WireState& w = wire(channel);
  const std::uint32_t bit = 1u << channel;
  if (((raised_mask_ & bit) != 0) == raised) return;
  raised_mask_ ^= bit;
  if (hosts_ > 1) {
    // One more update (high half), one more or one fewer raised input (low half); lowering
    // borrows from the update count's increment: (1 << 32) - 1.
    const std::uint64_t delta =
        raised ? (std::uint64_t{1} << 32) + 1 : (std::uint64_t{1} << 32) - 1;
    const std::uint64_t now =
        host_word(channel, host_).fetch_add(delta, std::memory_order_acq_rel) + delta;
    forward(channel, now);
    w.bell.ring();
    return;
  }
  const std::uint32_t before = raised ? w.raised.fetch_add(1, std::memory_order_acq_rel)
                                      : w.raised.fetch_sub(1, std::memory_order_acq_rel);
  const std::uint32_t after = raised ? before + 1 : before - 1;
  // Only a change of the OR or the AND can satisfy a waiter.
  const bool edge = (before == 0) != (after == 0) || (before == ntasks_) != (after == ntasks_);
  if (edge) w.bell.ring();
}

std::uint32_t GlobalInterrupt::raised_count(int channel) const {
  if (hosts_ == 1) return wire(channel).raised.load(std::memory_order_acquire);
  wire(channel);  // validates the channel
  std::uint32_t n = 0;
  for (const std::uint32_t host : task_hosts_)
    n += static_cast<std::uint32_t>(host_word(channel, host).load(std::memory_order_acquire));
  return n;
}

bool GlobalInterrupt::wire_any(int channel) const {
  return raised_count(channel) != 0;
}

bool GlobalInterrupt::wire_all(int channel) const {
  return raised_count(channel) == ntasks_;
}

bool GlobalInterrupt::shows(int channel, WireLevel level) const {
  switch (level) {
    case WireLevel::any_raised:
      return wire_any(channel);
    case WireLevel::none_raised:
      return !wire_any(channel);
    case WireLevel::all_raised:
      return wire_all(channel);
    case WireLevel::not_all:
      return !wire_all(channel);
  }
  return false;
}

void GlobalInterrupt::wait_wire(int channel, WireLevel level) {
  layout::WireState& w = wire(channel);
  const job_runtime::wait_record::Reason reason(job_runtime::WaitKind::wire,
                                                static_cast<std::uint64_t>(channel));
  sleeps_ += wait_until(
      w.bell, [&] { return shows(channel, level); }, policy_, meanwhile_);
}

}  // namespace bgl::collective_net_emu
