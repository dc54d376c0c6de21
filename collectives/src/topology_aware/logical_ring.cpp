#include "bgl/collectives/topology_aware/logical_ring.hpp"

#include <algorithm>
#include <array>
#include <numeric>
#include <stdexcept>

#include "bgl/torus_emu/distance.hpp"

namespace bgl::collectives::ring {

std::vector<int> dfs_ring(const TreeTopology& tree, int start) {
  const int n = tree.vertices;
  if (n < 1 || static_cast<int>(tree.rank_of_vertex.size()) != n) {
    throw std::invalid_argument("tree topology: rank_of_vertex must have one entry per vertex");
  }
  if (static_cast<int>(tree.edges.size()) != n - 1) {
    throw std::invalid_argument("tree topology: a tree of " + std::to_string(n) + " vertices has " +
                                std::to_string(n - 1) + " edges, got " +
                                std::to_string(tree.edges.size()));
  }
  std::vector<std::vector<int>> adj(static_cast<std::size_t>(n));
  for (auto [a, b] : tree.edges) {
    if (a < 0 || b < 0 || a >= n || b >= n || a == b) {
      throw std::invalid_argument("tree topology: bad edge " + std::to_string(a) + "-" +
                                  std::to_string(b));
    }
    adj[static_cast<std::size_t>(a)].push_back(b);
    adj[static_cast<std::size_t>(b)].push_back(a);
  }
  for (auto& v : adj)
    std::sort(v.begin(), v.end());
  std::vector<int> order;
  std::vector<bool> seen(static_cast<std::size_t>(n), false);
  std::vector<std::pair<int, std::size_t>> stack = {{start, 0}};
  seen[static_cast<std::size_t>(start)] = true;
  if (tree.rank_of_vertex[static_cast<std::size_t>(start)] >= 0) {
    order.push_back(tree.rank_of_vertex[static_cast<std::size_t>(start)]);
  }
  while (!stack.empty()) {
    auto& [v, next] = stack.back();
    const auto& nb = adj[static_cast<std::size_t>(v)];
    if (next == nb.size()) {
      stack.pop_back();
      continue;
    }
    const int u = nb[next++];
    if (seen[static_cast<std::size_t>(u)]) continue;
    seen[static_cast<std::size_t>(u)] = true;
    if (tree.rank_of_vertex[static_cast<std::size_t>(u)] >= 0) {
      order.push_back(tree.rank_of_vertex[static_cast<std::size_t>(u)]);
    }
    stack.push_back({u, 0});
  }
  if (std::count(seen.begin(), seen.end(), true) != n) {
    throw std::invalid_argument("tree topology: the graph is not connected");
  }
  std::vector<int> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  for (std::size_t i = 0; i < sorted.size(); ++i) {
    if (sorted[i] != static_cast<int>(i)) {
      throw std::invalid_argument("tree topology: machine ranks must be 0..k-1, each once");
    }
  }
  return order;
}

int tree_ring_max_load(const TreeTopology& tree, const std::vector<int>& ring) {
  const int n = tree.vertices;
  std::vector<std::vector<int>> adj(static_cast<std::size_t>(n));
  for (auto [a, b] : tree.edges) {
    adj[static_cast<std::size_t>(a)].push_back(b);
    adj[static_cast<std::size_t>(b)].push_back(a);
  }
  std::vector<int> vertex_of_rank(ring.size(), -1);
  for (int v = 0; v < n; ++v) {
    const int r = tree.rank_of_vertex[static_cast<std::size_t>(v)];
    if (r >= 0) vertex_of_rank[static_cast<std::size_t>(r)] = v;
  }
  std::vector<int> load(static_cast<std::size_t>(n) * static_cast<std::size_t>(n), 0);
  int worst = 0;
  for (std::size_t i = 0; i < ring.size() && ring.size() > 1; ++i) {
    const int a = vertex_of_rank[static_cast<std::size_t>(ring[i])];
    const int b = vertex_of_rank[static_cast<std::size_t>(ring[(i + 1) % ring.size()])];
    // Path a -> b by BFS parents from b.
    std::vector<int> parent(static_cast<std::size_t>(n), -1);
    std::vector<int> queue = {b};
    parent[static_cast<std::size_t>(b)] = b;
    for (std::size_t q = 0; q < queue.size(); ++q) {
      for (int u : adj[static_cast<std::size_t>(queue[q])]) {
        if (parent[static_cast<std::size_t>(u)] < 0) {
          parent[static_cast<std::size_t>(u)] = queue[q];
          queue.push_back(u);
        }
      }
    }
    for (int v = a; v != b; v = parent[static_cast<std::size_t>(v)]) {
      const int w = parent[static_cast<std::size_t>(v)];
      worst = std::max(worst, ++load[static_cast<std::size_t>(v) * static_cast<std::size_t>(n) +
                                     static_cast<std::size_t>(w)]);
    }
  }
  return worst;
}

std::vector<torus_emu::NodeId> snake_cycle(const torus_emu::Shape& shape) {
  using torus_emu::Dim;
  std::array<Dim, 3> dims = {Dim::x, Dim::y, Dim::z};
  // All six dimension orders (fastest first), in a fixed order.
  std::array<std::array<int, 3>, 6> perms = {
      {{0, 1, 2}, {1, 0, 2}, {0, 2, 1}, {2, 0, 1}, {1, 2, 0}, {2, 1, 0}}};
  const int n = shape.node_count();
  for (const auto& perm : perms) {
    const Dim a = dims[static_cast<std::size_t>(perm[0])];
    const Dim b = dims[static_cast<std::size_t>(perm[1])];
    const Dim c = dims[static_cast<std::size_t>(perm[2])];
    const int A = shape.extent(a), B = shape.extent(b), C = shape.extent(c);
    std::vector<torus_emu::NodeId> order;
    order.reserve(static_cast<std::size_t>(n));
    int row = 0;
    for (int k = 0; k < C; ++k) {
      for (int jj = 0; jj < B; ++jj, ++row) {
        const int j = (k % 2 == 0) ? jj : B - 1 - jj;
        for (int ii = 0; ii < A; ++ii) {
          const int i = (row % 2 == 0) ? ii : A - 1 - ii;
          torus_emu::Coord co;
          co[a] = i;
          co[b] = j;
          co[c] = k;
          order.push_back(shape.node_id(co));
        }
      }
    }
    if (n == 1 ||
        torus_emu::distance(shape, shape.coord(order.back()), shape.coord(order.front())) == 1) {
      return order;
    }
  }
  return {};
}

std::vector<int> torus_ring(const Params& params) {
  const int p = params.p;
  std::vector<int> ring(static_cast<std::size_t>(p));
  std::iota(ring.begin(), ring.end(), 0);
  if (params.topology.mapping == nullptr) return ring;
  const auto& mapping = *params.topology.mapping;
  const auto cycle = snake_cycle(mapping.shape());
  if (cycle.empty()) return ring;
  std::vector<int> position(static_cast<std::size_t>(mapping.shape().node_count()), 0);
  for (std::size_t i = 0; i < cycle.size(); ++i)
    position[cycle[i]] = static_cast<int>(i);
  auto key = [&](int r) {
    const auto loc = mapping.location(static_cast<torus_emu::Rank>(params.topology.world_rank(r)));
    return std::pair{position[loc.node], loc.t};
  };
  std::stable_sort(ring.begin(), ring.end(), [&](int x, int y) { return key(x) < key(y); });
  return ring;
}

}  // namespace bgl::collectives::ring
