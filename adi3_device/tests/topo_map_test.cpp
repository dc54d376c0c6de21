// The torus-aware placement of MPI process topologies (adi3_device/bglml/topo_map.hpp), without
// MPICH: every Cartesian neighbour a torus neighbour where the shapes allow, never more hops than
// MPI's own (identity) placement, and MPI_Dims_create's torus-shaped choice.
#include "topo_map.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <numeric>
#include <random>
#include <set>
#include <string_view>

#include "bgl/torus_emu/distance.hpp"

namespace bgl::adi3_device::topo {
namespace {

std::vector<Place> places_of(const torus_emu::Mapping& m) {
  std::vector<Place> p;
  for (int r = 0; r < m.size(); ++r)
    p.push_back(
        {m.coord(static_cast<torus_emu::Rank>(r)), m.location(static_cast<torus_emu::Rank>(r)).t});
  return p;
}

torus_emu::Mapping scattered(const torus_emu::Shape& s, int tpn, unsigned seed) {
  std::vector<torus_emu::TaskLocation> locs;
  for (int n = 0; n < s.node_count(); ++n)
    for (int t = 0; t < tpn; ++t)
      locs.push_back({static_cast<torus_emu::NodeId>(n), t});
  std::mt19937 rng(seed);
  std::shuffle(locs.begin(), locs.end(), rng);
  return torus_emu::Mapping::from_locations(s, tpn, std::move(locs));
}

// Every Cartesian neighbour pair at most max_hops apart; returns the largest distance seen.
int max_neighbour_hops(const torus_emu::Shape& s, const std::vector<Place>& places,
                       const std::vector<int>& dims, const std::vector<int>& periods,
                       const std::vector<int>& assignment) {
  const auto g = cartesian_graph(dims, periods);
  int worst = 0;
  for (int u = 0; u < g.size(); ++u)
    for (int e = g.index[static_cast<std::size_t>(u)]; e < g.index[static_cast<std::size_t>(u) + 1];
         ++e) {
      const int v = g.edges[static_cast<std::size_t>(e)];
      worst = std::max(
          worst,
          torus_emu::distance(
              s, places[static_cast<std::size_t>(assignment[static_cast<std::size_t>(u)])].node,
              places[static_cast<std::size_t>(assignment[static_cast<std::size_t>(v)])].node));
    }
  return worst;
}

void expect_permutation(const std::vector<int>& a, int n) {
  std::set<int> seen(a.begin(), a.end());
  EXPECT_EQ(seen.size(), a.size());
  EXPECT_GE(*seen.begin(), 0);
  EXPECT_LT(*seen.rbegin(), n);
}

TEST(CartesianGraph, EdgesOfAPeriodicGrid) {
  const std::vector<int> dims{3, 2}, periods{1, 1};
  const auto g = cartesian_graph(dims, periods);
  EXPECT_EQ(g.size(), 6);
  // dimension 0 (periodic, 3): 3 edges per column, 2 columns; dimension 1 (2): 1 edge per row.
  EXPECT_EQ(g.edges.size(), 6u + 3u);
}

TEST(CartMap, EveryOrderAndScatteredMappingOn8x8x8IsAllNearestNeighbour) {
  const auto s = torus_emu::Shape::parse("8x8x8");
  const std::vector<int> dims{8, 8, 8}, periods{1, 1, 1};
  std::vector<torus_emu::Mapping> mappings;
  for (const char* order : {"XYZ", "ZYX", "YXZ", "ZXY"})
    mappings.push_back(torus_emu::Mapping::from_order(s, 1, order, 512));
  mappings.push_back(scattered(s, 1, 7));
  for (const auto& m : mappings) {
    const auto places = places_of(m);
    const auto a = cart_map(s, places, dims, periods);
    ASSERT_EQ(a.size(), 512u);
    expect_permutation(a, 512);
    EXPECT_EQ(max_neighbour_hops(s, places, dims, periods, a), 1);
  }
}

TEST(CartMap, VirtualNodeModeFoldsTIntoADimension) {
  const auto s = torus_emu::Shape::parse("4x4x4");
  const std::vector<int> dims{8, 4, 4}, periods{1, 1, 1};
  for (const char* order : {"XYZT", "TXYZ", "ZTYX"}) {
    const auto m = torus_emu::Mapping::from_order(s, 2, order, 128);
    const auto places = places_of(m);
    const auto a = cart_map(s, places, dims, periods);
    expect_permutation(a, 128);
    EXPECT_EQ(max_neighbour_hops(s, places, dims, periods, a), 1) << order;
  }
  const auto m = scattered(s, 2, 3);
  const auto places = places_of(m);
  const auto a = cart_map(s, places, dims, periods);
  EXPECT_EQ(max_neighbour_hops(s, places, dims, periods, a), 1);
}

TEST(CartMap, FoldsTwoTorusDimensionsIntoOneRing) {
  // 8x4x2: a 32 x 2 ring-of-rings: x (8) and y (4) snake into the 32-long ring.
  const auto s = torus_emu::Shape::parse("8x4x2");
  const std::vector<int> dims{32, 2}, periods{1, 1};
  const auto m = scattered(s, 1, 11);
  const auto places = places_of(m);
  const auto a = cart_map(s, places, dims, periods);
  EXPECT_EQ(max_neighbour_hops(s, places, dims, periods, a), 1);
}

TEST(CartMap, NeverWorseThanTheIdentityForNonMatchingShapes) {
  const auto s = torus_emu::Shape::parse("4x4x2");
  for (const auto& dims : std::vector<std::vector<int>>{{5, 6}, {3, 3, 3}, {31}, {7, 2, 2}}) {
    const std::vector<int> periods(dims.size(), 1);
    const auto m = scattered(s, 1, 5);
    const auto places = places_of(m);
    const auto a = cart_map(s, places, dims, periods);
    const int size = std::accumulate(dims.begin(), dims.end(), 1, std::multiplies<>());
    ASSERT_EQ(static_cast<int>(a.size()), size);
    expect_permutation(a, 32);
    std::vector<int> id(static_cast<std::size_t>(size));
    std::iota(id.begin(), id.end(), 0);
    const auto g = cartesian_graph(dims, periods);
    EXPECT_LE(total_hops(s, g, places, a), total_hops(s, g, places, id));
  }
}

TEST(CartMap, GreedyImprovesAScatteredMappingOfAPartialGrid) {
  const auto s = torus_emu::Shape::parse("4x4x4");
  const std::vector<int> dims{6, 6}, periods{0, 0};
  const auto m = scattered(s, 1, 9);
  const auto places = places_of(m);
  const auto a = cart_map(s, places, dims, periods);
  std::vector<int> id(36);
  std::iota(id.begin(), id.end(), 0);
  const auto g = cartesian_graph(dims, periods);
  EXPECT_LT(total_hops(s, g, places, a), total_hops(s, g, places, id) / 2);
}

TEST(CartMap, GreedyAt1024RanksIsBoundedAndHelps) {
  // The largest communicator the greedy embedding runs for: every rank computes it once.
  const auto s = torus_emu::Shape::parse("8x8x16");
  const std::vector<int> dims{31, 33}, periods{0, 0};
  const auto m = scattered(s, 1, 19);
  const auto places = places_of(m);
  const auto start = std::chrono::steady_clock::now();
  const auto a = cart_map(s, places, dims, periods);
  const auto ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start);
  std::printf("cart_map 31x33 on 1024 scattered ranks: %.1f ms\n", ms.count());
  EXPECT_LT(ms.count(), 2000.0);
  std::vector<int> id(a.size());
  std::iota(id.begin(), id.end(), 0);
  const auto g = cartesian_graph(dims, periods);
  EXPECT_LT(total_hops(s, g, places, a), total_hops(s, g, places, id) / 3);
}

TEST(GraphMap, RingOnAScatteredTorusBecomesNearestNeighbour) {
  const auto s = torus_emu::Shape::parse("4x4x1");
  const auto m = scattered(s, 1, 13);
  const auto places = places_of(m);
  // A 16-ring, each edge listed on both ends as MPI_Graph_create takes it.
  std::vector<int> index, edges;
  for (int i = 0; i < 16; ++i) {
    edges.push_back((i + 15) % 16);
    edges.push_back((i + 1) % 16);
    index.push_back(static_cast<int>(edges.size()));
  }
  const auto a = graph_map(s, places, index, edges);
  expect_permutation(a, 16);
  Graph g;
  g.index.push_back(0);
  g.index.insert(g.index.end(), index.begin(), index.end());
  g.edges = edges;
  std::vector<int> id(16);
  std::iota(id.begin(), id.end(), 0);
  EXPECT_LT(total_hops(s, g, places, a), total_hops(s, g, places, id));
  EXPECT_LE(total_hops(s, g, places, a), 2 * 16 + 8);  // a greedy ring: nearly all single hops
}

// An n-ring as an MPI graph: each edge on both ends (MPI_Graph_create's way), or only i -> i+1 (a
// distributed graph whose processes declare their out-edges).
std::pair<std::vector<int>, std::vector<int>> ring_graph(int n, bool both_ends = true) {
  std::vector<int> index, edges;
  for (int i = 0; i < n; ++i) {
    if (both_ends) edges.push_back((i + n - 1) % n);
    edges.push_back((i + 1) % n);
    index.push_back(static_cast<int>(edges.size()));
  }
  return {index, edges};
}

Graph as_graph(const std::vector<int>& index, const std::vector<int>& edges) {
  Graph g;
  g.index.push_back(0);
  g.index.insert(g.index.end(), index.begin(), index.end());
  g.edges = edges;
  return g;
}

// The largest torus distance between consecutive ring members under assignment.
int max_ring_hops(const torus_emu::Shape& s, const std::vector<Place>& places,
                  const std::vector<int>& a) {
  const int n = static_cast<int>(a.size());
  int worst = 0;
  for (int i = 0; i < n; ++i)
    worst =
        std::max(worst, torus_emu::distance(s, places[static_cast<std::size_t>(a[i])].node,
                                            places[static_cast<std::size_t>(a[(i + 1) % n])].node));
  return worst;
}

TEST(GraphMap, RingIsAllSingleHopsWhereTheBoxHasAHamiltonianCycle) {
  // Tori, meshes (no wrap-around: the comb cycle over an even dimension) and virtual-node mode
  // (the node's two tasks next to each other), from scattered mappings, the ring declared on
  // both ends or one way only. The greedy embedding left 2- and 3-hop edges on all of these.
  struct Case {
    const char* shape;
    const char* mesh;
    int tpn;
  };
  for (const auto& c : {Case{"4x4x2", "", 1}, Case{"4x4x4", "", 1}, Case{"8x8x8", "", 1},
                        Case{"4x4x2", "xyz", 1}, Case{"3x4x2", "xyz", 1}, Case{"6x2x1", "", 1},
                        Case{"4x4x2", "", 2}, Case{"4x3x1", "xyz", 2}})
    for (const bool both_ends : {true, false}) {
      const auto s = torus_emu::Shape::parse(c.shape, c.mesh);
      const auto places = places_of(scattered(s, c.tpn, 53));
      const int n = static_cast<int>(places.size());
      const auto [index, edges] = ring_graph(n, both_ends);
      const auto a = graph_map(s, places, index, edges);
      expect_permutation(a, n);
      EXPECT_EQ(max_ring_hops(s, places, a), 1)
          << c.shape << " mesh:" << c.mesh << " tpn " << c.tpn << " both " << both_ends;
      // a torus in VN mode: every other edge within a node, n / 2 single hops per direction
      if (c.tpn == 2 && std::string_view(c.mesh).empty()) {
        EXPECT_EQ(total_hops(s, as_graph(index, edges), places, a), (both_ends ? 2 : 1) * n / 2)
            << c.shape;
      }
    }
}

TEST(GraphMap, RingOnARingWithoutAHamiltonianCycleStillImproves) {
  // A 3x3 mesh in heater mode has 9 nodes: no cycle of single hops exists (a grid graph is
  // bipartite); the placement is still no worse than the identity and has no edge over 2 hops.
  const auto s = torus_emu::Shape::parse("3x3x1", "xyz");
  const auto places = places_of(scattered(s, 1, 3));
  const auto [index, edges] = ring_graph(9);
  const auto a = graph_map(s, places, index, edges);
  expect_permutation(a, 9);
  std::vector<int> id(9);
  std::iota(id.begin(), id.end(), 0);
  const auto g = as_graph(index, edges);
  EXPECT_LE(total_hops(s, g, places, a), total_hops(s, g, places, id));
  EXPECT_EQ(max_ring_hops(s, places, a), 2);
}

TEST(GraphMap, RingAlreadyOnSingleHopsKeepsTheIdentity) {
  // A 16-ring on 16x1x1 with the default mapping: nothing to gain, so no process is renamed.
  const auto s = torus_emu::Shape::parse("16x1x1");
  const auto places = places_of(torus_emu::Mapping::from_order(s, 1, "XYZT", 16));
  const auto [index, edges] = ring_graph(16);
  const auto a = graph_map(s, places, index, edges);
  std::vector<int> id(16);
  std::iota(id.begin(), id.end(), 0);
  EXPECT_EQ(a, id);
}

// A periodic e x e x e stencil as an MPI graph (every edge on both ends), row-major like MPI's
// grids.
std::pair<std::vector<int>, std::vector<int>> stencil_graph(int e = 4) {
  std::vector<int> index, edges;
  for (int r = 0; r < e * e * e; ++r) {
    const int c[3] = {r / (e * e), (r / e) % e, r % e};
    for (int d = 0; d < 3; ++d)
      for (const int step : {-1, 1}) {
        int n[3] = {c[0], c[1], c[2]};
        n[d] = (n[d] + step + e) % e;
        edges.push_back((n[0] * e + n[1]) * e + n[2]);
      }
    index.push_back(static_cast<int>(edges.size()));
  }
  return {index, edges};
}

TEST(GraphMap, StencilInVirtualNodeModeFoldsTheNodesTasks) {
  // 64 tasks on 4x4x2 in VN mode, scattered: the best embedding folds t and z into the grid's
  // third dimension (x and y neighbours one hop, the third dimension's 0 and 1 alternately: 320
  // hops over the edges as listed, both ends). The greedy embedding alone reached 1,296; with the
  // swap search after it 576.
  const auto s = torus_emu::Shape::parse("4x4x2");
  const auto places = places_of(scattered(s, 2, 43));
  const auto [index, edges] = stencil_graph();
  const auto a = graph_map(s, places, index, edges);
  expect_permutation(a, 64);
  Graph g;
  g.index.push_back(0);
  g.index.insert(g.index.end(), index.begin(), index.end());
  g.edges = edges;
  EXPECT_EQ(total_hops(s, g, places, a), 320);
}

TEST(GraphMap, StencilOf512IsBoundedAndNearestNeighbour) {
  // Every rank computes the placement: at 512 ranks it must stay well under a second.
  const auto s = torus_emu::Shape::parse("8x8x8");
  const auto places = places_of(scattered(s, 1, 7));
  const auto [index, edges] = stencil_graph(8);
  const auto start = std::chrono::steady_clock::now();
  const auto a = graph_map(s, places, index, edges);
  const auto ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start);
  std::printf("graph_map 8x8x8 stencil on 512 scattered ranks: %.1f ms\n", ms.count());
  EXPECT_LT(ms.count(), 1500.0);
  expect_permutation(a, 512);
  Graph g;
  g.index.push_back(0);
  g.index.insert(g.index.end(), index.begin(), index.end());
  g.edges = edges;
  EXPECT_EQ(total_hops(s, g, places, a), 6 * 512);
}

