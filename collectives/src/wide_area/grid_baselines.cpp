#include "bgl/collectives/wide_area/grid_baselines.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "bgl/torus_emu/error.hpp"

namespace bgl::collectives::wide_area {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

int mod(int a, int n) {
  return ((a % n) + n) % n;
}

bool is_pow2(int n) {
  return n > 0 && (n & (n - 1)) == 0;
}

std::vector<PlannedMessage> plan_simple(int n) {
  // Every process posts its sends in rank order; round j is every process's j-th send.
  std::vector<PlannedMessage> plan;
  for (int j = 0; j < n - 1; ++j) {
    for (int p = 0; p < n; ++p) {
      const int to = j < p ? j : j + 1;  // the j-th rank other than p
      plan.push_back({p, to, {p}});
    }
  }
  return plan;
}

std::vector<PlannedMessage> plan_spreading(int n) {
  std::vector<PlannedMessage> plan;
  for (int i = 1; i < n; ++i) {
    for (int p = 0; p < n; ++p)
      plan.push_back({p, mod(p + i, n), {p}});
  }
  return plan;
}

std::vector<PlannedMessage> plan_ring(int n) {
  std::vector<PlannedMessage> plan;
  for (int i = 1; i < n; ++i) {
    for (int p = 0; p < n; ++p)
      plan.push_back({p, mod(p + 1, n), {mod(p - i + 1, n)}});
  }
  return plan;
}

std::vector<PlannedMessage> plan_recursive_doubling(int n) {
  if (!is_pow2(n)) {
    throw ConfigError("recursive doubling allgather needs a power-of-two host count, got " +
                      std::to_string(n));
  }
  std::vector<PlannedMessage> plan;
  for (int dist = 1; dist < n; dist *= 2) {
    for (int p = 0; p < n; ++p) {
      // p holds the aligned group of `dist` blocks containing p.
      std::vector<int> held;
      const int base = p & ~(dist - 1);
      for (int k = 0; k < dist; ++k)
        held.push_back(base + k);
      plan.push_back({p, p ^ dist, held});
    }
  }
  return plan;
}

std::vector<PlannedMessage> plan_dissemination(int n) {
  std::vector<PlannedMessage> plan;
  for (int dist = 1; dist < n; dist *= 2) {
    const int count = std::min(dist, n - dist);  // the last iteration sends the remainder
    for (int p = 0; p < n; ++p) {
      std::vector<int> blocks;
      for (int k = 0; k < count; ++k)
        blocks.push_back(mod(p - k, n));
      plan.push_back({p, mod(p + dist, n), blocks});
    }
  }
  return plan;
}

// Clusters for MagPIe: the pools whose children are single hosts (LAN level); a host directly
// under a mixed pool is its own cluster.
std::vector<std::vector<int>> leaf_clusters(const PoolTree& tree) {
  std::vector<std::vector<int>> out;
  auto rec = [&](auto&& self, int p) -> void {
    const Pool& pool = tree.pool(p);
    if (pool.children.empty() || pool.children.size() == pool.hosts.size()) {
      out.push_back(pool.hosts);
      return;
    }
    for (int c : pool.children)
      self(self, c);
  };
  rec(rec, 0);
  return out;
}

// Binomial gather of members' bundles to members[0]; held[i] grows with what member i holds.
void binomial_gather(const std::vector<int>& members, std::vector<std::vector<int>>& held,
                     std::vector<PlannedMessage>& plan) {
  const int k = static_cast<int>(members.size());
  for (int dist = 1; dist < k; dist *= 2) {
    for (int i = 0; i + dist < k; i += 2 * dist) {
      auto& src = held[static_cast<std::size_t>(i + dist)];
      plan.push_back(
          {members[static_cast<std::size_t>(i + dist)], members[static_cast<std::size_t>(i)], src});
      auto& dst = held[static_cast<std::size_t>(i)];
      dst.insert(dst.end(), src.begin(), src.end());
    }
  }
}

// Binomial broadcast of `blocks` from members[0].
void binomial_bcast(const std::vector<int>& members, const std::vector<int>& blocks,
                    std::vector<PlannedMessage>& plan) {
  const int k = static_cast<int>(members.size());
  int top = 1;
  while (top < k)
    top *= 2;
  for (int dist = top / 2; dist >= 1; dist /= 2) {
    for (int i = 0; i + dist < k; i += 2 * dist) {
      plan.push_back({members[static_cast<std::size_t>(i)],
                      members[static_cast<std::size_t>(i + dist)], blocks});
    }
  }
}

std::vector<int> all_blocks(int n) {
  std::vector<int> b(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i)
    b[static_cast<std::size_t>(i)] = i;
  return b;
}

std::vector<PlannedMessage> plan_magpie(const PoolTree& tree, int n) {
  const auto clusters = leaf_clusters(tree);
  std::vector<PlannedMessage> plan;
  std::vector<std::vector<int>> bundle;  // per cluster, gathered at its coordinator
  for (const auto& c : clusters) {
    std::vector<std::vector<int>> held;
    for (int h : c)
      held.push_back({h});
    binomial_gather(c, held, plan);
    bundle.push_back(held[0]);
  }
  // Spreading simple among coordinators, on bundles.
  const int k = static_cast<int>(clusters.size());
  for (int i = 1; i < k; ++i) {
    for (int c = 0; c < k; ++c) {
      plan.push_back({clusters[static_cast<std::size_t>(c)][0],
                      clusters[static_cast<std::size_t>(mod(c + i, k))][0],
                      bundle[static_cast<std::size_t>(c)]});
    }
  }
  for (const auto& c : clusters)
    binomial_bcast(c, all_blocks(n), plan);
  return plan;
}

std::vector<PlannedMessage> plan_mpich_g2(const PoolTree& tree, int n) {
  // Gather up the pool hierarchy (binomial over each pool's child coordinators, bottom-up), then
  // broadcast the full result down it (binomial over the child coordinators, top-down). A pool's
  // coordinator is its smallest host.
  std::vector<PlannedMessage> plan;
  std::vector<std::vector<int>> held(static_cast<std::size_t>(n));
  for (int h = 0; h < n; ++h)
    held[static_cast<std::size_t>(h)] = {h};
  auto up = [&](auto&& self, int p) -> void {
    const Pool& pool = tree.pool(p);
    for (int c : pool.children)
      self(self, c);
    if (pool.children.empty()) return;
    std::vector<int> coords;
    std::vector<std::vector<int>> sub;
    for (int c : pool.children) {
      const int h = tree.pool(c).hosts.front();
      coords.push_back(h);
      sub.push_back(held[static_cast<std::size_t>(h)]);
    }
    binomial_gather(coords, sub, plan);
    held[static_cast<std::size_t>(coords[0])] = sub[0];
  };
  up(up, 0);
  const auto everything = all_blocks(n);
  auto down = [&](auto&& self, int p) -> void {
    const Pool& pool = tree.pool(p);
    if (pool.children.empty()) return;
    std::vector<int> coords;
    for (int c : pool.children)
      coords.push_back(tree.pool(c).hosts.front());
    binomial_bcast(coords, everything, plan);
    for (int c : pool.children)
      self(self, c);
  };
  down(down, 0);
  return plan;
}

// Broadcast trees built by "earliest completing edge first" on the unloaded model (the paper's
// Mateescu and ClusteredSA trees are not specified in the seed), then all N trees' edges ordered
// by the min-based simulation: repeatedly commit the ready edge with the earliest modelled finish.
std::vector<Transfer> broadcast_trees(const HostNetwork& net, std::size_t block_bytes,
                                      ModelOptions options) {
  const int n = net.hosts();
  struct Edge {
    int block, from, to;
  };
  std::vector<Edge> edges;
  for (int root = 0; root < n; ++root) {
    std::vector<double> ready(static_cast<std::size_t>(n),
                              kInf);  // when a tree member can send next
    std::vector<bool> in(static_cast<std::size_t>(n), false);
    ready[static_cast<std::size_t>(root)] = 0;
    in[static_cast<std::size_t>(root)] = true;
    for (int added = 1; added < n; ++added) {
      double best = kInf;
      int bs = -1, bh = -1;
      for (int s = 0; s < n; ++s) {
        if (!in[static_cast<std::size_t>(s)]) continue;
        for (int h = 0; h < n; ++h) {
          if (in[static_cast<std::size_t>(h)]) continue;
          const double t = ready[static_cast<std::size_t>(s)] + net.latency(s, h) +
                           static_cast<double>(block_bytes) / net.bandwidth(s, h);
          if (t < best) {
            best = t;
            bs = s;
            bh = h;
          }
        }
      }
      edges.push_back({root, bs, bh});
      ready[static_cast<std::size_t>(bs)] = best;  // single-port: the sender is busy until then
      ready[static_cast<std::size_t>(bh)] = best;
      in[static_cast<std::size_t>(bh)] = true;
    }
  }
  TransferModel model(net, options, n, block_bytes);
  std::vector<Transfer> out;
  std::vector<bool> done(edges.size(), false);
  for (std::size_t k = 0; k < edges.size(); ++k) {
    double best = kInf;
    std::size_t bi = edges.size();
    for (std::size_t i = 0; i < edges.size(); ++i) {
      if (done[i] || model.have(edges[i].block, edges[i].from) == kInf) continue;
      const double t = model.evaluate(edges[i].block, edges[i].from, edges[i].to).finish;
      if (t < best) {
        best = t;
        bi = i;
      }
    }
    const Edge e = edges[bi];
    const Timing t = model.commit(e.block, e.from, e.to);
    out.push_back({e.from, e.to, {e.block}, t.start, t.finish, -1});
    done[bi] = true;
  }
  return out;
}

}  // namespace

