#include <charconv>

#include "html.hpp"
#include "section.hpp"

namespace bgl::report {
namespace {

Geometry parse_shape(const View& shape) {
  const std::string text = shape.text();
  Geometry g;
  std::string_view rest = text;
  for (int d = 0; d < 3; ++d) {
    int value = 0;
    const auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), value);
    if (ec != std::errc() || value < 1 || value > 64)
      shape.fail("expected a shape such as \"8x8x8\" (extents 1..64), found \"" +
                 printable_text(text) + "\"");
    rest.remove_prefix(static_cast<std::size_t>(end - rest.data()));
    if (d < 2) {
      if (rest.empty() || rest.front() != 'x')
        shape.fail("expected a shape such as \"8x8x8\", found \"" + printable_text(text) + "\"");
      rest.remove_prefix(1);
    }
    g.extent[static_cast<std::size_t>(d)] = value;
  }
  if (rest.starts_with(" mesh:")) {
    for (const char c : rest.substr(6)) {
      const auto d = std::string_view("xyz").find(c);
      if (d == std::string_view::npos)
        shape.fail("unknown mesh dimension in \"" + printable_text(text) + "\"");
      g.torus[d] = false;
    }
  } else if (!rest.empty()) {
    shape.fail("unexpected text after the shape in \"" + printable_text(text) + "\"");
  }
  return g;
}

// The index of a link entry {"node": [x, y, z], "dir": "+x"}.
std::size_t link_index(const Geometry& g, const View& link) {
  const auto node = link["node"];
  const auto c = node.coord();
  for (std::size_t d = 0; d < 3; ++d)
    if (c[d] >= g.extent[d])
      node.fail("node (" + std::to_string(c[0]) + "," + std::to_string(c[1]) + "," +
                std::to_string(c[2]) + ") is outside the partition");
  const auto dir = link["dir"];
  const std::string name = dir.text();
  for (std::size_t d = 0; d < kDirectionNames.size(); ++d)
    if (name == kDirectionNames[d]) return static_cast<std::size_t>(g.node_id(c)) * kDirections + d;
  dir.fail("expected a direction (+x, -x, +y, -y, +z, -z), found \"" + printable_text(name) + "\"");
}

}  // namespace

Context Context::make(const View& root) {
  Context c{root, parse_shape(root["job"]["shape"]), {}, {}, root.find("virtual_time")};
  const auto& g = c.geometry;
  c.links.resize(static_cast<std::size_t>(g.nodes()) * kDirections);
  if (auto links = root.find("links"))
    for (const auto& l : links->elements()) {
      auto& load = c.links[link_index(g, l)];
      load.packets = l["packets"].count();
      load.bytes = l["bytes"].count();
    }
  if (c.virtual_time) {
    for (const auto& l : (*c.virtual_time)["links"].elements()) {
      auto& load = c.links[link_index(g, l)];
      load.busy_cycles = l["busy_cycles"].count();
      load.utilisation = l["utilisation"].number();
    }
    if (auto p = c.virtual_time->find("parameters"))
      if (auto hz = p->find("cpu_hz")) c.cpu_hz = (*hz)["value"].number();
    if (c.cpu_hz <= 0) c.cpu_hz = 700e6;
  }
  c.node_ranks.resize(static_cast<std::size_t>(g.nodes()));
  for (const auto& t : root["tasks"].elements()) {
    const auto node = t["node"];
    const auto xyz = node.coord();
    for (std::size_t d = 0; d < 3; ++d)
      if (xyz[d] >= g.extent[d]) node.fail("the task's node is outside the partition");
    c.node_ranks[static_cast<std::size_t>(g.node_id(xyz))].push_back(
        static_cast<int>(t["rank"].integer()));
  }
  return c;
}

std::string Context::link_name(const Geometry& g, std::size_t index) {
  const auto c = g.coord(static_cast<int>(index / kDirections));
  return "(" + std::to_string(c[0]) + "," + std::to_string(c[1]) + "," + std::to_string(c[2]) +
         ")" + std::string(kDirectionNames[index % kDirections]);
}

}  // namespace bgl::report
