#include "topo_map.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <functional>
#include <limits>
#include <numeric>
#include <queue>
#include <utility>

#include "bgl/torus_emu/comm_matrix.hpp"
#include "bgl/torus_emu/distance.hpp"
#include "bgl/torus_emu/mapping_optimizer.hpp"

namespace bgl::adi3_device::topo {
namespace {

using torus_emu::Dim;

constexpr std::array<Dim, 3> kDims = {Dim::x, Dim::y, Dim::z};
constexpr int kT = 3;  // index of the processor slot in a physical "dimension" list

// Beyond this many ranks the greedy embedding is not tried: every rank computes it, in
// O(ranks^2 * neighbours) (about 20 ms per rank at 1,024 ranks).
constexpr std::size_t kGreedyLimit = 1024;

// One dimension of the box a communicator's ranks fill: x, y, z or the processor slot t.
struct PhysDim {
  int which = 0;  // 0, 1, 2 for x, y, z; kT for t
  int extent = 1;
};

// The box the ranks fill exactly (every node in [lo, lo + extent) with the same t values), and
// the rank at each of its slots.
struct Box {
  std::array<int, 3> lo{};
  std::array<int, 3> extent{};
  std::vector<int> ts;            // the t values used, ascending
  std::vector<PhysDim> dims;      // those of extent > 1
  std::vector<int> rank_of_slot;  // (node * 2 + t) -> index into places, -1 if none
};

std::optional<Box> filled_box(const torus_emu::Shape& shape, std::span<const Place> places) {
  if (places.empty()) return std::nullopt;
  Box box;
  std::array<int, 3> hi{};
  for (int d = 0; d < 3; ++d)
    box.lo[d] = hi[d] = places[0].node[kDims[d]];
  std::array<bool, 2> t_used{};
  for (const auto& p : places) {
    for (int d = 0; d < 3; ++d) {
      box.lo[d] = std::min(box.lo[d], p.node[kDims[d]]);
      hi[d] = std::max(hi[d], p.node[kDims[d]]);
    }
    if (p.t < 0 || p.t > 1) return std::nullopt;
    t_used[static_cast<std::size_t>(p.t)] = true;
  }
  for (int t = 0; t < 2; ++t)
    if (t_used[static_cast<std::size_t>(t)]) box.ts.push_back(t);
  std::size_t volume = box.ts.size();
  for (int d = 0; d < 3; ++d) {
    box.extent[d] = hi[d] - box.lo[d] + 1;
    volume *= static_cast<std::size_t>(box.extent[d]);
  }
  if (volume != places.size()) return std::nullopt;  // ranks are distinct: equal count = filled
  box.rank_of_slot.assign(static_cast<std::size_t>(shape.node_count()) * 2, -1);
  for (std::size_t i = 0; i < places.size(); ++i)
    box.rank_of_slot[static_cast<std::size_t>(shape.node_id(places[i].node)) * 2 +
                     static_cast<std::size_t>(places[i].t)] = static_cast<int>(i);
  if (box.ts.size() > 1) box.dims.push_back({kT, static_cast<int>(box.ts.size())});
  for (int d = 0; d < 3; ++d)
    if (box.extent[d] > 1) box.dims.push_back({d, box.extent[d]});
  return box;
}

// Digits (inner first) of c in the reflected mixed-radix order over `extents`: consecutive values
// of c differ by one step in exactly one digit.
void snake_digits(int c, std::span<const int> extents, std::span<int> digits) {
  for (std::size_t j = extents.size(); j-- > 0;) {
    int inner = 1;
    for (std::size_t k = 0; k < j; ++k)
      inner *= extents[k];
    const int outer = c / inner;
    digits[j] = outer;
    c %= inner;
    if (outer % 2 == 1) c = inner - 1 - c;
  }
}

// A folding: for every Cartesian dimension the physical dimensions (inner first) it runs along.
using Folding = std::vector<std::vector<PhysDim>>;

std::vector<int> fold_assignment(const torus_emu::Shape& shape, const Box& box,
                                 std::span<const int> dims, const Folding& folding) {
  const int ndims = static_cast<int>(dims.size());
  const int m = std::accumulate(dims.begin(), dims.end(), 1, std::multiplies<>());
  std::vector<int> assignment(static_cast<std::size_t>(m));
  std::vector<int> cart(static_cast<std::size_t>(ndims));
  std::vector<int> extents, digits;
  for (int p = 0; p < m; ++p) {
    int rest = p;
    for (int i = ndims; i-- > 0;) {
      cart[static_cast<std::size_t>(i)] = rest % dims[static_cast<std::size_t>(i)];
      rest /= dims[static_cast<std::size_t>(i)];
    }
    std::array<int, 4> phys{};  // offsets in the box along x, y, z and the index into box.ts
    for (int i = 0; i < ndims; ++i) {
      const auto& group = folding[static_cast<std::size_t>(i)];
      extents.clear();
      for (const auto& g : group)
        extents.push_back(g.extent);
      digits.assign(group.size(), 0);
      snake_digits(cart[static_cast<std::size_t>(i)], extents, digits);
      for (std::size_t j = 0; j < group.size(); ++j)
        phys[static_cast<std::size_t>(group[j].which)] = digits[j];
    }
    const torus_emu::Coord node{box.lo[0] + phys[0], box.lo[1] + phys[1], box.lo[2] + phys[2]};
    const int t = box.ts[static_cast<std::size_t>(phys[kT])];
    assignment[static_cast<std::size_t>(p)] =
        box.rank_of_slot[static_cast<std::size_t>(shape.node_id(node)) * 2 +
                         static_cast<std::size_t>(t)];
  }
  return assignment;
}

// Calls visit(owner) for every way of giving each physical dimension a Cartesian dimension whose
// extent is the product of the physical extents it gets (fixed[i] > 0), or any product (free,
// fixed[i] == 0, only when free_ok).
template <typename Visit>
void for_each_grouping(const std::vector<PhysDim>& phys, std::span<const int> target, bool free_ok,
                       Visit&& visit) {
  const std::size_t k = target.size();
  if (k == 0) return;
  std::vector<std::size_t> owner(phys.size(), 0);
  std::vector<long> product(k);
  for (;;) {
    std::fill(product.begin(), product.end(), 1L);
    for (std::size_t j = 0; j < phys.size(); ++j)
      product[owner[j]] *= phys[j].extent;
    bool ok = true;
    for (std::size_t i = 0; i < k && ok; ++i)
      ok = target[i] > 0 ? product[i] == target[i] : free_ok;
    if (ok) visit(owner, product);
    std::size_t j = 0;  // next owner vector (odometer)
    while (j < phys.size() && ++owner[j] == k)
      owner[j++] = 0;
    if (j == phys.size()) return;
  }
}

// Every ordering of every group (the inner dimension of a snake matters at the wrap-around).
void for_each_order(Folding& folding, std::size_t i, const std::function<void()>& visit) {
  if (i == folding.size()) {
    visit();
    return;
  }
  auto& group = folding[i];
  const auto less = [](const PhysDim& a, const PhysDim& b) { return a.which < b.which; };
  std::sort(group.begin(), group.end(), less);
  do {
    for_each_order(folding, i + 1, visit);
  } while (std::next_permutation(group.begin(), group.end(), less));
}

std::vector<std::vector<int>> foldings(const torus_emu::Shape& shape, std::span<const Place> places,
                                       std::span<const int> dims) {
  std::vector<std::vector<int>> result;
  const auto box = filled_box(shape, places);
  if (!box) return result;
  for_each_grouping(box->dims, dims, false, [&](const std::vector<std::size_t>& owner, auto&) {
    Folding folding(dims.size());
    for (std::size_t j = 0; j < owner.size(); ++j)
      folding[owner[j]].push_back(box->dims[j]);
    for_each_order(folding, 0,
                   [&] { result.push_back(fold_assignment(shape, *box, dims, folding)); });
  });
  return result;
}

// Physical order of the places (z, y, x, t slowest to fastest): where a greedy component starts.
std::vector<int> physical_order(const torus_emu::Shape& shape, std::span<const Place> places) {
  std::vector<int> order(places.size());
  std::iota(order.begin(), order.end(), 0);
  const auto key = [&](int i) {
    const auto& p = places[static_cast<std::size_t>(i)];
    return static_cast<long>(shape.node_id(p.node)) * 2 + p.t;
  };
  std::sort(order.begin(), order.end(), [&](int a, int b) { return key(a) < key(b); });
  return order;
}

// Positions in breadth-first order over the graph, components one after another.
std::vector<int> bfs_order(const Graph& g) {
  const int m = g.size();
  std::vector<int> order;
  std::vector<char> seen(static_cast<std::size_t>(m), 0);
  std::queue<int> q;
  for (int s = 0; s < m; ++s) {
    if (seen[static_cast<std::size_t>(s)]) continue;
    seen[static_cast<std::size_t>(s)] = 1;
    q.push(s);
    while (!q.empty()) {
      const int u = q.front();
      q.pop();
      order.push_back(u);
      for (int e = g.index[static_cast<std::size_t>(u)];
           e < g.index[static_cast<std::size_t>(u) + 1]; ++e) {
        const int v = g.edges[static_cast<std::size_t>(e)];
        if (!seen[static_cast<std::size_t>(v)]) {
          seen[static_cast<std::size_t>(v)] = 1;
          q.push(v);
        }
      }
    }
  }
  return order;
}

// Undirected adjacency (an edge u-v listed at u is a neighbour of v too, for placing v).
std::vector<std::vector<int>> undirected(const Graph& g) {
  std::vector<std::vector<int>> adj(static_cast<std::size_t>(g.size()));
  for (int u = 0; u < g.size(); ++u)
    for (int e = g.index[static_cast<std::size_t>(u)]; e < g.index[static_cast<std::size_t>(u) + 1];
         ++e) {
      const int v = g.edges[static_cast<std::size_t>(e)];
      adj[static_cast<std::size_t>(u)].push_back(v);
      adj[static_cast<std::size_t>(v)].push_back(u);
    }
  return adj;
}

// Places positions in breadth-first order, each on the free rank with the fewest hops to its
// neighbours placed so far (ties: the first in physical order); a new component starts at the
// first free rank in physical order.
std::vector<int> greedy(const torus_emu::Shape& shape, const Graph& g,
                        std::span<const Place> places) {
  const auto order = physical_order(shape, places);
  const auto adj = undirected(g);
  std::vector<int> assignment(static_cast<std::size_t>(g.size()), -1);
  std::vector<char> used(places.size(), 0);
  for (const int u : bfs_order(g)) {
    int best = -1;
    long best_cost = std::numeric_limits<long>::max();
    bool has_placed = false;
    for (const int v : adj[static_cast<std::size_t>(u)])
      has_placed |= assignment[static_cast<std::size_t>(v)] >= 0;
    for (const int i : order) {
      if (used[static_cast<std::size_t>(i)]) continue;
      if (!has_placed) {
        best = i;
        break;
      }
      long cost = 0;
      for (const int v : adj[static_cast<std::size_t>(u)]) {
        const int r = assignment[static_cast<std::size_t>(v)];
        if (r >= 0)
          cost += torus_emu::distance(shape, places[static_cast<std::size_t>(i)].node,
                                      places[static_cast<std::size_t>(r)].node);
      }
      if (cost < best_cost) {
        best_cost = cost;
        best = i;
        if (cost == 0) break;
      }
    }
    assignment[static_cast<std::size_t>(u)] = best;
    used[static_cast<std::size_t>(best)] = 1;
  }
  return assignment;
}

// Edge visits the swap search may spend: every rank runs it, so it stays in the tens of
// milliseconds (a few full passes at 64 ranks, part of one at 1,024).
constexpr long kSwapBudget = 4'000'000;

// Lowers the hops summed over the graph's edges by moving a position to another place (swapping
// with the position there, if any) while a move helps, in a fixed order (every rank gets the same
// answer) and within kSwapBudget. The greedy embedding fixes each position for good once placed;
// this undoes its early mistakes, e.g. a grid that should fold the node's two tasks into a
// dimension.
void improve_by_swaps(const torus_emu::Shape& shape, const Graph& g, std::span<const Place> places,
                      std::vector<int>& assignment) {
  const auto adj = undirected(g);
  const int m = g.size();
  const int n = static_cast<int>(places.size());
  std::vector<int> position_at(static_cast<std::size_t>(n), -1);
  for (int p = 0; p < m; ++p)
    position_at[static_cast<std::size_t>(assignment[static_cast<std::size_t>(p)])] = p;
  const auto at = [&](int p) { return assignment[static_cast<std::size_t>(p)]; };
  // Hops from position p, put at place x, to its neighbours except itself and `partner`, whose
  // edges to p a swap leaves as long as they were.
  const auto cost = [&](int p, int x, int partner) {
    long c = 0;
    for (const int v : adj[static_cast<std::size_t>(p)])
      if (v != p && v != partner)
        c += torus_emu::distance(shape, places[static_cast<std::size_t>(x)].node,
                                 places[static_cast<std::size_t>(at(v))].node);
    return c;
  };
  long budget = kSwapBudget;
  for (bool improved = true; improved && budget > 0;) {
    improved = false;
    for (int p = 0; p < m && budget > 0; ++p)
      for (int x = 0; x < n && budget > 0; ++x) {
        const int from = at(p);
        if (x == from) continue;
        const int q = position_at[static_cast<std::size_t>(x)];
        long delta = cost(p, x, q) - cost(p, from, q);
        budget -= 2 * static_cast<long>(adj[static_cast<std::size_t>(p)].size());
        if (q >= 0) {
          delta += cost(q, from, p) - cost(q, x, p);
          budget -= 2 * static_cast<long>(adj[static_cast<std::size_t>(q)].size());
        }
        if (delta >= 0) continue;
        assignment[static_cast<std::size_t>(p)] = x;
        position_at[static_cast<std::size_t>(x)] = p;
        position_at[static_cast<std::size_t>(from)] = q;
        if (q >= 0) assignment[static_cast<std::size_t>(q)] = from;
        improved = true;
      }
  }
}

// Beyond this many ranks bglmap's optimiser is not tried (every rank runs it).
constexpr std::size_t kOptimizerLimit = 512;

// bglmap's mapping optimiser (greedy placement with lookahead, then a bounded annealing; no time
// cap, so every rank gets the same answer) on the graph, when the places are every slot of the
// partition (it chooses among all slots); nullopt otherwise.
std::optional<std::vector<int>> optimised(const torus_emu::Shape& shape, const Graph& g,
                                          std::span<const Place> places) {
  int tpn = 1;
  for (const auto& p : places)
    tpn = std::max(tpn, p.t + 1);
  if (places.size() !=
          static_cast<std::size_t>(shape.node_count()) * static_cast<std::size_t>(tpn) ||
      static_cast<std::size_t>(g.size()) != places.size())
    return std::nullopt;
  std::vector<torus_emu::TaskLocation> locations;
  std::vector<int> place_at(places.size(), -1);  // node * tpn + t -> index into places
  for (std::size_t i = 0; i < places.size(); ++i) {
    const auto node = shape.node_id(places[i].node);
    locations.push_back({node, places[i].t});
    place_at[static_cast<std::size_t>(node) * static_cast<std::size_t>(tpn) +
             static_cast<std::size_t>(places[i].t)] = static_cast<int>(i);
  }
  torus_emu::CommMatrix matrix(g.size());
  for (int u = 0; u < g.size(); ++u)
    for (int e = g.index[static_cast<std::size_t>(u)]; e < g.index[static_cast<std::size_t>(u) + 1];
         ++e)
      matrix.add(static_cast<torus_emu::Rank>(u),
                 static_cast<torus_emu::Rank>(g.edges[static_cast<std::size_t>(e)]), 1);
  torus_emu::OptimizeOptions options;
  options.max_seconds = 1e9;
  options.moves_per_task = 2000;
  const auto result = torus_emu::optimize_mapping(
      matrix, torus_emu::Mapping::from_locations(shape, tpn, std::move(locations)), options);
  std::vector<int> assignment(places.size());
  for (int p = 0; p < g.size(); ++p) {
    const auto l = result.mapping.location(static_cast<torus_emu::Rank>(p));
    assignment[static_cast<std::size_t>(p)] =
        place_at[static_cast<std::size_t>(l.node) * static_cast<std::size_t>(tpn) +
                 static_cast<std::size_t>(l.t)];
  }
  return assignment;
}

int max_hops(const torus_emu::Shape& shape, const Graph& g, std::span<const Place> places,
             std::span<const int> assignment) {
  int worst = 0;
  for (int u = 0; u < g.size(); ++u)
    for (int e = g.index[static_cast<std::size_t>(u)]; e < g.index[static_cast<std::size_t>(u) + 1];
         ++e)
      worst = std::max(
          worst,
          torus_emu::distance(
              shape, places[static_cast<std::size_t>(assignment[static_cast<std::size_t>(u)])].node,
              places[static_cast<std::size_t>(assignment[static_cast<std::size_t>(
                         g.edges[static_cast<std::size_t>(e)])])]
                  .node));
  return worst;
}

std::vector<int> identity(int m) {
  std::vector<int> a(static_cast<std::size_t>(m));
  std::iota(a.begin(), a.end(), 0);
  return a;
}

// The candidate with the fewest hops, then the shortest longest edge (a ring may close with one
// long edge or with single hops at the same total); the first one (the identity) on ties.
std::vector<int> best_of(const torus_emu::Shape& shape, const Graph& g,
                         std::span<const Place> places, std::vector<std::vector<int>> candidates) {
  std::size_t best = 0;
  std::pair<long, int> best_cost{std::numeric_limits<long>::max(), 0};
  for (std::size_t c = 0; c < candidates.size(); ++c) {
    const std::pair<long, int> cost{total_hops(shape, g, places, candidates[c]),
                                    max_hops(shape, g, places, candidates[c])};
    if (cost < best_cost) {
      best_cost = cost;
      best = c;
    }
  }
  return std::move(candidates[best]);
}

// The graph's nodes in cycle order when the graph, read undirected and without self-edges or
// repeated edges, is one cycle through all of them (a ring, however it was declared); nullopt
// otherwise.
std::optional<std::vector<int>> cycle_order(const Graph& g) {
  const int m = g.size();
  if (m < 3) return std::nullopt;
  auto adj = undirected(g);
  for (int u = 0; u < m; ++u) {
    auto& a = adj[static_cast<std::size_t>(u)];
    std::sort(a.begin(), a.end());
    a.erase(std::unique(a.begin(), a.end()), a.end());
    a.erase(std::remove(a.begin(), a.end(), u), a.end());
    if (a.size() != 2) return std::nullopt;
  }
  std::vector<int> order{0};
  for (int prev = -1, cur = 0; static_cast<int>(order.size()) < m;) {
    const auto& a = adj[static_cast<std::size_t>(cur)];
    const int next = a[0] == prev ? a[1] : a[0];
    if (next == 0) return std::nullopt;  // closed early: several cycles
    order.push_back(next);
    prev = cur;
    cur = next;
  }
  return order;
}

// The place at the box's slot with offsets phys (x, y, z and the index into box.ts).
int slot_place(const torus_emu::Shape& shape, const Box& box, const std::array<int, 4>& phys) {
  const torus_emu::Coord node{box.lo[0] + phys[0], box.lo[1] + phys[1], box.lo[2] + phys[2]};
  const int t = box.ts[static_cast<std::size_t>(phys[kT])];
  return box.rank_of_slot[static_cast<std::size_t>(shape.node_id(node)) * 2 +
                          static_cast<std::size_t>(t)];
}

// For every box dimension of even extent a (the layers) and every order of the others (their
// snake, r slots long): the cycle along the snake on layer 0, back and forth over snake slots
// 1..r-1 on layers 1..a-1 (ending on slot 1 of the last layer, a - 1 being odd), and home over
// slot 0 of layers a-1..1. Every step is one hop (or stays on the node) whether the box wraps
// or not; the snake over all the box's dimensions (foldings) needs a wrap-around to close.
std::vector<std::vector<int>> comb_cycles(const torus_emu::Shape& shape, const Box& box) {
  std::vector<std::vector<int>> cycles;
  for (std::size_t a = 0; a < box.dims.size(); ++a) {
    const PhysDim layer = box.dims[a];
    if (layer.extent % 2 != 0) continue;
    std::vector<PhysDim> rest;
    for (std::size_t j = 0; j < box.dims.size(); ++j)
      if (j != a) rest.push_back(box.dims[j]);
    if (rest.empty()) continue;
    const auto less = [](const PhysDim& x, const PhysDim& y) { return x.which < y.which; };
    std::sort(rest.begin(), rest.end(), less);
    std::vector<int> extents(rest.size()), digits(rest.size());
    do {
      int r = 1;
      for (std::size_t j = 0; j < rest.size(); ++j)
        r *= extents[j] = rest[j].extent;
      std::vector<int> cycle;
      cycle.reserve(static_cast<std::size_t>(layer.extent * r));
      const auto visit = [&](int i, int s) {
        std::array<int, 4> phys{};
        phys[static_cast<std::size_t>(layer.which)] = i;
        snake_digits(s, extents, digits);
        for (std::size_t j = 0; j < rest.size(); ++j)
          phys[static_cast<std::size_t>(rest[j].which)] = digits[j];
        cycle.push_back(slot_place(shape, box, phys));
      };
      for (int s = 0; s < r; ++s)
        visit(0, s);
      for (int i = 1; i < layer.extent; ++i)
        for (int k = 1; k < r; ++k)
          visit(i, i % 2 == 1 ? r - k : k);
      for (int i = layer.extent - 1; i >= 1; --i)
        visit(i, 0);
      cycles.push_back(std::move(cycle));
    } while (std::next_permutation(rest.begin(), rest.end(), less));
  }
  return cycles;
}

// Ring placements for a graph that is one cycle through all the places: the cycle laid along
// every snake and comb cycle of the box the places fill (each step one hop or on the same node
// wherever the box has a Hamiltonian cycle of such steps: a wrapping dimension, or one of even
// extent). Empty when the graph is no such cycle or the places fill no box.
std::vector<std::vector<int>> ring_candidates(const torus_emu::Shape& shape, const Graph& g,
                                              std::span<const Place> places) {
  std::vector<std::vector<int>> result;
  if (static_cast<std::size_t>(g.size()) != places.size()) return result;
  const auto cycle = cycle_order(g);
  const auto box = filled_box(shape, places);
  if (!cycle || !box) return result;
  const std::array<int, 1> ring{g.size()};
  auto paths = foldings(shape, places, ring);  // position k of a 1-D grid -> place
  for (auto& c : comb_cycles(shape, *box))
    paths.push_back(std::move(c));
  for (const auto& path : paths) {
    std::vector<int> assignment(places.size());
    for (std::size_t k = 0; k < path.size(); ++k)
      assignment[static_cast<std::size_t>((*cycle)[k])] = path[k];
    result.push_back(std::move(assignment));
  }
  return result;
}

}  // namespace

Graph cartesian_graph(std::span<const int> dims, std::span<const int> periods) {
  const int ndims = static_cast<int>(dims.size());
  const int m = std::accumulate(dims.begin(), dims.end(), 1, std::multiplies<>());
  Graph g;
  g.index.reserve(static_cast<std::size_t>(m) + 1);
  g.index.push_back(0);
  for (int p = 0; p < m; ++p) {
    int stride = 1;
    for (int i = ndims; i-- > 0;) {
      const int d = dims[static_cast<std::size_t>(i)];
      const int c = (p / stride) % d;
      if (c + 1 < d)
        g.edges.push_back(p + stride);
      else if (periods[static_cast<std::size_t>(i)] && d > 2)
        g.edges.push_back(p - c * stride);
      stride *= d;
    }
    g.index.push_back(static_cast<int>(g.edges.size()));
  }
  return g;
}

long total_hops(const torus_emu::Shape& shape, const Graph& graph, std::span<const Place> places,
                std::span<const int> assignment) {
  long hops = 0;
  for (int u = 0; u < graph.size(); ++u)
    for (int e = graph.index[static_cast<std::size_t>(u)];
         e < graph.index[static_cast<std::size_t>(u) + 1]; ++e) {
      const int v = graph.edges[static_cast<std::size_t>(e)];
      hops += torus_emu::distance(
          shape, places[static_cast<std::size_t>(assignment[static_cast<std::size_t>(u)])].node,
          places[static_cast<std::size_t>(assignment[static_cast<std::size_t>(v)])].node);
    }
  return hops;
}

std::vector<int> cart_map(const torus_emu::Shape& shape, std::span<const Place> places,
                          std::span<const int> dims, std::span<const int> periods) {
  const auto g = cartesian_graph(dims, periods);
  std::vector<std::vector<int>> candidates{identity(g.size())};
  if (static_cast<std::size_t>(g.size()) == places.size())
    for (auto& f : foldings(shape, places, dims))
      candidates.push_back(std::move(f));
  // A folding with every neighbour at most one hop away cannot be beaten by much: no greedy.
  const bool perfect = std::any_of(candidates.begin(), candidates.end(), [&](const auto& c) {
    return max_hops(shape, g, places, c) <= 1;
  });
  if (!perfect && places.size() <= kGreedyLimit) candidates.push_back(greedy(shape, g, places));
  return best_of(shape, g, places, std::move(candidates));
}

std::vector<int> graph_map(const torus_emu::Shape& shape, std::span<const Place> places,
                           std::span<const int> index, std::span<const int> edges) {
  Graph g;
  g.index.push_back(0);
  for (const int end : index)
    g.index.push_back(end);
  g.edges.assign(edges.begin(), edges.end());
  std::vector<std::vector<int>> candidates{identity(g.size())};
  for (auto& r : ring_candidates(shape, g, places))
    candidates.push_back(std::move(r));
  const bool perfect = std::any_of(candidates.begin() + 1, candidates.end(), [&](const auto& c) {
    return max_hops(shape, g, places, c) <= 1;
  });
  if (!perfect && places.size() <= kGreedyLimit) {
    candidates.push_back(greedy(shape, g, places));
    improve_by_swaps(shape, g, places, candidates.back());
  }
  auto best = best_of(shape, g, places, std::move(candidates));
  // Every edge within one hop cannot be beaten by much: no optimiser then.
  if (places.size() > kOptimizerLimit || max_hops(shape, g, places, best) <= 1) return best;
  auto a = optimised(shape, g, places);
  if (!a) return best;
  return best_of(shape, g, places, {std::move(best), std::move(*a)});
}

std::optional<std::vector<int>> torus_dims(const torus_emu::Shape& shape,
                                           std::span<const Place> places,
                                           std::span<const int> dims) {
  const auto box = filled_box(shape, places);
  if (!box || dims.empty()) return std::nullopt;
  std::optional<std::vector<int>> best;
  std::vector<long> best_key;  // the filled values, largest first: smaller is more balanced
  for_each_grouping(box->dims, dims, true,
                    [&](const std::vector<std::size_t>&, const std::vector<long>& product) {
                      std::vector<long> key;
                      for (std::size_t i = 0; i < dims.size(); ++i)
                        if (dims[i] == 0) key.push_back(product[i]);
                      std::sort(key.rbegin(), key.rend());
                      if (best && key >= best_key) return;
                      best_key = key;
                      std::vector<int> filled(dims.begin(), dims.end());
                      std::size_t next = 0;
                      for (auto& d : filled)
                        if (d == 0) d = static_cast<int>(key[next++]);
                      best = std::move(filled);
                    });
  return best;
}

}  // namespace bgl::adi3_device::topo
