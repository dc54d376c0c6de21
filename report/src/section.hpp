#pragma once
// The report's sections. Each is a Section made by one function `<name>_section()` in
// sections/<name>.cpp; report/CMakeLists.txt lists them in page order (BGL_REPORT_SECTIONS) and
// generates the table all_sections() returns. A new section is one file and one line there.
#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "view.hpp"

namespace bgl::report {

constexpr int kDirections = 6;
constexpr std::array<std::string_view, kDirections> kDirectionNames{"+x", "-x", "+y",
                                                                    "-y", "+z", "-z"};

// The partition's shape, read from the job's "shape" ("8x8x8", "4x4x2 mesh:z").
struct Geometry {
  std::array<int, 3> extent{1, 1, 1};
  std::array<bool, 3> torus{true, true, true};

  int nodes() const { return extent[0] * extent[1] * extent[2]; }
  int node_id(std::array<int, 3> c) const { return c[0] + extent[0] * (c[1] + extent[1] * c[2]); }
  std::array<int, 3> coord(int node) const {
    return {node % extent[0], node / extent[0] % extent[1], node / (extent[0] * extent[1])};
  }
};

// One directed link's traffic: from "links" (every run) and "virtual_time"/"links".
struct LinkLoad {
  std::uint64_t packets = 0;
  std::uint64_t bytes = 0;
  std::uint64_t busy_cycles = 0;
  double utilisation = 0;
};

// What every section may read: the statistics and the views derived from them once.
struct Context {
  View root;
  Geometry geometry;
  std::vector<LinkLoad> links;               // node * 6 + direction
  std::vector<std::vector<int>> node_ranks;  // ranks per node, by t
  std::optional<View> virtual_time;
  double cpu_hz = 700e6;  // from the virtual-time parameters when present

  static Context make(const View& root);
  static std::string link_name(const Geometry& g, std::size_t index);
};

struct Section {
  std::string_view id;     // the anchor and the element id of the section
  std::string_view title;  // its heading and its entry in the page's contents
  // Appends the section's body to `out`; false when the statistics hold nothing for it (then the
  // section is left out of the page).
  bool (*render)(const Context& context, std::string& out);
};

std::span<const Section> all_sections();

}  // namespace bgl::report