std::string_view name(GridAlgorithm a) {
  switch (a) {
    case GridAlgorithm::min3:
      return "min3";
    case GridAlgorithm::simple:
      return "simple";
    case GridAlgorithm::spreading_simple:
      return "spreading_simple";
    case GridAlgorithm::ring:
      return "ring";
    case GridAlgorithm::recursive_doubling:
      return "recursive_doubling";
    case GridAlgorithm::dissemination:
      return "dissemination";
    case GridAlgorithm::mpich:
      return "mpich";
    case GridAlgorithm::magpie:
      return "magpie";
    case GridAlgorithm::mpich_g2:
      return "mpich_g2";
    case GridAlgorithm::broadcast_trees:
      return "broadcast_trees";
  }
  return "?";
}

std::vector<GridAlgorithm> all_grid_algorithms() {
  return {GridAlgorithm::min3,
          GridAlgorithm::simple,
          GridAlgorithm::spreading_simple,
          GridAlgorithm::ring,
          GridAlgorithm::recursive_doubling,
          GridAlgorithm::dissemination,
          GridAlgorithm::mpich,
          GridAlgorithm::magpie,
          GridAlgorithm::mpich_g2,
          GridAlgorithm::broadcast_trees};
}

GridAlgorithm parse_grid_algorithm(std::string_view text) {
  std::string valid;
  for (GridAlgorithm a : all_grid_algorithms()) {
    if (name(a) == text) return a;
    valid += (valid.empty() ? "" : ", ") + std::string(name(a));
  }
  throw ConfigError("unknown grid allgather algorithm \"" + std::string(text) +
                    "\" (valid: " + valid + ")");
}

