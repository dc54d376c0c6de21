#include "bgl/torus_emu/shape.hpp"

#include <charconv>
#include <string>

#include "bgl/torus_emu/error.hpp"
#include "bgl/torus_emu/user_text.hpp"

namespace bgl::torus_emu {

namespace {

constexpr std::array<Dim, kDims> kAllDims{Dim::x, Dim::y, Dim::z};

// Empty when the extent is acceptable; shared by the constructor and parse() so that both report
// the same sentence.
std::string extent_problem(Dim d, int extent) {
  if (extent >= 1 && extent <= Shape::kMaxExtent) return {};
  return std::string("extent of ") + to_char(d) + " must be 1.." +
         std::to_string(Shape::kMaxExtent) + ", got " + std::to_string(extent);
}

std::string quoted(std::string_view s) {
  return "\"" + printable(s) + "\"";
}

}  // namespace

std::string to_string(Coord c) {
  return "(" + std::to_string(c.x) + "," + std::to_string(c.y) + "," + std::to_string(c.z) + ")";
}

Shape::Shape(std::array<int, kDims> extent, std::array<bool, kDims> torus)
    : extent_(extent), torus_(torus) {
  for (Dim d : kAllDims) {
    if (auto problem = extent_problem(d, extent_[static_cast<int>(d)]); !problem.empty()) {
      throw ConfigError("shape " + problem);
    }
  }
}

Shape Shape::parse(std::string_view text, std::string_view mesh_dims) {
  const std::string where = "shape " + quoted(text) + ": ";
  std::array<int, kDims> extent{};
  std::string_view rest = text;
  for (Dim d : kAllDims) {
    const auto i = static_cast<std::size_t>(d);
    const std::size_t sep = rest.find('x');
    const bool last = i + 1 == kDims;
    if (last != (sep == std::string_view::npos)) {
      throw ConfigError(where + "expected three extents written as XxYxZ, e.g. \"4x4x2\"");
    }
    const std::string_view token = last ? rest : rest.substr(0, sep);
    int value = 0;
    const auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), value);
    if (token.empty() || ec == std::errc::invalid_argument || end != token.data() + token.size()) {
      throw ConfigError(where + "extent of " + to_char(d) + " is not a number: " + quoted(token));
    }
    if (ec == std::errc::result_out_of_range) {
      throw ConfigError(where + "extent of " + to_char(d) + " must be 1.." +
                        std::to_string(kMaxExtent) + ", got " + printable(token) +
                        " (out of range)");
    }
    if (auto problem = extent_problem(d, value); !problem.empty()) {
      throw ConfigError(where + problem);
    }
    extent[i] = value;
    if (!last) rest.remove_prefix(sep + 1);
  }

  std::array<bool, kDims> torus{true, true, true};
  for (char c : mesh_dims) {
    const std::size_t i = std::string_view("xyz").find(c);
    if (i == std::string_view::npos) {
      throw ConfigError("mesh dimensions " + quoted(mesh_dims) + ": '" +
                        printable(std::string_view(&c, 1)) + "' is not one of x, y, z");
    }
    if (!torus[i]) {
      throw ConfigError("mesh dimensions " + quoted(mesh_dims) + ": '" +
                        printable(std::string_view(&c, 1)) + "' is listed twice");
    }
    torus[i] = false;
  }
  return Shape(extent, torus);
}

bool Shape::contains(Coord c) const {
  for (Dim d : kAllDims) {
    if (c[d] < 0 || c[d] >= extent(d)) return false;
  }
  return true;
}

Coord Shape::coord(NodeId id) const {
  const auto x_extent = static_cast<NodeId>(extent_[0]);
  const auto y_extent = static_cast<NodeId>(extent_[1]);
  return Coord{static_cast<int>(id % x_extent), static_cast<int>(id / x_extent % y_extent),
               static_cast<int>(id / x_extent / y_extent)};
}

std::optional<NodeId> Shape::neighbour(NodeId node, Direction d) const {
  const Dim dim = dim_of(d);
  const int k = extent(dim);
  // An extent-1 dimension has no cable at all, even when nominally a torus: no self-loops.
  if (k == 1) return std::nullopt;
  Coord c = coord(node);
  int v = c[dim] + sign_of(d);
  if (v < 0 || v >= k) {
    if (!is_torus(dim)) return std::nullopt;
    v = (v + k) % k;
  }
  c[dim] = v;
  return node_id(c);
}

std::string Shape::to_string() const {
  std::string s = std::to_string(extent_[0]) + "x" + std::to_string(extent_[1]) + "x" +
                  std::to_string(extent_[2]);
  std::string mesh;
  for (Dim d : kAllDims) {
    if (!is_torus(d)) mesh += to_char(d);
  }
  if (!mesh.empty()) s += " mesh:" + mesh;
  return s;
}

}  // namespace bgl::torus_emu
