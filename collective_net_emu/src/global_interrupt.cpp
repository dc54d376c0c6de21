#include "bgl/collnet/global_interrupt.hpp"

#include <new>
#include <stdexcept>

#include "bgl/collnet/region.hpp"
#include "rung_wait.hpp"

namespace bgl::collnet {

GlobalInterrupt::GlobalInterrupt(const pkt::Machine& machine, torus::Rank rank,
                                 const pkt::WaitPolicy& policy)
    : policy_(rung_waits(policy)) {
  const auto region = attach_region(machine);
  const auto* h = std::launder(reinterpret_cast<const layout::RegionHeader*>(region.data()));
  if (rank >= h->ntasks) throw std::invalid_argument("rank outside the job");
  ntasks_ = h->ntasks;
  wires_ = std::launder(reinterpret_cast<layout::WireState*>(region.data() + h->wires_offset));
}

layout::WireState& GlobalInterrupt::wire(int channel) const {
  if (channel < 0 || channel >= kChannels)
    throw std::invalid_argument("global-interrupt channel " + std::to_string(channel) +
                                " is not in 0..3");
  return wires_[channel];
}

std::uint32_t GlobalInterrupt::arrive() {
  layout::WireState& w = wires_[kBarrierChannel];
  const bool raise = arrivals_ % 2 == 0;
  ++arrivals_;
  // acq_rel: the completing task sees everybody's writes before their arrival and passes them on.
  const std::uint32_t before = raise ? w.raised.fetch_add(1, std::memory_order_acq_rel)
                                     : w.raised.fetch_sub(1, std::memory_order_acq_rel);
  if (raise ? before + 1 == ntasks_ : before == 1) {
    w.completed.fetch_add(1, std::memory_order_acq_rel);
    w.bell.ring();
  }
  return arrivals_;
}

bool GlobalInterrupt::test(std::uint32_t ticket) const {
  const std::uint32_t done = wires_[kBarrierChannel].completed.load(std::memory_order_acquire);
  return static_cast<std::int32_t>(done - ticket) >= 0;
}

void GlobalInterrupt::wait(std::uint32_t ticket) {
  layout::WireState& w = wires_[kBarrierChannel];
  sleeps_ += wait_until(
      w.bell, [&] { return test(ticket); }, policy_, meanwhile_);
}

void GlobalInterrupt::set_wire(int channel, bool raised) {
  if (channel == kBarrierChannel) throw std::invalid_argument("channel 0 is the barrier's");
  layout::WireState& w = wire(channel);
  const std::uint32_t bit = 1u << channel;
  if (((raised_mask_ & bit) != 0) == raised) return;
  raised_mask_ ^= bit;
  const std::uint32_t before = raised ? w.raised.fetch_add(1, std::memory_order_acq_rel)
                                      : w.raised.fetch_sub(1, std::memory_order_acq_rel);
  const std::uint32_t after = raised ? before + 1 : before - 1;
  // Only a change of the OR or the AND can satisfy a waiter.
  const bool edge = (before == 0) != (after == 0) || (before == ntasks_) != (after == ntasks_);
  if (edge) w.bell.ring();
}

bool GlobalInterrupt::wire_any(int channel) const {
  return wire(channel).raised.load(std::memory_order_acquire) != 0;
}

bool GlobalInterrupt::wire_all(int channel) const {
  return wire(channel).raised.load(std::memory_order_acquire) == ntasks_;
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
  sleeps_ += wait_until(
      w.bell, [&] { return shows(channel, level); }, policy_, meanwhile_);
}

}  // namespace bgl::collnet
