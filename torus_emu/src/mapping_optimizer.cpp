#include "bgl/torus_emu/mapping_optimizer.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <deque>
#include <limits>
#include <queue>
#include <tuple>

#include "bgl/torus_emu/distance.hpp"
#include "bgl/torus_emu/error.hpp"
#include "bgl/torus_emu/rng.hpp"

namespace bgl::torus_emu {

namespace {

using Clock = std::chrono::steady_clock;
constexpr std::int32_t kEmpty = -1;
// The greedy placement looks ahead only for tasks with at most this many partners.
constexpr std::size_t kLookaheadDegree = 32;
// Greedy placements tried for a sparse matrix (the best is kept).
constexpr int kGreedyStarts = 16;
// A task's placed partners whose neighbourhoods the greedy placement considers (the heaviest).
constexpr std::size_t kAnchors = 16;
// Partner visits (and, for the link polish, link updates) the searches may spend: with dense
// matrices their move counts shrink so that each takes seconds, not hours.
constexpr double kWorkBudget = 4e8;

// Distances between nodes from three small per-dimension tables.
class Geometry {
 public:
  Geometry(const Shape& shape, int tasks_per_node)
      : shape_(shape), tpn_(tasks_per_node), nodes_(shape.node_count()) {
    for (int d = 0; d < kDims; ++d) {
      const auto dim = static_cast<Dim>(d);
      const int e = shape.extent(dim);
      extent_[static_cast<std::size_t>(d)] = e;
      auto& table = hops_[static_cast<std::size_t>(d)];
      table.resize(static_cast<std::size_t>(e * e));
      for (int a = 0; a < e; ++a)
        for (int b = 0; b < e; ++b)
          table[static_cast<std::size_t>(a * e + b)] =
              static_cast<std::uint8_t>(offset(shape, dim, a, b).hops);
    }
    coords_.reserve(static_cast<std::size_t>(nodes_));
    for (int n = 0; n < nodes_; ++n)
      coords_.push_back(shape.coord(static_cast<NodeId>(n)));
  }
  const Shape& shape() const { return shape_; }
  int tasks_per_node() const { return tpn_; }
  int nodes() const { return nodes_; }
  int slots() const { return nodes_ * tpn_; }
  NodeId node_of(std::uint32_t slot) const { return slot / static_cast<std::uint32_t>(tpn_); }
  int distance(NodeId a, NodeId b) const {
    const Coord& p = coords_[a];
    const Coord& q = coords_[b];
    return hops_[0][static_cast<std::size_t>(p.x * extent_[0] + q.x)] +
           hops_[1][static_cast<std::size_t>(p.y * extent_[1] + q.y)] +
           hops_[2][static_cast<std::size_t>(p.z * extent_[2] + q.z)];
  }
  // The node `n` moved by (dx, dy, dz), or nullopt off the edge of a mesh.
  std::optional<NodeId> moved(NodeId n, int dx, int dy, int dz) const {
    Coord c = coords_[n];
    const std::array<int, 3> delta{dx, dy, dz};
    for (int d = 0; d < kDims; ++d) {
      const auto dim = static_cast<Dim>(d);
      const int e = extent_[static_cast<std::size_t>(d)];
      int v = c[dim] + delta[static_cast<std::size_t>(d)];
      if (v < 0 || v >= e) {
        if (!shape_.is_torus(dim)) return std::nullopt;
        v = (v % e + e) % e;
      }
      c[dim] = v;
    }
    return shape_.node_id(c);
  }

 private:
  Shape shape_;
  int tpn_;
  int nodes_;
  std::array<int, 3> extent_{};
  std::array<std::vector<std::uint8_t>, 3> hops_;
  std::vector<Coord> coords_;
};

// Undirected view of the matrix: per task its partners and the bytes both ways.
struct Graph {
  std::vector<std::size_t> begin;  // CSR: partners of task i are [begin[i], begin[i + 1])
  std::vector<std::pair<std::uint32_t, std::uint64_t>> edges;
  std::vector<std::uint64_t> weight;  // per task: all its bytes to others

