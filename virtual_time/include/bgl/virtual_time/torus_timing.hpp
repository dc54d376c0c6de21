#pragma once
// Re-times a packet's real route at BG/L rates: cut-through routing, the head advancing
// hop_cycles per router, every directed link busy for the packet's wire time, and a link that is
// busy making the packet wait for the next gap in its calendar.
#include <cstdint>
#include <span>

#include "bgl/torus_emu/route.hpp"
#include "bgl/torus_emu/shape.hpp"
#include "bgl/virtual_time/link_calendar.hpp"
#include "bgl/virtual_time/params.hpp"

namespace bgl::virtual_time {

class TorusTiming {
 public:
  TorusTiming() = default;
  // `calendars` has one entry per directed link, indexed node * 6 + direction; or, when
  // `calendar_of` is given (one entry per directed link), only the links that packets can cross,
  // calendar_of[node * 6 + direction] being a link's. All must outlive this object.
  TorusTiming(const Params& params, const torus_emu::Shape& shape,
              std::span<LinkCalendar> calendars, std::span<const std::uint32_t> calendar_of = {});

  bool enabled() const { return params_ != nullptr; }
  const Params& params() const { return *params_; }

  struct Transit {
    Tick arrival;  // the packet has fully arrived at the end of the route
    Tick left;     // its tail has left the source node (its injection FIFO slot is free again)
  };
  // A packet of `packet_bytes` injected at `t0` along `route`; reserves every link on the way. A
  // zero-hop route costs local_packet_cycles.
  Transit transit(const torus_emu::Route& route, Tick t0, std::uint32_t packet_bytes) const;
  // A deposit-bit line: fills arrivals[i] with the arrival at the i-th node after the source
  // (arrivals.size() == route.hops()); returns when the tail left the source.
  Tick transit_line(const torus_emu::Route& route, Tick t0, std::uint32_t packet_bytes,
                    std::span<Tick> arrivals) const;

  // transit() in two parts, for a route whose links' calendars live on two hosts: the sender
  // reserves the first `hops` links and hands on `head`, when the packet's head is at the router
  // after them; the receiver reserves the rest and adds the tail. Without contention the arrival
  // is transit()'s to the cycle. `hops` >= 1.
  struct Head {
    Tick head;  // the head reached the router after the first `hops` links
    Tick left;  // its tail has left the source node
  };
  Head transit_first(const torus_emu::Route& route, Tick t0, std::uint32_t packet_bytes,
                     int hops) const;
  Tick transit_rest(const torus_emu::Route& route, int hops, Tick head,
                    std::uint32_t packet_bytes) const;

  std::span<LinkCalendar> calendars() const { return calendars_; }

 private:
  const Params* params_ = nullptr;
  const torus_emu::Shape* shape_ = nullptr;
  LinkCalendar& calendar(torus_emu::Link l) const;

  std::span<LinkCalendar> calendars_;
  std::span<const std::uint32_t> calendar_of_;
  Tick hop_ = 0;
};

}  // namespace bgl::virtual_time