TEST(TorusDims, MatchesThePartition) {
  const auto s = torus_emu::Shape::parse("8x4x2");
  const auto m = torus_emu::Mapping::from_order(s, 1, "XYZ", 64);
  const auto places = places_of(m);
  EXPECT_EQ(torus_dims(s, places, std::vector<int>{0, 0, 0}), (std::vector<int>{8, 4, 2}));
  EXPECT_EQ(torus_dims(s, places, std::vector<int>{0, 0}), (std::vector<int>{8, 8}));
  EXPECT_EQ(torus_dims(s, places, std::vector<int>{0, 2, 0}), (std::vector<int>{8, 2, 4}));
  EXPECT_EQ(torus_dims(s, places, std::vector<int>{3, 0}), std::nullopt);
  const auto vn = torus_emu::Mapping::from_order(torus_emu::Shape::parse("4x4x4"), 2, "TXYZ", 128);
  EXPECT_EQ(
      torus_dims(torus_emu::Shape::parse("4x4x4"), places_of(vn), std::vector<int>{0, 0, 0, 0}),
      (std::vector<int>{4, 4, 4, 2}));
}

TEST(TorusDims, NoneForTasksThatFillNoBox) {
  const auto s = torus_emu::Shape::parse("4x4x4");
  const auto m = torus_emu::Mapping::from_order(s, 1, "XYZ", 20);
  EXPECT_EQ(torus_dims(s, places_of(m), std::vector<int>{0, 0}), std::nullopt);
}

}  // namespace
}  // namespace bgl::adi3_device::topo
