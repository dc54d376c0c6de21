// The grid (Min3) allgather as a schedule generator. The host network comes from the
// file named by BGL_COLL_GRID_NETWORK (docs/COLLECTIVES.md, "Grid allgather input"; one host per
// rank) or, without it, from the torus: every pair gets the link bandwidth and a latency of the
// per-message cost plus the hops between the ranks' nodes (then all pairs share one bandwidth, the
// pool tree is flat and Min3 is its plain greedy, the paper's LAN case).
#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>

#include "bgl/collectives/cost_model.hpp"
#include "bgl/collectives/registry.hpp"
#include "bgl/collectives/wide_area/min3.hpp"
#include "bgl/torus_emu/distance.hpp"
#include "bgl/torus_emu/error.hpp"
#include "gen_util.hpp"
#include "topology_aware/topology_aware.hpp"

namespace bgl::collectives {

namespace {

using wide_area::HostNetwork;

constexpr int kMaxRanks = 32;

struct NetworkFile {
  std::string path;
  std::shared_ptr<const HostNetwork> net;
  std::string error;
};

// The file's network, parsed once per path (generators run on every rank and in tests).
NetworkFile network_file() {
  static std::mutex mu;
  static std::map<std::string, NetworkFile> cache;
  const char* env = std::getenv("BGL_COLL_GRID_NETWORK");
  if (env == nullptr || *env == '\0') return {};
  std::lock_guard lock(mu);
  auto it = cache.find(env);
  if (it == cache.end()) {
    NetworkFile f{env, nullptr, {}};
    try {
      f.net = std::make_shared<const HostNetwork>(HostNetwork::from_file(env));
    } catch (const ConfigError& e) {
      f.error = std::string("BGL_COLL_GRID_NETWORK: ") + e.what();
    }
    it = cache.emplace(env, std::move(f)).first;
  }
  return it->second;
}

wide_area::PoolTreeOptions tree_options() {
  wide_area::PoolTreeOptions o;
  const char* env = std::getenv("BGL_COLL_GRID_THRESHOLD");
  if (env != nullptr && std::string_view(env) == "max")
    o.rule = wide_area::ThresholdRule::band_maximum;
  return o;
}

wide_area::ModelOptions model_options() {
  wide_area::ModelOptions o;
  const char* env = std::getenv("BGL_COLL_GRID_DUPLEX");
  if (env != nullptr && std::string_view(env) == "half") o.duplex = wide_area::Duplex::half;
  return o;
}

std::string grid_applicable(const Params& x) {
  const char* t = std::getenv("BGL_COLL_GRID_THRESHOLD");
  if (t != nullptr && *t != '\0' && std::string_view(t) != "min" && std::string_view(t) != "max") {
    return std::string("BGL_COLL_GRID_THRESHOLD='") + t + "': expected min or max";
  }
  const char* d = std::getenv("BGL_COLL_GRID_DUPLEX");
  if (d != nullptr && *d != '\0' && std::string_view(d) != "full" &&
      std::string_view(d) != "half") {
    return std::string("BGL_COLL_GRID_DUPLEX='") + d + "': expected full or half";
  }
  if (x.p > kMaxRanks) {
    return "Min3 scheduling grows as p^4 on a flat network; limited to " +
           std::to_string(kMaxRanks) + " ranks (the paper's grids have 20 hosts)";
  }
  const auto f = network_file();
  if (!f.error.empty()) return f.error;
  if (f.net && f.net->hosts() != x.p) {
    return "BGL_COLL_GRID_NETWORK=" + f.path + " describes " + std::to_string(f.net->hosts()) +
           " hosts, the communicator has " + std::to_string(x.p) + " ranks";
  }
  return {};
}

HostNetwork torus_network(const Params& x) {
  const CostConstants k;
  const double bw = k.link_bytes_per_cycle * k.cpu_hz;
  const auto n = static_cast<std::size_t>(x.p);
  std::vector<double> bandwidth(n * n, bw), latency(n * n, 0.0);
  for (int a = 0; a < x.p; ++a) {
    for (int b = 0; b < x.p; ++b) {
      int hops = 1;
      if (x.topology.mapping != nullptr) {
        const auto& m = *x.topology.mapping;
        hops = torus_emu::distance(m.shape(), m.shape().coord(x.topology.node(a)),
                                   m.shape().coord(x.topology.node(b)));
      }
      latency[static_cast<std::size_t>(a) * n + static_cast<std::size_t>(b)] =
          (k.message_cycles + hops * k.hop_cycles) / k.cpu_hz;
    }
  }
  return HostNetwork(x.p, std::move(bandwidth), std::move(latency));
}

// The Min3 transfers for these parameters, cached for the last inputs (all ranks ask).
std::vector<wide_area::Transfer> min3_transfers(const Params& x) {
  const auto f = network_file();
  const std::uint64_t block =
      x.counts.empty() ? 0 : *std::max_element(x.counts.begin(), x.counts.end());
  // The key names everything the schedule depends on, without building the network.
  std::string key = std::to_string(x.p) + "|" + std::to_string(block) + "|" +
                    std::to_string(static_cast<int>(tree_options().rule)) +
                    std::to_string(static_cast<int>(model_options().duplex)) + "|";
  if (f.net) {
    key += "file:" + f.path;
  } else if (x.topology.mapping != nullptr) {
    key += x.topology.mapping->shape().to_string() + ":";
    for (int r = 0; r < x.p; ++r)
      key += std::to_string(x.topology.node(r)) + ",";
  }
  static std::mutex mu;
  static std::string last_key;
  static std::vector<wide_area::Transfer> last;
  std::lock_guard lock(mu);
  if (key != last_key) {
    const HostNetwork net = f.net ? *f.net : torus_network(x);
    last = wide_area::min3_allgather(net, wide_area::PoolTree::build(net, tree_options()), block,
                                     model_options());
    last_key = std::move(key);
  }
  return last;
}

// Rank's part: receives posted at once; sends in modelled start order, each after the previous
// send (single port) and after the receive that delivered its block.
Program grid_allgather(const Params& x, int rank) {
  Program prog(rank);
  auto block = [&](int b) { return recv_buf(x.displ(b), x.counts[static_cast<std::size_t>(b)]); };
  std::vector<StepId> ready(static_cast<std::size_t>(x.p), 0);
  ready[static_cast<std::size_t>(rank)] =
      prog.copy(block(rank), send_buf(0, x.counts[static_cast<std::size_t>(rank)]), {});
  if (x.p == 1) return prog;
  auto ts = min3_transfers(x);
  std::vector<std::size_t> order(ts.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return ts[a].start < ts[b].start; });
  for (std::size_t i : order) {
    const auto& t = ts[i];
    if (t.to != rank) continue;
    const int b = t.blocks[0];
    ready[static_cast<std::size_t>(b)] = prog.recv(t.from, block(b), static_cast<Tag>(b), {});
  }
  std::vector<StepId> prev;
  int round = 1;
  for (std::size_t i : order) {
    const auto& t = ts[i];
    if (t.from != rank) continue;
    const int b = t.blocks[0];
    prog.set_round(round++);
    std::vector<StepId> deps = prev;
    deps.push_back(ready[static_cast<std::size_t>(b)]);
    prev = {prog.send(t.to, block(b), static_cast<Tag>(b), deps)};
  }
  return prog;
}

}  // namespace

void register_grid_allgather(Registry& r) {
  r.add({"min3", Collective::allgather,
         "grid allgather: pool tree from measured bandwidths, Min3 greedy scheduler, wide-area "
         "optimal (seed 000; BGL_COLL_GRID_NETWORK)",
         grid_applicable, grid_allgather});
}

}  // namespace bgl::collectives
