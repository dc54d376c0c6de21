#pragma once
// The outcome of a collective-network operation, per packet or per call. Hot paths return it
// instead of throwing: a caller that gets anything but ok falls back (e.g. to a torus algorithm).
#include <algorithm>
#include <cstdint>
#include <string_view>

namespace bgl::collective_net_emu {

// Ordered by severity; combining statuses keeps the most severe.
enum class Status : std::uint8_t {
  ok,
  overflow,    // finite inputs whose exact sum is beyond the double range (values are +-inf)
  not_finite,  // a NaN or an infinity took part (values are the IEEE answer: NaN or +-inf)
  mismatch,    // tasks contributed different operations to the same sequence number
};

constexpr Status worst(Status a, Status b) {
  return std::max(a, b);
}

constexpr std::string_view to_string(Status s) {
  switch (s) {
    case Status::ok:
      return "ok";
    case Status::overflow:
      return "overflow";
    case Status::not_finite:
      return "not_finite";
    case Status::mismatch:
      return "mismatch";
  }
  return "?";
}

}  // namespace bgl::collective_net_emu