  explicit Graph(const CommMatrix& m) {
    const auto n = static_cast<std::size_t>(m.tasks());
    std::vector<std::vector<std::pair<std::uint32_t, std::uint64_t>>> adj(n);
    for (const Flow& f : m.flows()) {
      if (f.source == f.dest) continue;
      adj[f.source].emplace_back(f.dest, f.bytes);
      adj[f.dest].emplace_back(f.source, f.bytes);
    }
    begin.push_back(0);
    weight.assign(n, 0);
    for (std::size_t i = 0; i < n; ++i) {
      auto& a = adj[i];
      std::sort(a.begin(), a.end());
      for (std::size_t k = 0; k < a.size(); ++k) {
        if (k > 0 && a[k].first == a[k - 1].first)
          edges.back().second += a[k].second;
        else
          edges.push_back(a[k]);
        weight[i] += a[k].second;
      }
      begin.push_back(edges.size());
    }
  }
  std::span<const std::pair<std::uint32_t, std::uint64_t>> partners(std::uint32_t t) const {
    return {edges.data() + begin[t], edges.data() + begin[t + 1]};
  }
};

std::uint64_t checked_add(std::uint64_t a, std::uint64_t b) {
  if (a > std::numeric_limits<std::uint64_t>::max() - b)
    throw ConfigError("the communication matrix's hop-bytes exceed 2^64");
  return a + b;
}

std::uint64_t checked_mul(std::uint64_t a, std::uint64_t b) {
  std::uint64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r))
    throw ConfigError("the communication matrix's hop-bytes exceed 2^64");
  return r;
}

// Lower bound of the hop-bytes: each task's partners, heaviest first, on the nearest distinct
// slots any node offers (the most central node's distance profile: on a torus every node's, on
// a mesh the best), counted from both ends of each pair and halved.
std::uint64_t hop_bytes_lower_bound(const Graph& g, const Geometry& geo) {
  Coord centre{geo.shape().extent(Dim::x) / 2, geo.shape().extent(Dim::y) / 2,
               geo.shape().extent(Dim::z) / 2};
  const NodeId c = geo.shape().node_id(centre);
  std::vector<int> profile;  // distances of the other slots from a slot of the centre node
  profile.reserve(static_cast<std::size_t>(geo.slots()));
  for (int t = 1; t < geo.tasks_per_node(); ++t)
    profile.push_back(0);
  for (int n = 0; n < geo.nodes(); ++n)
    if (static_cast<NodeId>(n) != c)
      for (int t = 0; t < geo.tasks_per_node(); ++t)
        profile.push_back(geo.distance(c, static_cast<NodeId>(n)));
  std::sort(profile.begin(), profile.end());
  // Saturates instead of overflowing: a bound of 2^64 - 1 is still a (useless) bound.
  constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
  std::uint64_t twice = 0;
  std::vector<std::uint64_t> w;
  for (std::uint32_t t = 0; t + 1 < g.begin.size(); ++t) {
    w.clear();
    for (const auto& [p, bytes] : g.partners(t))
      w.push_back(bytes);
    std::sort(w.begin(), w.end(), std::greater<>());
    for (std::size_t k = 0; k < w.size() && k < profile.size(); ++k) {
      std::uint64_t term = 0;
      if (__builtin_mul_overflow(w[k], static_cast<std::uint64_t>(profile[k]), &term) ||
          __builtin_add_overflow(twice, term, &twice))
        return kMax;
    }
  }
  return twice / 2 + twice % 2;
}

std::size_t link_id(Link l) {
  return static_cast<std::size_t>(l.node) * kDirections + static_cast<std::size_t>(l.dir);
}

Link link_of(std::size_t id) {
  return {static_cast<NodeId>(id / kDirections), static_cast<Direction>(id % kDirections)};
}

// The search state: which slot each task is in, and which task each slot holds.
struct State {
  std::vector<std::uint32_t> slot_of;
  std::vector<std::int32_t> task_of;

