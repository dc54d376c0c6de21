// BG/L's optimized torus broadcast: the message split in K parts, part k broadcast over route
// k, the K routes edge-disjoint spanning routes made of deposit-bit lines (routes A,
// B, C), each part pipelined in segments: a node forwards segment q as soon as it has it.
#include <array>
#include <optional>

#include "gen_util.hpp"
#include "hardware/hardware.hpp"

namespace bgl::collectives {
namespace {

using torus_emu::Dim;
using torus_emu::Direction;

// The communicator must fill the partition one rank per node (a rectangular region), and on a
// mesh the root must sit at the low corner of every mesh dimension (lines travel in +).
std::string applicable(const Params& x) {
  const auto* m = x.topology.mapping;
  if (!m) return "needs the rank mapping (topology)";
  const torus_emu::Shape& s = m->shape();
  if (x.p != s.node_count()) return "needs one rank on every node of the partition";
  std::vector<bool> seen(static_cast<std::size_t>(s.node_count()), false);
  for (int r = 0; r < x.p; ++r) {
    const auto n = static_cast<std::size_t>(x.topology.node(r));
    if (seen[n]) return "needs one rank per node";
    seen[n] = true;
  }
  const torus_emu::Coord root = s.coord(x.topology.node(x.root));
  for (Dim d : {Dim::x, Dim::y, Dim::z})
    if (!s.is_torus(d) && s.extent(d) > 1 && root[d] != 0)
      return "on a mesh the root must be at coordinate 0 of every mesh dimension";
  int k = 0;
  for (Dim d : {Dim::x, Dim::y, Dim::z})
    k += s.extent(d) >= 2;
  if (k == 0) return "needs at least two nodes";
  return {};
}

struct Geometry {
  const torus_emu::Shape& shape;
  torus_emu::Coord root;
  std::vector<int> rank_of;  // node id -> communicator rank
  int ext(Dim d) const { return shape.extent(d); }
  // Rank at root-relative coordinates.
  int at(int x, int y, int z) const {
    torus_emu::Coord c{(root.x + x) % ext(Dim::x), (root.y + y) % ext(Dim::y),
                       (root.z + z) % ext(Dim::z)};
    return rank_of[shape.node_id(c)];
  }
};

// One route's actions at one node: the rank it receives from (nullopt at the root) and the lines
// and hops it sends on.
struct Out {
  Direction dir;
  std::vector<int> receivers;
};
struct Role {
  std::optional<int> parent;
  std::vector<Out> outs;
};

// Route A starts in X, then Y, then Z; B and C are the same with the dimensions rotated
// (B: Y, Z, X; C: Z, X, Y). `perm` maps the route's first/second/third dimension to x, y, z.
Role role(const Geometry& g, std::array<Dim, 3> perm, const std::array<int, 3>& rel_xyz) {
  // Coordinates in the route's own order (a = first dimension, ...).
  const int a = rel_xyz[static_cast<std::size_t>(perm[0])];
  const int b = rel_xyz[static_cast<std::size_t>(perm[1])];
  const int c = rel_xyz[static_cast<std::size_t>(perm[2])];
  const int A = g.ext(perm[0]), B = g.ext(perm[1]), C = g.ext(perm[2]);
  auto rank = [&](int pa, int pb, int pc) {
    std::array<int, 3> r{};
    r[static_cast<std::size_t>(perm[0])] = pa;
    r[static_cast<std::size_t>(perm[1])] = pb;
    r[static_cast<std::size_t>(perm[2])] = pc;
    return g.at(r[0], r[1], r[2]);
  };
  auto plus = [&](Dim d) { return torus_emu::make_direction(d, +1); };
  auto minus = [&](Dim d) { return torus_emu::make_direction(d, -1); };
  Role out;
  // Who sends to (a, b, c).
  if (a == 0 && b == 0 && c == 0) {
    out.parent.reset();
  } else if (b == 0 && c == 0) {
    out.parent = rank(0, 0, 0);  // line 1
  } else if (a >= 1 && c == 0) {
    out.parent = rank(a, 0, 0);  // line 2
  } else if (a >= 1) {
    out.parent = rank(a, b, 0);  // line 3
  } else {
    out.parent = rank(1, b, c);  // hop 4 (a == 0)
  }
  // What (a, b, c) sends.
  if (a == 0 && b == 0 && c == 0 && A >= 2) {
    Out o{plus(perm[0]), {}};
    for (int i = 1; i < A; ++i)
      o.receivers.push_back(rank(i, 0, 0));
    out.outs.push_back(o);
  }
  if (a >= 1 && b == 0 && c == 0 && B >= 2) {
    Out o{plus(perm[1]), {}};
    for (int j = 1; j < B; ++j)
      o.receivers.push_back(rank(a, j, 0));
    out.outs.push_back(o);
  }
  if (a >= 1 && c == 0 && C >= 2) {
    Out o{plus(perm[2]), {}};
    for (int k = 1; k < C; ++k)
      o.receivers.push_back(rank(a, b, k));
    out.outs.push_back(o);
  }
  if (a == 1 && (b != 0 || c != 0)) out.outs.push_back({minus(perm[0]), {rank(0, b, c)}});
  return out;
}

std::uint64_t segment_size(const Params& x, std::uint64_t part) {
  if (x.segment) return x.segment;
  // Whole packets; at most 64 segments per part, at least 32 packets each.
  const std::uint64_t pk = 240;
  std::uint64_t s = std::max<std::uint64_t>(32 * pk, (part + 63) / 64);
  return (s + pk - 1) / pk * pk;
}

Program torus3(const Params& x, int rank) {
  Program prog(rank);
  const torus_emu::Mapping& m = *x.topology.mapping;
  Geometry g{m.shape(), m.shape().coord(x.topology.node(x.root)), {}};
  g.rank_of.assign(static_cast<std::size_t>(g.shape.node_count()), -1);
  for (int r = 0; r < x.p; ++r)
    g.rank_of[x.topology.node(r)] = r;
  const torus_emu::Coord me = g.shape.coord(x.topology.node(rank));
  const std::array<int, 3> rel{(me.x - g.root.x + g.ext(Dim::x)) % g.ext(Dim::x),
                               (me.y - g.root.y + g.ext(Dim::y)) % g.ext(Dim::y),
                               (me.z - g.root.z + g.ext(Dim::z)) % g.ext(Dim::z)};
  const std::array<std::array<Dim, 3>, 3> routes{
      {{Dim::x, Dim::y, Dim::z}, {Dim::y, Dim::z, Dim::x}, {Dim::z, Dim::x, Dim::y}}};
  std::vector<std::array<Dim, 3>> used;
  for (const auto& r : routes)
    if (g.ext(r[0]) >= 2) used.push_back(r);
  const int K = static_cast<int>(used.size());
  const std::uint64_t n = x.bytes();
  for (int k = 0; k < K; ++k) {
    const std::uint64_t lo = gen::split_offset(n, K, k), hi = gen::split_offset(n, K, k + 1);
    const Role ro = role(g, used[static_cast<std::size_t>(k)], rel);
    const std::uint64_t seg = segment_size(x, hi - lo);
    const std::uint64_t nseg = hi > lo ? (hi - lo + seg - 1) / seg : 1;
    for (std::uint64_t q = 0; q < nseg; ++q) {
      prog.set_round(static_cast<int>(q));
      const std::uint64_t a = lo + q * seg, b = std::min(hi, a + seg);
      const Region piece = recv_buf(a, b - a);
      const Tag tag = static_cast<Tag>(k) << 24 | static_cast<Tag>(q);
      std::vector<StepId> have;
      if (ro.parent) have.push_back(prog.recv(*ro.parent, piece, tag));
      // The single "-" hops are one-receiver lines too, so that the cost model routes them in
      // the stated direction (a deterministic route would take + on an extent-2 torus).
      for (const Out& o : ro.outs)
        prog.line_send(o.dir, o.receivers, piece, tag, have);
    }
  }
  return prog;
}

}  // namespace

void register_torus_bcast(Registry& r) {
  r.add({"torus3", Collective::bcast,
         "deposit-bit lines over up to 3 edge-disjoint spanning routes, pipelined (seed 004)",
         applicable, torus3});
}

}  // namespace bgl::collectives
