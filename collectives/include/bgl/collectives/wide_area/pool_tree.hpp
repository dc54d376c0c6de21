#pragma once
// Hosts clustered into nested pools by measured bandwidth. The root pool
// holds every host; each pool splits into the connected components of the graph of its
// higher-bandwidth pairs; recursion ends at single hosts.
#include <string>
#include <vector>

#include "bgl/collectives/wide_area/host_network.hpp"

namespace bgl::collectives::wide_area {

// The paper takes the *maximum* of each 10 % band as the threshold; with its own Table 2 this
// shatters the NL site (see docs/COLLECTIVES.md), so the default is the band minimum.
enum class ThresholdRule { band_minimum, band_maximum };

struct PoolTreeOptions {
  ThresholdRule rule = ThresholdRule::band_minimum;
  double band = 0.10;  // values within +10 % of a band's lowest value share the band
};

struct Pool {
  std::vector<int> hosts;     // ascending
  std::vector<int> children;  // indices into PoolTree::pools(), ordered by smallest host
  int parent = -1;
  double threshold = 0;  // bandwidth (bytes/s) that split this pool; 0 for leaves
};

class PoolTree {
 public:
  static PoolTree build(const HostNetwork& net, PoolTreeOptions options = {});
  // Root with every host as a direct child (a homogeneous LAN: one level of scheduling).
  static PoolTree flat(int hosts);

  const std::vector<Pool>& pools() const { return pools_; }
  const Pool& root() const { return pools_.front(); }
  const Pool& pool(int i) const { return pools_[static_cast<std::size_t>(i)]; }
  int hosts() const { return static_cast<int>(root().hosts.size()); }

  // "{0-7}{{8-11}{12-19}}"-style nesting, for tests and logs.
  std::string to_string() const;

 private:
  int add(Pool p);
  void split(int pool, std::size_t k, const std::vector<double>& w, int n,
             const std::vector<double>& thresholds);
  std::vector<Pool> pools_;
};

}  // namespace bgl::collectives::wide_area
