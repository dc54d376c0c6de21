#include "bgl/collectives/wide_area/min3.hpp"

#include <algorithm>
#include <limits>

#include "bgl/torus_emu/error.hpp"

namespace bgl::collectives::wide_area {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct Candidate {
  double time = kInf;
  int src = -1;
  int dst = -1;
};

// Minimization 1: the best (source, receiver) for block d into pool q; strict '<' keeps the
// first minimum in (source insertion order, ascending host) order.
Candidate find_min(const TransferModel& model, int d, const std::vector<int>& sources,
                   const Pool& q) {
  Candidate best;
  for (int s : sources) {
    for (int h : q.hosts) {
      const double t = model.evaluate(d, s, h).finish;
      if (t < best.time) best = {t, s, h};
    }
  }
  return best;
}

}  // namespace

std::vector<std::vector<int>> schedule_pool_level(TransferModel& model, const PoolTree& tree,
                                                  int pool, const std::vector<int>& blocks,
                                                  const std::vector<int>& init_source,
                                                  std::vector<Transfer>& out) {
  const Pool& p = tree.pool(pool);
  const std::size_t nb = blocks.size();
  const Duplex mode = model.options().duplex;
  // INITSCHED.
  std::vector<std::vector<int>> sources(nb);
  struct Dest {
    int pool;
    Candidate best;
  };
  std::vector<std::vector<Dest>> dest(nb);
  for (std::size_t i = 0; i < nb; ++i) {
    sources[i] = {init_source[i]};
    for (int q : p.children) {
      const auto& hosts = tree.pool(q).hosts;
      if (std::binary_search(hosts.begin(), hosts.end(), init_source[i])) continue;
      dest[i].push_back({q, find_min(model, blocks[i], sources[i], tree.pool(q))});
    }
  }
  // Minimization 2 per block (its best sub-pool, first minimum wins), kept up to date for the
  // blocks whose entries change; minimization 3 scans these per-block bests.
  std::vector<std::size_t> best_q(nb, 0);
  auto refresh = [&](std::size_t i) {
    std::size_t qi = 0;
    for (std::size_t j = 1; j < dest[i].size(); ++j) {
      if (dest[i][j].best.time < dest[i][qi].best.time) qi = j;
    }
    best_q[i] = qi;
  };
  for (std::size_t i = 0; i < nb; ++i)
    refresh(i);
  for (;;) {
    double best_t = kInf;
    std::size_t sd = nb;
    bool found = false;
    for (std::size_t i = 0; i < nb; ++i) {
      if (dest[i].empty()) continue;
      found = true;
      if (dest[i][best_q[i]].best.time < best_t) {
        best_t = dest[i][best_q[i]].best.time;
        sd = i;
      }
    }
    if (!found) break;
    if (sd == nb) {
      throw ConfigError("min3: no finite transfer time (bandwidth or latency not finite)");
    }
    const std::size_t sp = best_q[sd];
    const Candidate c = dest[sd][sp].best;
    const Timing t = model.commit(blocks[sd], c.src, c.dst);
    out.push_back({c.src, c.dst, {blocks[sd]}, t.start, t.finish, pool});
    sources[sd].push_back(c.dst);
    dest[sd].erase(dest[sd].begin() + static_cast<std::ptrdiff_t>(sp));
    // UPDATE-AFTER-SCHED: times only grow, so only entries touching the busy hosts change.
    for (auto& e : dest[sd])
      e.best = find_min(model, blocks[sd], sources[sd], tree.pool(e.pool));
    refresh(sd);
    for (std::size_t i = 0; i < nb; ++i) {
      if (i == sd) continue;
      bool changed = false;
      for (auto& e : dest[i]) {
        const bool touched = e.best.src == c.src || e.best.dst == c.dst ||
                             (mode == Duplex::half && (e.best.src == c.dst || e.best.dst == c.src));
        if (touched) {
          e.best = find_min(model, blocks[i], sources[i], tree.pool(e.pool));
          changed = true;
        }
      }
      if (changed) refresh(i);
    }
  }
  return sources;
}

namespace {

void min3_recursive(TransferModel& model, const PoolTree& tree, int pool,
                    const std::vector<int>& blocks, const std::vector<int>& init_source,
                    std::vector<Transfer>& out) {
  const Pool& p = tree.pool(pool);
  if (p.children.empty()) return;
  const auto sources = schedule_pool_level(model, tree, pool, blocks, init_source, out);
  if (p.children.size() == p.hosts.size()) return;  // children are single hosts: done
  for (int q : p.children) {
    const auto& hosts = tree.pool(q).hosts;
    std::vector<int> sub(blocks.size());
    for (std::size_t i = 0; i < blocks.size(); ++i) {
      auto it = std::find_if(sources[i].begin(), sources[i].end(), [&](int s) {
        return std::binary_search(hosts.begin(), hosts.end(), s);
      });
      sub[i] = *it;  // wide-area optimality guarantees exactly one holder entered q
    }
    min3_recursive(model, tree, q, blocks, sub, out);
  }
}

}  // namespace

std::vector<Transfer> min3_allgather(const HostNetwork& net, const PoolTree& tree,
                                     std::size_t block_bytes, ModelOptions options) {
  if (tree.hosts() != net.hosts()) {
    throw ConfigError("min3: pool tree has " + std::to_string(tree.hosts()) +
                      " hosts, the network " + std::to_string(net.hosts()));
  }
  const int n = net.hosts();
  TransferModel model(net, options, n, block_bytes);
  std::vector<int> blocks(static_cast<std::size_t>(n));
  for (int d = 0; d < n; ++d)
    blocks[static_cast<std::size_t>(d)] = d;
  std::vector<Transfer> out;
  min3_recursive(model, tree, 0, blocks, blocks, out);
  return out;
}

}  // namespace bgl::collectives::wide_area