std::vector<Transfer> time_plan(const HostNetwork& net, const std::vector<PlannedMessage>& plan,
                                std::size_t block_bytes, ModelOptions options) {
  const int n = net.hosts();
  ModelOptions causal = options;
  causal.paper_literal = false;  // holding is checked below either way
  TransferModel model(net, options, n, block_bytes);
  TransferModel holding(net, causal, n, block_bytes);
  std::vector<Transfer> out;
  for (const auto& m : plan) {
    for (int d : m.blocks) {
      if (holding.have(d, m.from) == kInf) {
        throw ConfigError("grid plan: host " + std::to_string(m.from) + " sends block " +
                          std::to_string(d) + " before holding it");
      }
    }
    holding.commit(m.blocks, m.from, m.to);
    const Timing t = model.commit(m.blocks, m.from, m.to);
    out.push_back({m.from, m.to, m.blocks, t.start, t.finish, -1});
  }
  return out;
}

std::vector<Transfer> grid_allgather(GridAlgorithm algo, const HostNetwork& net,
                                     const PoolTree& tree, std::size_t block_bytes,
                                     ModelOptions options) {
  const int n = net.hosts();
  switch (algo) {
    case GridAlgorithm::min3:
      return min3_allgather(net, tree, block_bytes, options);
    case GridAlgorithm::simple:
      return time_plan(net, plan_simple(n), block_bytes, options);
    case GridAlgorithm::spreading_simple:
      return time_plan(net, plan_spreading(n), block_bytes, options);
    case GridAlgorithm::ring:
      return time_plan(net, plan_ring(n), block_bytes, options);
    case GridAlgorithm::recursive_doubling:
      return time_plan(net, plan_recursive_doubling(n), block_bytes, options);
    case GridAlgorithm::dissemination:
      return time_plan(net, plan_dissemination(n), block_bytes, options);
    case GridAlgorithm::mpich: {
      // MPICH2 1.0.x: recursive doubling below 512 KiB total for powers of two, Bruck
      // (dissemination) below 80 KiB total otherwise, ring for long messages.
      const std::size_t total = block_bytes * static_cast<std::size_t>(n);
      if (total < 512 * 1024 && is_pow2(n)) {
        return time_plan(net, plan_recursive_doubling(n), block_bytes, options);
      }
      if (total < 80 * 1024) return time_plan(net, plan_dissemination(n), block_bytes, options);
      return time_plan(net, plan_ring(n), block_bytes, options);
    }
    case GridAlgorithm::magpie:
      return time_plan(net, plan_magpie(tree, n), block_bytes, options);
    case GridAlgorithm::mpich_g2:
      return time_plan(net, plan_mpich_g2(tree, n), block_bytes, options);
    case GridAlgorithm::broadcast_trees:
      return broadcast_trees(net, block_bytes, options);
  }
  return {};
}

double makespan(const std::vector<Transfer>& transfers) {
  double m = 0;
  for (const auto& t : transfers)
    m = std::max(m, t.finish);
  return m;
}

}  // namespace bgl::collectives::wide_area