  State(int tasks, int slots)
      : slot_of(static_cast<std::size_t>(tasks), 0), task_of(static_cast<std::size_t>(slots), -1) {}
  void put(std::uint32_t task, std::uint32_t slot) {
    slot_of[task] = slot;
    task_of[slot] = static_cast<std::int32_t>(task);
  }
  // Task `a` moves to `slot`; its occupant (if any) takes a's old slot.
  void swap_into(std::uint32_t a, std::uint32_t slot) {
    const std::uint32_t old = slot_of[a];
    const std::int32_t b = task_of[slot];
    put(a, slot);
    task_of[old] = b;
    if (b != kEmpty) slot_of[static_cast<std::uint32_t>(b)] = old;
  }
};

State state_of(const Mapping& m, const Geometry& geo) {
  State s(m.size(), geo.slots());
  for (int r = 0; r < m.size(); ++r) {
    const auto loc = m.location(static_cast<Rank>(r));
    s.put(static_cast<std::uint32_t>(r),
          loc.node * static_cast<std::uint32_t>(geo.tasks_per_node()) +
              static_cast<std::uint32_t>(loc.t));
  }
  return s;
}

Mapping mapping_of(const State& s, const Geometry& geo) {
  std::vector<TaskLocation> locs;
  locs.reserve(s.slot_of.size());
  for (const std::uint32_t slot : s.slot_of)
    locs.push_back({geo.node_of(slot),
                    static_cast<int>(slot % static_cast<std::uint32_t>(geo.tasks_per_node()))});
  return Mapping::from_locations(geo.shape(), geo.tasks_per_node(), std::move(locs));
}

