#pragma once
#include <array>
#include <cstdint>
#include <string_view>

namespace bgl::torus_emu {

enum class Dim : std::uint8_t { x = 0, y = 1, z = 2 };
inline constexpr int kDims = 3;

// The six outgoing links of a node, named by the direction of travel. A packet that last travelled
// in direction d arrives on the receiver's link facing -d; reception FIFOs are indexed by d.
enum class Direction : std::uint8_t { x_plus, x_minus, y_plus, y_minus, z_plus, z_minus };
inline constexpr int kDirections = 6;

constexpr Dim dim_of(Direction d) {
  return static_cast<Dim>(static_cast<int>(d) / 2);
}
constexpr int sign_of(Direction d) {
  return (static_cast<int>(d) % 2 == 0) ? +1 : -1;
}
constexpr Direction make_direction(Dim dim, int sign) {
  return static_cast<Direction>(static_cast<int>(dim) * 2 + (sign > 0 ? 0 : 1));
}
constexpr Direction opposite(Direction d) {
  return make_direction(dim_of(d), -sign_of(d));
}
constexpr int index_of(Direction d) {
  return static_cast<int>(d);
}

constexpr std::string_view to_string(Direction d) {
  constexpr std::array<std::string_view, kDirections> names{"+x", "-x", "+y", "-y", "+z", "-z"};
  return names[static_cast<std::size_t>(d)];
}
constexpr char to_char(Dim d) {
  return "xyz"[static_cast<int>(d)];
}

}  // namespace bgl::torus_emu
