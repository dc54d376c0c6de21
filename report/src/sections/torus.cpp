// The torus: every node and every directed link, planes of constant z side by side, links
// coloured by bytes or (virtual time) by utilisation. Links in z leave a node diagonally: up and
// right (+z, towards the next plane) or down and left (-z).
#include <algorithm>
#include <cmath>

#include "html.hpp"
#include "section.hpp"

namespace bgl::report {
namespace {

struct Layout {
  double cell;    // distance between neighbouring nodes
  double node;    // a node's square
  double margin;  // around each plane, room for wrap-around stubs and labels
  int per_row;    // planes in a row
  double plane_w, plane_h;
};

Layout layout(const Geometry& g) {
  Layout l{};
  const int wide = std::max(g.extent[0], g.extent[1]);
  l.cell = std::clamp(360.0 / wide, 26.0, 110.0);
  l.node = l.cell * 0.42;
  l.margin = l.cell * 0.7;
  l.plane_w = (g.extent[0] - 1) * l.cell + 2 * l.margin;
  l.plane_h = (g.extent[1] - 1) * l.cell + 2 * l.margin + 18;
  l.per_row = std::max(1, std::min(g.extent[2], static_cast<int>(1200 / l.plane_w)));
  return l;
}

struct Point {
  double x, y;
};

Point centre(const Layout& l, const Geometry& g, std::array<int, 3> c) {
  const int row = c[2] / l.per_row, col = c[2] % l.per_row;
  // y grows downwards in SVG: draw y = 0 at the bottom as on a plot.
  return {col * l.plane_w + l.margin + c[0] * l.cell,
          row * l.plane_h + 18 + l.margin + (g.extent[1] - 1 - c[1]) * l.cell};
}

std::string colour_of(double value, double top) {
  return top > 0 && value > 0 ? heat(value / top) : "#d8d8d8";
}

// The segment a directed link is drawn as: from its node towards the neighbour (or off the plane
// for wrap-around and z links), shifted sideways so that the two directions stay apart.
std::pair<Point, Point> segment(const Layout& l, const Geometry& g, std::array<int, 3> c, int dir) {
  const int dim = dir / 2;
  const int sign = dir % 2 == 0 ? 1 : -1;
  const Point p = centre(l, g, c);
  const double half = l.node / 2, shift = l.node * 0.22;
  if (dim == 2) {  // out of the plane
    const double s = sign * (half + l.cell * 0.22);
    const Point from{p.x + sign * half * 0.6, p.y - sign * half * 0.6};
    return {from, {p.x + s, p.y - s}};
  }
  const int next = c[static_cast<std::size_t>(dim)] + sign;
  const bool wraps = next < 0 || next >= g.extent[static_cast<std::size_t>(dim)];
  const double length = wraps ? l.margin * 0.8 : l.cell - half;
  // +x to the right, +y upwards; each direction keeps to its right-hand side.
  const double dx = dim == 0 ? sign : 0, dy = dim == 1 ? -sign : 0;
  const double ox = -dy * shift, oy = dx * shift;
  return {{p.x + dx * half + ox, p.y + dy * half + oy},
          {p.x + dx * length + ox, p.y + dy * length + oy}};
}

bool link_exists(const Geometry& g, std::array<int, 3> c, int dir) {
  const auto dim = static_cast<std::size_t>(dir / 2);
  if (g.extent[dim] == 1) return false;
  const int next = c[dim] + (dir % 2 == 0 ? 1 : -1);
  return g.torus[dim] || (next >= 0 && next < g.extent[dim]);
}

std::string ranks_text(const std::vector<int>& ranks) {
  std::string s;
  for (const int r : ranks)
    s += (s.empty() ? "" : ", ") + std::to_string(r);
  return s.empty() ? "no task" : (ranks.size() == 1 ? "rank " : "ranks ") + s;
}

// Beyond this many nodes the drawing would be tens of megabytes and no longer readable.
constexpr int kMaxDrawnNodes = 4096;

bool render(const Context& c, std::string& out) {
  const auto& g = c.geometry;
  if (g.nodes() > kMaxDrawnNodes) {
    out += "<p>The partition has " + grouped(static_cast<std::uint64_t>(g.nodes())) +
           " nodes, too many to draw readably (at most " + grouped(kMaxDrawnNodes) +
           "); the busiest links are listed below.</p>\n";
    return true;
  }
  const auto l = layout(g);
  const int rows = (g.extent[2] + l.per_row - 1) / l.per_row;
  const double width = l.per_row * l.plane_w, height = rows * l.plane_h;
  double top_bytes = 0, top_util = 0;
  for (const auto& load : c.links) {
    top_bytes = std::max(top_bytes, static_cast<double>(load.bytes));
    top_util = std::max(top_util, load.utilisation);
  }
  const bool vt = c.virtual_time.has_value();
  out +=
      "<p>Nodes are squares (a node of a virtual-node partition shows its two tasks); each "
      "directed link is an arrow-less stroke on its own side, from its node towards the "
      "neighbour: x to the right, y upwards, z diagonally (+z up and right, towards the next "
      "plane). Strokes leaving a plane's edge wrap around. Hover for numbers.</p>\n";
  out += "<p class=\"legend\">colour: ";
  if (vt)
    out +=
        "<select id=\"torus-metric\"><option value=\"u\">utilisation (virtual time)</option>"
        "<option value=\"b\">bytes</option></select>";
  else
    out += "bytes";
  out += " <span class=\"scale\"></span> 0 to <span id=\"torus-top\" data-b=\"" +
         escape(bytes(top_bytes)) + "\" data-u=\"" + escape(percent(top_util)) + "\">" +
         (vt ? percent(top_util) : bytes(top_bytes)) + "</span>; grey: no traffic</p>\n";
  out += "<div class=\"scroll\"><svg id=\"torus\" viewBox=\"0 0 " + fixed(width, 0) + " " +
         fixed(height, 0) + "\" width=\"" + fixed(width, 0) + "\" height=\"" + fixed(height, 0) +
         "\" role=\"img\" aria-label=\"torus links\">\n";
  for (int z = 0; z < g.extent[2]; ++z) {
    const Point o = centre(l, g, {0, g.extent[1] - 1, z});
    out += "<text class=\"plane\" x=\"" + fixed(o.x - l.margin * 0.5, 1) + "\" y=\"" +
           fixed(o.y - l.margin - 4, 1) + "\">z = " + std::to_string(z) + "</text>\n";
  }
  out += "<g class=\"links\">\n";
  for (int n = 0; n < g.nodes(); ++n) {
    const auto xyz = g.coord(n);
    for (int d = 0; d < kDirections; ++d) {
      if (!link_exists(g, xyz, d)) continue;
      const auto index = static_cast<std::size_t>(n) * kDirections + static_cast<std::size_t>(d);
      const auto& load = c.links[index];
      const auto [a, b] = segment(l, g, xyz, d);
      const auto cb = colour_of(static_cast<double>(load.bytes), top_bytes);
      const auto cu = colour_of(load.utilisation, top_util);
      out += "<line x1=\"" + fixed(a.x, 1) + "\" y1=\"" + fixed(a.y, 1) + "\" x2=\"" +
             fixed(b.x, 1) + "\" y2=\"" + fixed(b.y, 1) + "\" stroke=\"" + (vt ? cu : cb) + "\"";
      if (vt) out += " data-b=\"" + cb + "\" data-u=\"" + cu + "\"";
      out += "><title>" + Context::link_name(g, index) + ": " + grouped(load.bytes) + " bytes, " +
             grouped(load.packets) + " packets";
      if (vt)
        out += ", busy " + grouped(load.busy_cycles) + " cycles, " + percent(load.utilisation);
      out += "</title></line>\n";
    }
  }
  out += "</g>\n<g class=\"nodes\">\n";
  for (int n = 0; n < g.nodes(); ++n) {
    const auto xyz = g.coord(n);
    const Point p = centre(l, g, xyz);
    const auto& ranks = c.node_ranks[static_cast<std::size_t>(n)];
    const std::string title = "<title>node (" + std::to_string(xyz[0]) + "," +
                              std::to_string(xyz[1]) + "," + std::to_string(xyz[2]) +
                              "): " + ranks_text(ranks) + "</title>";
    const double h = l.node / 2;
    if (ranks.size() <= 1) {
      out += "<rect class=\"node" + std::string(ranks.empty() ? " idle" : "") + "\" x=\"" +
             fixed(p.x - h, 1) + "\" y=\"" + fixed(p.y - h, 1) + "\" width=\"" + fixed(l.node, 1) +
             "\" height=\"" + fixed(l.node, 1) + "\">" + title + "</rect>\n";
      continue;
    }
    // A virtual-node node: one half per task, t = 0 on the left.
    const double part = l.node / static_cast<double>(ranks.size());
    out += "<g class=\"vn\">" + title;
    for (std::size_t t = 0; t < ranks.size(); ++t)
      out += "<rect class=\"node task\" x=\"" + fixed(p.x - h + part * static_cast<double>(t), 1) +
             "\" y=\"" + fixed(p.y - h, 1) + "\" width=\"" + fixed(part, 1) + "\" height=\"" +
             fixed(l.node, 1) + "\"/>";
    if (part >= 14)
      for (std::size_t t = 0; t < ranks.size(); ++t)
        out += "<text class=\"rank\" x=\"" +
               fixed(p.x - h + part * (static_cast<double>(t) + 0.5), 1) + "\" y=\"" +
               fixed(p.y + 3, 1) + "\">" + std::to_string(ranks[t]) + "</text>";
    out += "</g>\n";
  }
  out += "</g></svg></div>\n";
  return true;
}

}  // namespace

Section torus_section() {
  return {"torus", "Torus", render};
}

}  // namespace bgl::report