class Optimizer {
 public:
  Optimizer(const CommMatrix& m, const Mapping& start, const OptimizeOptions& o)
      : matrix_(m),
        options_(o),
        geo_(start.shape(), start.tasks_per_node()),
        graph_(m),
        tasks_(m.tasks()),
        rng_(o.seed),
        deadline_(Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                     std::chrono::duration<double>(o.max_seconds))) {}

  OptimizeResult run(const Mapping& start) {
    OptimizeResult r{start, rate(state_of(start, geo_)), {}, 0, 0, false};
    // Several greedy placements: the deterministic one, then others from a random first task with
    // ties between slots broken at random (which of the job's dimensions goes along which of
    // the torus's is decided by such ties); the best one is improved.
    bound_ = hop_bytes_lower_bound(graph_, geo_);
    State s = greedy(std::nullopt);
    std::uint64_t hb = hop_bytes(s);
    // Only sparse matrices have a geometry for the ties to get wrong.
    const bool sparse =
        2 * graph_.edges.size() <= kLookaheadDegree * static_cast<std::size_t>(tasks_);
    for (int k = 1; sparse && k < kGreedyStarts && hb > bound_ && !out_of_time(); ++k) {
      State other =
          greedy(static_cast<std::uint32_t>(rng_.next() % static_cast<std::uint64_t>(tasks_)));
      if (const auto other_hb = hop_bytes(other); other_hb < hb) {
        s = std::move(other);
        hb = other_hb;
      }
    }
    r.greedy_hop_bytes = hb;
    if (hb > bound_) anneal(s, hb, r);  // at the bound nothing can be better
    reduce_busiest_link(s, hb);
    const MappingRating after = rate(s);
    if (after.better_than(r.before)) {
      r.mapping = mapping_of(s, geo_);
      r.after = after;
    } else {
      r.after = r.before;  // never worse than where we started
    }
    return r;
  }

  MappingRating rate(const State& s) const {
    MappingRating r;
    r.hop_bytes = hop_bytes(s);
    for (const Flow& f : matrix_.flows())
      if (f.source != f.dest) r.total_bytes = checked_add(r.total_bytes, f.bytes);
    const auto loads = link_loads(s);
    const auto busiest = std::max_element(loads.begin(), loads.end());
    if (busiest != loads.end() && *busiest > 0) {
      r.busiest_link_bytes = *busiest;
      r.busiest_link = link_of(static_cast<std::size_t>(busiest - loads.begin()));
    }
    r.hop_bytes_lower_bound = hop_bytes_lower_bound(graph_, geo_);
    r.busiest_link_lower_bound = 0;
    if (const std::size_t links = usable_links(); links > 0)
      r.busiest_link_lower_bound = (r.hop_bytes_lower_bound + links - 1) / links;
    // One task per node: every pair's bytes cross at least one link, all on the same route.
    if (geo_.tasks_per_node() == 1 && geo_.nodes() > 1)
      for (const Flow& f : matrix_.flows())
        if (f.source != f.dest)
          r.busiest_link_lower_bound = std::max(r.busiest_link_lower_bound, f.bytes);
    return r;
  }

 private:
  NodeId node(const State& s, std::uint32_t task) const { return geo_.node_of(s.slot_of[task]); }

  std::uint64_t hop_bytes(const State& s) const {
    std::uint64_t total = 0;
    for (const Flow& f : matrix_.flows())
      total = checked_add(total, checked_mul(f.bytes, static_cast<std::uint64_t>(geo_.distance(
                                                          node(s, f.source), node(s, f.dest)))));
    return total;
  }

  std::vector<std::uint64_t> link_loads(const State& s) const {
    std::vector<std::uint64_t> loads(static_cast<std::size_t>(geo_.nodes()) * kDirections, 0);
    for (const Flow& f : matrix_.flows())
      add_route(loads, node(s, f.source), node(s, f.dest), f.bytes, true);
    return loads;
  }

  void add_route(std::vector<std::uint64_t>& loads, NodeId a, NodeId b, std::uint64_t bytes,
                 bool add) const {
    if (a == b) return;
    deterministic_route(geo_.shape(), a, b).for_each_link(geo_.shape(), [&](Link l) {
      auto& v = loads[link_id(l)];
      v = add ? checked_add(v, bytes) : v - bytes;
    });
  }

  std::size_t usable_links() const {
    std::size_t links = 0;
    for (int d = 0; d < kDims; ++d) {
      const auto dim = static_cast<Dim>(d);
      const int e = geo_.shape().extent(dim);
      if (e < 2) continue;
      const int per_line = geo_.shape().is_torus(dim) ? (e == 2 ? 2 : 2 * e) : 2 * (e - 1);
      links += static_cast<std::size_t>(per_line) * static_cast<std::size_t>(geo_.nodes() / e);
    }
    return links;
  }

  // Weighted distance from `n` to the task's placed partners.
  std::uint64_t placed_cost(const State& s, std::uint32_t task, NodeId n,
                            const std::vector<bool>& placed) const {
    std::uint64_t c = 0;
    for (const auto& [p, w] : graph_.partners(task))
      if (placed[p]) c += w * static_cast<std::uint64_t>(geo_.distance(n, node(s, p)));
    return c;
  }

  // The nearest free slot to node `from` (breadth first over the torus).
  std::optional<std::uint32_t> nearest_free(const State& s, NodeId from) const {
    std::vector<bool> seen(static_cast<std::size_t>(geo_.nodes()), false);
    std::deque<NodeId> queue{from};
    seen[from] = true;
    while (!queue.empty()) {
      const NodeId n = queue.front();
      queue.pop_front();
      for (int t = 0; t < geo_.tasks_per_node(); ++t) {
        const auto slot =
            n * static_cast<std::uint32_t>(geo_.tasks_per_node()) + static_cast<std::uint32_t>(t);
        if (s.task_of[slot] == kEmpty) return slot;
      }
      for (int d = 0; d < kDirections; ++d)
        if (const auto next = geo_.shape().neighbour(n, static_cast<Direction>(d));
            next && !seen[*next]) {
          seen[*next] = true;
          queue.push_back(*next);
        }
    }
    return std::nullopt;
  }

  // Greedy placement: the unplaced task with the most bytes to placed tasks goes next, to the
  // free slot (within two hops of its placed partners) with the least weighted distance to them.
  State greedy(std::optional<std::uint32_t> first) {
    State s(tasks_, geo_.slots());
    std::vector<bool> placed(static_cast<std::size_t>(tasks_), false);
    std::vector<std::uint64_t> connection(static_cast<std::size_t>(tasks_), 0);
    // Paths of two edges to placed tasks: among equally connected tasks, the one that closes
    // more squares with the placed ones is the better determined (in a grid, a neighbour at a
    // right angle to a placed edge before the one that continues it).
    std::vector<std::uint64_t> two_paths(static_cast<std::size_t>(tasks_), 0);
    // conn, two-paths, weight, -task
    using Entry = std::tuple<std::uint64_t, std::uint64_t, std::uint64_t, std::int64_t>;
    std::priority_queue<Entry> queue;
    std::vector<std::uint32_t> by_weight(static_cast<std::size_t>(tasks_));
    for (std::uint32_t t = 0; t < static_cast<std::uint32_t>(tasks_); ++t)
      by_weight[t] = t;
    std::stable_sort(by_weight.begin(), by_weight.end(),
                     [&](auto a, auto b) { return graph_.weight[a] > graph_.weight[b]; });
    const Shape& shape = geo_.shape();
    const NodeId centre = shape.node_id(
        {shape.extent(Dim::x) / 2, shape.extent(Dim::y) / 2, shape.extent(Dim::z) / 2});
    std::size_t next_seed = 0;
    std::vector<std::uint32_t> candidates, touched;
    std::vector<std::pair<std::uint64_t, std::uint32_t>> anchors;
    for (int placed_count = 0; placed_count < tasks_; ++placed_count) {
      std::optional<std::uint32_t> task;
      while (!queue.empty()) {
        const auto [conn, paths, w, neg] = queue.top();
        queue.pop();
        const auto t = static_cast<std::uint32_t>(-neg);
        if (!placed[t] && conn == connection[t] && paths == two_paths[t]) {
          task = t;
          break;
        }
      }
      if (!task) {  // a new component (or a task that talks to nobody): the heaviest left
        while (placed[by_weight[next_seed]])
          ++next_seed;
        task = by_weight[next_seed];
        if (first && placed_count == 0) task = *first;
      }
      const std::uint32_t t = *task;
      candidates.clear();
      // Slots near its placed partners: all of them for a sparse row, the heaviest few for a
      // dense one (near everyone is everywhere, and costing every slot would be quadratic).
      anchors.clear();
      for (const auto& [p, w] : graph_.partners(t))
        if (placed[p]) anchors.emplace_back(w, p);
      if (anchors.size() > kAnchors) {
        std::partial_sort(anchors.begin(), anchors.begin() + kAnchors, anchors.end(),
                          std::greater<>());
        anchors.resize(kAnchors);
      }
      for (int radius = 1; radius <= 2 && candidates.empty(); ++radius)
        for (const auto& [w, p] : anchors)
          add_candidates(s, node(s, p), radius, candidates);
      std::uint32_t slot = 0;
      if (candidates.empty()) {
        NodeId from = centre;
        std::uint64_t heaviest = 0;
        for (const auto& [p, w] : graph_.partners(t))
          if (placed[p] && w > heaviest) heaviest = w, from = node(s, p);
        slot = *nearest_free(s, from);
      } else {
        std::sort(candidates.begin(), candidates.end());
        candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
        if (first)
          for (std::size_t k = candidates.size(); k > 1; --k)
            std::swap(candidates[k - 1], candidates[rng_.next() % k]);
        // A task with few partners looks one task ahead (lookahead()); dense rows (all-to-all)
        // have no geometry to guess and would make it quadratic.
        const bool ahead = graph_.partners(t).size() <= kLookaheadDegree;
        std::uint64_t best = std::numeric_limits<std::uint64_t>::max();
        for (const std::uint32_t c : candidates) {
          const auto cost = placed_cost(s, t, geo_.node_of(c), placed);
          if (cost >= best) continue;  // the lookahead only adds
          const auto total = ahead ? cost + lookahead(s, t, c, placed) : cost;
          if (total < best) best = total, slot = c;
        }
      }
      s.put(t, slot);
      placed[t] = true;
      touched.clear();
      for (const auto& [p, w] : graph_.partners(t))
        if (!placed[p]) {
          connection[p] += w;
          touched.push_back(p);
        }
      if (graph_.partners(t).size() <= kLookaheadDegree)
        for (const auto& [u, w] : graph_.partners(t)) {
          if (graph_.partners(u).size() > kLookaheadDegree) continue;
          for (const auto& [p, wp] : graph_.partners(u))
            if (!placed[p] && connection[p] > 0) {
              ++two_paths[p];
              touched.push_back(p);
            }
        }
      std::sort(touched.begin(), touched.end());
      touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
      for (const std::uint32_t p : touched)
        queue.emplace(connection[p], two_paths[p], graph_.weight[p], -static_cast<std::int64_t>(p));
    }
    return s;
  }

  // What placing task `t` at `slot` costs the partners of t that are not placed yet but already
  // have other placed partners (the heaviest few): each at its best free slot near t's slot or
  // near its placed partners. Two placements equally good for t alone (a straight line or a turn
  // in a grid) differ here: the turn leaves a slot next to both of a later task's partners.
  std::uint64_t lookahead(const State& s, std::uint32_t t, std::uint32_t slot,
                          const std::vector<bool>& placed) const {
    constexpr std::size_t kPartners = 8;
    std::array<std::pair<std::uint64_t, std::uint32_t>, kPartners> heaviest{};
    std::size_t count = 0;
    for (const auto& [u, w] : graph_.partners(t)) {
      if (placed[u]) continue;
      bool anchored = false;
      for (const auto& [q, wq] : graph_.partners(u))
        if (placed[q]) {
          anchored = true;
          break;
        }
      if (!anchored) continue;
      if (count < kPartners) {
        heaviest[count++] = {w, u};
      } else {
        auto lightest = std::min_element(heaviest.begin(), heaviest.end());
        if (w > lightest->first) *lightest = {w, u};
      }
    }
    const NodeId here = geo_.node_of(slot);
    std::uint64_t total = 0;
    std::vector<std::uint32_t> options;
    for (std::size_t k = 0; k < count; ++k) {
      const auto [w, u] = heaviest[k];
      options.clear();
      add_candidates(s, here, 1, options);
      for (const auto& [q, wq] : graph_.partners(u))
        if (placed[q]) add_candidates(s, node(s, q), 1, options);
      std::uint64_t best = std::numeric_limits<std::uint64_t>::max();
      for (const std::uint32_t o : options) {
        if (o == slot) continue;
        const NodeId n = geo_.node_of(o);
        best = std::min(best, placed_cost(s, u, n, placed) +
                                  w * static_cast<std::uint64_t>(geo_.distance(n, here)));
      }
      if (best != std::numeric_limits<std::uint64_t>::max()) total += best;
    }
    return total;
  }

  void add_candidates(const State& s, NodeId around, int radius,
                      std::vector<std::uint32_t>& out) const {
    for (int dx = -radius; dx <= radius; ++dx)
      for (int dy = -radius; dy <= radius; ++dy)
        for (int dz = -radius; dz <= radius; ++dz) {
          if (std::abs(dx) + std::abs(dy) + std::abs(dz) > radius) continue;
          const auto n = geo_.moved(around, dx, dy, dz);
          if (!n) continue;
          for (int t = 0; t < geo_.tasks_per_node(); ++t) {
            const auto slot = *n * static_cast<std::uint32_t>(geo_.tasks_per_node()) +
                              static_cast<std::uint32_t>(t);
            if (s.task_of[slot] == kEmpty) out.push_back(slot);
          }
        }
  }

  // Change of hop-bytes when task `a` moves to `slot` and that slot's task (if any) to a's.
  std::int64_t swap_delta(const State& s, std::uint32_t a, std::uint32_t slot) const {
    const NodeId na = node(s, a);
    const NodeId nb = geo_.node_of(slot);
    if (na == nb) return 0;
    const std::int32_t b = s.task_of[slot];
    std::int64_t delta = 0;
    for (const auto& [p, w] : graph_.partners(a)) {
      if (static_cast<std::int32_t>(p) == b) continue;
      const NodeId np = node(s, p);
      delta += static_cast<std::int64_t>(w) * (geo_.distance(nb, np) - geo_.distance(na, np));
    }
    if (b != kEmpty)
      for (const auto& [p, w] : graph_.partners(static_cast<std::uint32_t>(b))) {
        if (p == a) continue;
        const NodeId np = node(s, p);
        delta += static_cast<std::int64_t>(w) * (geo_.distance(na, np) - geo_.distance(nb, np));
      }
    return delta;
  }

  // A move for task `a`: mostly next to one of its partners, sometimes anywhere.
  std::uint32_t propose(const State& s, std::uint32_t a) {
    const auto partners = graph_.partners(a);
    const auto tpn = static_cast<std::uint32_t>(geo_.tasks_per_node());
    if (!partners.empty() && rng_.below(8) != 0) {
      const auto& [p, w] = partners[rng_.next() % partners.size()];
      NodeId n = node(s, p);
      if (const unsigned d = rng_.below(7); d < kDirections)
        n = geo_.shape().neighbour(n, static_cast<Direction>(d)).value_or(n);
      return n * tpn + static_cast<std::uint32_t>(rng_.below(tpn));
    }
    return static_cast<std::uint32_t>(rng_.next() % static_cast<std::uint64_t>(geo_.slots()));
  }

  bool out_of_time() const { return Clock::now() > deadline_; }

  // Simulated annealing over swaps; keeps the best state seen.
  void anneal(State& s, std::uint64_t& hb, OptimizeResult& r) {
    if (tasks_ < 2 || graph_.edges.empty()) return;
    const double degree = 2.0 * static_cast<double>(graph_.edges.size()) / tasks_;
    const std::uint64_t moves =
        std::min({options_.max_moves, options_.moves_per_task * static_cast<std::uint64_t>(tasks_),
                  static_cast<std::uint64_t>(kWorkBudget / std::max(1.0, degree))});
    // Starting temperature: the mean uphill step of a sample of moves.
    double uphill = 0;
    int ups = 0;
    for (int i = 0; i < 1000; ++i) {
      const auto a = static_cast<std::uint32_t>(rng_.next() % static_cast<std::uint64_t>(tasks_));
      if (const auto d = swap_delta(s, a, propose(s, a)); d > 0)
        uphill += static_cast<double>(d), ++ups;
    }
    if (ups == 0) return;
    const double t0 = 0.5 * uphill / ups;
    const double t_end = t0 * 1e-4;
    const double cooling = std::pow(t_end / t0, 1.0 / static_cast<double>(moves));
    double temperature = t0;
    State best = s;
    std::uint64_t best_hb = hb;
    std::int64_t current = static_cast<std::int64_t>(hb);
    for (std::uint64_t i = 0; i < moves; ++i, temperature *= cooling) {
      if ((i & 0xffff) == 0 && out_of_time()) {
        r.time_capped = true;
        break;
      }
      ++r.moves;
      const auto a = static_cast<std::uint32_t>(rng_.next() % static_cast<std::uint64_t>(tasks_));
      const std::uint32_t slot = propose(s, a);
      if (slot == s.slot_of[a]) continue;
      const std::int64_t d = swap_delta(s, a, slot);
      if (d > 0) {
        const double u = static_cast<double>(rng_.next() >> 11) * 0x1.0p-53;
        if (u >= std::exp(-static_cast<double>(d) / temperature)) continue;
      }
      s.swap_into(a, slot);
      current += d;
      if (static_cast<std::uint64_t>(current) < best_hb) {
        best_hb = static_cast<std::uint64_t>(current);
        best = s;
        if (best_hb <= bound_) break;
      }
    }
    s = std::move(best);
    hb = best_hb;
  }

  // Swaps that lower the busiest link's load (then the sum of squared link loads) without
  // raising hop-bytes, a bounded number of tries.
  void reduce_busiest_link(State& s, std::uint64_t& hb) {
    if (tasks_ < 2 || graph_.edges.empty()) return;
    std::vector<std::vector<std::size_t>> flows_of(static_cast<std::size_t>(tasks_));
    const auto& flows = matrix_.flows();
    for (std::size_t i = 0; i < flows.size(); ++i) {
      if (flows[i].source == flows[i].dest) continue;
      flows_of[flows[i].source].push_back(i);
      flows_of[flows[i].dest].push_back(i);
    }
    auto loads = link_loads(s);
    const auto score = [&] {
      long double squares = 0;
      std::uint64_t max = 0;
      for (const auto v : loads) {
        squares += static_cast<long double>(v) * static_cast<long double>(v);
        max = std::max(max, v);
      }
      return std::pair(max, squares);
    };
    auto current = score();
    // Each try moves the routes of two tasks' flows and scans every link.
    const double per_try = 2.0 * static_cast<double>(flows.size()) / tasks_ *
                               (geo_.shape().extent(Dim::x) + geo_.shape().extent(Dim::y) +
                                geo_.shape().extent(Dim::z)) /
                               4.0 +
                           static_cast<double>(loads.size());
    const std::uint64_t tries =
        std::min<std::uint64_t>({200'000, 200 * static_cast<std::uint64_t>(tasks_),
                                 static_cast<std::uint64_t>(kWorkBudget / per_try)});
    std::vector<std::size_t> touched;
    const auto move_flows = [&](bool add) {
      for (const std::size_t i : touched)
        add_route(loads, node(s, flows[i].source), node(s, flows[i].dest), flows[i].bytes, add);
    };
    for (std::uint64_t i = 0; i < tries; ++i) {
      if ((i & 0xff) == 0 && out_of_time()) break;
      const auto a = static_cast<std::uint32_t>(rng_.next() % static_cast<std::uint64_t>(tasks_));
      const std::uint32_t slot = propose(s, a);
      if (slot == s.slot_of[a]) continue;
      const std::int64_t d = swap_delta(s, a, slot);
      if (d > 0) continue;
      const std::int32_t b = s.task_of[slot];
      const std::uint32_t old = s.slot_of[a];
      touched = flows_of[a];
      if (b != kEmpty)
        for (const std::size_t f : flows_of[static_cast<std::uint32_t>(b)])
          if (flows[f].source != a && flows[f].dest != a) touched.push_back(f);
      move_flows(false);
      s.swap_into(a, slot);
      move_flows(true);
      const auto next = score();
      if (next < current) {
        current = next;
        hb = static_cast<std::uint64_t>(static_cast<std::int64_t>(hb) + d);
        continue;
      }
      move_flows(false);  // undo
      s.swap_into(a, old);
      move_flows(true);
    }
  }

  const CommMatrix& matrix_;
  OptimizeOptions options_;
  Geometry geo_;
  Graph graph_;
  int tasks_;
  Rng rng_;
  Clock::time_point deadline_;
  std::uint64_t bound_ = 0;  // the hop-bytes lower bound
};

void check_sizes(const CommMatrix& matrix, const Mapping& mapping) {
  if (matrix.tasks() != mapping.size())
    throw ConfigError("the communication matrix has " + std::to_string(matrix.tasks()) +
                      " tasks but the mapping has " + std::to_string(mapping.size()));
}

}  // namespace

MappingRating rate_mapping(const CommMatrix& matrix, const Mapping& mapping) {
  check_sizes(matrix, mapping);
  const Optimizer o(matrix, mapping, {});
  return o.rate(state_of(mapping, Geometry(mapping.shape(), mapping.tasks_per_node())));
}

OptimizeResult optimize_mapping(const CommMatrix& matrix, const Mapping& start,
                                const OptimizeOptions& options) {
  check_sizes(matrix, start);
  Optimizer o(matrix, start, options);
  return o.run(start);
}

}  // namespace bgl::torus_emu
