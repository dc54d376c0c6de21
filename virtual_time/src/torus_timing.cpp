#include "bgl/virtual_time/torus_timing.hpp"

#include <cassert>
#include <stdexcept>
#include <string>

namespace bgl::virtual_time {

TorusTiming::TorusTiming(const Params& params, const torus_emu::Shape& shape,
                         std::span<LinkCalendar> calendars,
                         std::span<const std::uint32_t> calendar_of)
    : params_(&params),
      shape_(&shape),
      calendars_(calendars),
      calendar_of_(calendar_of),
      hop_(Params::ticks(params.hop_cycles)) {
  assert((calendar_of.empty() ? calendars.size() : calendar_of.size()) ==
         static_cast<std::size_t>(shape.node_count()) * torus_emu::kDirections);
}

LinkCalendar& TorusTiming::calendar(torus_emu::Link l) const {
  const auto i =
      static_cast<std::size_t>(l.node) * torus_emu::kDirections + torus_emu::index_of(l.dir);
  if (calendar_of_.empty()) return calendars_[i];
  const std::uint32_t c = calendar_of_[i];
  if (c == kNoCalendar) [[unlikely]]
    throw std::logic_error("virtual time: no calendar for the link from node " +
                           std::to_string(l.node) + " towards " +
                           std::string(torus_emu::to_string(l.dir)));
  return calendars_[c];
}

// Cut-through: the head enters link i at s_i and reaches the next router hop_ later, where it may
// enter link i+1 at once if that link is free; the tail arrives one wire time after the head
// entered the last link, plus the last hop.
TorusTiming::Transit TorusTiming::transit(const torus_emu::Route& route, Tick t0,
                                          std::uint32_t packet_bytes) const {
  if (route.hops() == 0) return {t0 + Params::ticks(params_->local_packet_cycles), t0};
  const Tick wire = params_->link_cycles(packet_bytes);
  Tick head = t0;
  Tick left = 0;
  route.for_each_link(*shape_, [&](torus_emu::Link l) {
    const Tick start = calendar(l).reserve(head, wire);
    if (left == 0) left = start + wire;
    head = start + hop_;
  });
  return {head + wire, left};
}

TorusTiming::Head TorusTiming::transit_first(const torus_emu::Route& route, Tick t0,
                                             std::uint32_t packet_bytes, int hops) const {
  const Tick wire = params_->link_cycles(packet_bytes);
  Tick head = t0;
  Tick left = 0;
  int k = 0;
  route.for_each_link(*shape_, [&](torus_emu::Link l) {
    if (k++ >= hops) return;
    const Tick start = calendar(l).reserve(head, wire);
    if (left == 0) left = start + wire;
    head = start + hop_;
  });
  return {head, left};
}

Tick TorusTiming::transit_rest(const torus_emu::Route& route, int hops, Tick head,
                               std::uint32_t packet_bytes) const {
  const Tick wire = params_->link_cycles(packet_bytes);
  int k = 0;
  route.for_each_link(*shape_, [&](torus_emu::Link l) {
    if (k++ < hops) return;
    head = calendar(l).reserve(head, wire) + hop_;
  });
  return head + wire;
}

Tick TorusTiming::transit_line(const torus_emu::Route& route, Tick t0, std::uint32_t packet_bytes,
                               std::span<Tick> arrivals) const {
  const Tick wire = params_->link_cycles(packet_bytes);
  Tick head = t0;
  Tick left = t0;
  std::size_t k = 0;
  route.for_each_link(*shape_, [&](torus_emu::Link l) {
    const Tick start = calendar(l).reserve(head, wire);
    if (k == 0) left = start + wire;
    head = start + hop_;
    if (k < arrivals.size()) arrivals[k++] = head + wire;
  });
  return left;
}

}  // namespace bgl::virtual_time
