#include "bgl/collectives/wide_area/pool_tree.hpp"

#include <algorithm>
#include <numeric>

namespace bgl::collectives::wide_area {

namespace {

// Ranges of consecutive hosts print as "a-b".
std::string host_list(const std::vector<int>& hosts) {
  std::string out;
  for (std::size_t i = 0; i < hosts.size();) {
    std::size_t j = i;
    while (j + 1 < hosts.size() && hosts[j + 1] == hosts[j] + 1)
      ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(hosts[i]);
    if (j > i) out += "-" + std::to_string(hosts[j]);
    i = j + 1;
  }
  return out;
}

}  // namespace

int PoolTree::add(Pool p) {
  pools_.push_back(std::move(p));
  return static_cast<int>(pools_.size()) - 1;
}

PoolTree PoolTree::flat(int hosts) {
  PoolTree t;
  Pool root;
  root.hosts.resize(static_cast<std::size_t>(hosts));
  std::iota(root.hosts.begin(), root.hosts.end(), 0);
  t.add(std::move(root));
  if (hosts > 1) {
    for (int h = 0; h < hosts; ++h) {
      Pool leaf;
      leaf.hosts = {h};
      leaf.parent = 0;
      const int id = t.add(std::move(leaf));  // add() may reallocate pools_
      t.pools_[0].children.push_back(id);
    }
  }
  return t;
}

PoolTree PoolTree::build(const HostNetwork& net, PoolTreeOptions options) {
  const int n = net.hosts();
  // 1: one symmetric value per unordered pair.
  std::vector<double> w(static_cast<std::size_t>(n) * static_cast<std::size_t>(n), 0.0);
  std::vector<double> values;
  for (int u = 0; u < n; ++u) {
    for (int v = 0; v < n; ++v) {
      if (u == v) continue;
      const double x = (net.bandwidth(u, v) + net.bandwidth(v, u)) / 2;
      w[static_cast<std::size_t>(u * n + v)] = x;
      if (u < v) values.push_back(x);
    }
  }
  // 2-4: sorted values cut into bands within +band of each band's lowest value.
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  std::vector<double> thresholds;
  double band_low = 0, band_high = 0;
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i > 0 && values[i] <= (1.0 + options.band) * band_low) {
      band_high = values[i];
      continue;
    }
    if (i > 0) {
      thresholds.push_back(options.rule == ThresholdRule::band_minimum ? band_low : band_high);
    }
    band_low = band_high = values[i];
  }
  if (!values.empty()) {
    thresholds.push_back(options.rule == ThresholdRule::band_minimum ? band_low : band_high);
  }
  PoolTree t;
  Pool root;
  root.hosts.resize(static_cast<std::size_t>(n));
  std::iota(root.hosts.begin(), root.hosts.end(), 0);
  t.add(std::move(root));
  t.split(0, 0, w, n, thresholds);
  return t;
}

void PoolTree::split(int pool, std::size_t k, const std::vector<double>& w, int n,
                     const std::vector<double>& thresholds) {
  const std::vector<int> hosts = pools_[static_cast<std::size_t>(pool)].hosts;
  if (hosts.size() <= 1) return;
  std::vector<std::vector<int>> parts;
  double used = 0;
  for (; k < thresholds.size(); ++k) {
    // Connected components of the pool's graph of pairs with w >= threshold (hosts ascending, so
    // components come out ordered by their smallest host).
    parts.clear();
    std::vector<int> comp(hosts.size(), -1);
    for (std::size_t s = 0; s < hosts.size(); ++s) {
      if (comp[s] >= 0) continue;
      const int id = static_cast<int>(parts.size());
      parts.push_back({});
      std::vector<std::size_t> stack = {s};
      comp[s] = id;
      while (!stack.empty()) {
        const std::size_t a = stack.back();
        stack.pop_back();
        parts.back().push_back(hosts[a]);
        for (std::size_t b = 0; b < hosts.size(); ++b) {
          if (comp[b] < 0 &&
              w[static_cast<std::size_t>(hosts[a] * n + hosts[b])] >= thresholds[k]) {
            comp[b] = id;
            stack.push_back(b);
          }
        }
      }
      std::sort(parts.back().begin(), parts.back().end());
    }
    if (parts.size() > 1) {
      used = thresholds[k];
      break;
    }
  }
  if (k >= thresholds.size()) {
    parts.clear();
    for (int h : hosts)
      parts.push_back({h});
  }
  pools_[static_cast<std::size_t>(pool)].threshold = used;
  std::vector<int> children;
  for (auto& part : parts) {
    Pool c;
    c.hosts = std::move(part);
    c.parent = pool;
    children.push_back(add(std::move(c)));
  }
  pools_[static_cast<std::size_t>(pool)].children = children;
  for (int c : children)
    split(c, k + 1, w, n, thresholds);
}

std::string PoolTree::to_string() const {
  std::string out;
  auto rec = [&](auto&& self, int p) -> void {
    const Pool& pool = pools_[static_cast<std::size_t>(p)];
    out += '{';
    if (pool.children.empty() || pool.children.size() == pool.hosts.size()) {
      out += host_list(pool.hosts);
    } else {
      for (int c : pool.children)
        self(self, c);
    }
    out += '}';
  };
  rec(rec, 0);
  return out;
}

}  // namespace bgl::collectives::wide_area
