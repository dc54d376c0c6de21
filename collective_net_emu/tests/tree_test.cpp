#include "bgl/collective_net_emu/tree.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <set>

#include "bgl/collective_net_emu/options.hpp"
#include "bgl/torus_emu/distance.hpp"
#include "bgl/torus_emu/error.hpp"

namespace bgl::collective_net_emu {
namespace {

using ::testing::HasSubstr;

torus_emu::Mapping mapping_of(const std::string& shape, int tasks_per_node, int ntasks,
                              const std::string& mesh = "") {
  return torus_emu::Mapping::from_order(torus_emu::Shape::parse(shape, mesh), tasks_per_node,
                                        tasks_per_node == 2 ? "XYZT" : "XYZ", ntasks);
}

// Spanning, acyclic, fan-out respected, depths consistent, children listed once.
void expect_valid(const Tree& t, const torus_emu::Mapping& m, int fanout) {
  std::set<torus_emu::NodeId> occupied;
  for (const auto& loc : m.locations())
    occupied.insert(loc.node);
  ASSERT_EQ(t.nodes().size(), occupied.size());
  EXPECT_EQ(t.root(), m.location(0).node);
  EXPECT_FALSE(t.parent(t.root()));
  std::set<torus_emu::NodeId> seen;
  int height = 0;
  for (const torus_emu::NodeId n : t.nodes()) {
    ASSERT_TRUE(occupied.count(n)) << n;
    ASSERT_TRUE(seen.insert(n).second) << "node " << n << " twice";
    EXPECT_LE(t.children(n).size(), static_cast<std::size_t>(fanout));
    for (const torus_emu::NodeId c : t.children(n)) {
      ASSERT_EQ(t.parent(c), n);
      EXPECT_EQ(t.depth(c), t.depth(n) + 1);
    }
    if (n != t.root()) {
      ASSERT_TRUE(t.parent(n));
      ASSERT_TRUE(seen.count(*t.parent(n))) << "parents come before children";
    }
    height = std::max(height, t.depth(n));
  }
  EXPECT_EQ(t.height(), height);
}

TEST(Tree, SeveralHostsGetOneTreeEachAndNoEdgeCrossesHosts) {
  // 4x4x4 in four slabs along z (the default placement of four hosts); a mapfile-like order where
  // rank 0 is not on host 0 (ZYX puts rank 1 on node 16, host 1).
  for (const char* order : {"XYZ", "ZYX"}) {
    for (const auto& spec : {TreeSpec{}, TreeSpec::parse("kary:2", "test")}) {
      SCOPED_TRACE(std::string(order) + " " + spec.to_string());
      const torus_emu::Shape shape = torus_emu::Shape::parse("4x4x4");
      const auto m = torus_emu::Mapping::from_order(shape, 1, order, 64);
      std::vector<std::uint16_t> host(64);
      for (torus_emu::NodeId n = 0; n < 64; ++n)
        host[n] = static_cast<std::uint16_t>(shape.coord(n).z);
      const Tree t = Tree::build(m, spec, host);
      ASSERT_EQ(t.nodes().size(), 64u);
      ASSERT_EQ(t.roots().size(), 4u);
      EXPECT_EQ(t.root(), m.location(0).node);
      std::set<std::uint16_t> root_hosts;
      for (const torus_emu::NodeId r : t.roots()) {
        EXPECT_FALSE(t.parent(r));
        EXPECT_EQ(t.depth(r), 0);
        root_hosts.insert(host[r]);
      }
      EXPECT_EQ(root_hosts.size(), 4u);
      for (const torus_emu::NodeId n : t.nodes()) {
        EXPECT_LE(t.children(n).size(), static_cast<std::size_t>(spec.fanout));
        if (const auto p = t.parent(n)) {
          EXPECT_EQ(host[*p], host[n]) << n;
        }
      }
      EXPECT_THAT(t.describe(), HasSubstr("a forest of 4 host trees"));
    }
  }
  // One group is the plain tree.
  const auto m = mapping_of("3x3x3", 1, 27);
  const std::vector<std::uint16_t> one(27, 0);
  const Tree a = Tree::build(m, TreeSpec{}, one), b = Tree::build(m, TreeSpec{});
  EXPECT_TRUE(std::equal(a.nodes().begin(), a.nodes().end(), b.nodes().begin(), b.nodes().end()));
  EXPECT_EQ(a.height(), b.height());
}

TEST(Tree, TorusTreeSpansEveryShapeWithAtMostThreeChildren) {
  for (const char* shape : {"1x1x1", "2x1x1", "3x1x1", "2x2x2", "3x3x3", "4x4x4", "4x4x2", "8x8x8",
                            "5x3x2", "64x2x1"}) {
    SCOPED_TRACE(shape);
    const auto m = mapping_of(shape, 1, torus_emu::Shape::parse(shape).node_count());
    const Tree t = Tree::build(m, TreeSpec{});
    expect_valid(t, m, 3);
    // Fully occupied: every tree edge is a torus link.
    for (const torus_emu::NodeId n : t.nodes())
      if (auto p = t.parent(n)) {
        EXPECT_EQ(torus_emu::distance(m.shape(), m.shape().coord(n), m.shape().coord(*p)), 1);
      }
  }
}

TEST(Tree, FanOutLimitCostsNoDepthOnFullPartitions) {
  // Height = the torus diameter, the least any spanning tree along torus links can have.
  EXPECT_EQ(Tree::build(mapping_of("8x8x8", 1, 512), TreeSpec{}).height(), 12);
  EXPECT_EQ(Tree::build(mapping_of("4x4x4", 1, 64), TreeSpec{}).height(), 6);
  EXPECT_EQ(Tree::build(mapping_of("4x4x2", 1, 32), TreeSpec{}).height(), 5);
}

TEST(Tree, IsDeterministic) {
  const auto m = mapping_of("4x4x2", 1, 32);
  const Tree a = Tree::build(m, TreeSpec{});
  const Tree b = Tree::build(m, TreeSpec{});
  ASSERT_TRUE(std::equal(a.nodes().begin(), a.nodes().end(), b.nodes().begin(), b.nodes().end()));
  for (const torus_emu::NodeId n : a.nodes())
    EXPECT_TRUE(std::equal(a.children(n).begin(), a.children(n).end(), b.children(n).begin(),
                           b.children(n).end()));
}

TEST(Tree, MeshesPartialPartitionsAndVirtualNodeMode) {
  for (int fanout : {1, 2, 3, 6}) {
    const auto mesh = mapping_of("4x3x2", 1, 24, "xyz");
    expect_valid(Tree::build(mesh, {TreeKind::torus, fanout}), mesh, fanout);
    const auto partial = mapping_of("4x4x4", 1, 37);
    expect_valid(Tree::build(partial, {TreeKind::torus, fanout}), partial, fanout);
    const auto vn = mapping_of("2x2x2", 2, 16);
    const Tree t = Tree::build(vn, {TreeKind::torus, fanout});
    expect_valid(t, vn, fanout);
    EXPECT_EQ(t.nodes().size(), 8u);
  }
}

TEST(Tree, SparseMappingsAreAttachedToTheNearestNodeWithRoom) {
  // Tasks on x = 0, 3, 7 of an 8-node mesh line: no two are torus neighbours.
  const torus_emu::Shape shape = torus_emu::Shape::parse("8x1x1", "x");
  const auto m = torus_emu::Mapping::from_locations(shape, 1, {{0, 0}, {3, 0}, {7, 0}});
  const Tree t = Tree::build(m, TreeSpec{});
  expect_valid(t, m, 3);
  EXPECT_EQ(t.parent(3), 0u);
  EXPECT_EQ(t.parent(7), 3u);  // 4 hops from node 3, 7 from node 0
  // Root elsewhere than node 0 (rank 0 sits on node 5).
  const auto r = torus_emu::Mapping::from_locations(torus_emu::Shape::parse("3x3x1"), 1,
                                                    {{5, 0}, {0, 0}, {8, 0}, {4, 0}});
  const Tree rt = Tree::build(r, {TreeKind::torus, 1});
  expect_valid(rt, r, 1);
  EXPECT_EQ(rt.root(), 5u);
}

TEST(Tree, KaryTreeIsAHeapOverNodeIds) {
  const auto m = mapping_of("4x4x1", 1, 16);
  const Tree t = Tree::build(m, {TreeKind::kary, 2});
  expect_valid(t, m, 2);
  EXPECT_EQ(t.parent(1), 0u);
  EXPECT_EQ(t.parent(2), 0u);
  EXPECT_EQ(t.parent(3), 1u);
  EXPECT_EQ(t.parent(15), 7u);
  const Tree chain = Tree::build(m, {TreeKind::kary, 1});
  EXPECT_EQ(chain.height(), 15);
  EXPECT_EQ(t.describe(), "kary:2 tree over 16 nodes, root 0, height 4");
}

TEST(TreeOptions, ParsesSpecsAndNamesTheVariableInErrors) {
  EXPECT_EQ(TreeSpec::parse("torus", "BGL_TREE"), (TreeSpec{TreeKind::torus, 3}));
  EXPECT_EQ(TreeSpec::parse("torus:2", "BGL_TREE"), (TreeSpec{TreeKind::torus, 2}));
  EXPECT_EQ(TreeSpec::parse("kary:8", "BGL_TREE"), (TreeSpec{TreeKind::kary, 8}));
  for (const char* bad : {"", "kary", "torus:0", "torus:9", "binary", "kary:x", "torus:3:1"}) {
    try {
      TreeSpec::parse(bad, "BGL_TREE");
      ADD_FAILURE() << bad;
    } catch (const ConfigError& e) {
      EXPECT_THAT(e.what(), HasSubstr("BGL_TREE='" + std::string(bad) + "'"));
      EXPECT_THAT(e.what(), HasSubstr("kary:K"));
    }
  }
}

TEST(TreeOptions, EnvironmentOverridesDefaults) {
  ::setenv("BGL_TREE", "kary:4", 1);
  ::setenv("BGL_TREE_RING", "16", 1);
  ::setenv("BGL_TREE_INBOX", "4", 1);
  const Options o = Options::from_environment();
  EXPECT_EQ(o.tree, (TreeSpec{TreeKind::kary, 4}));
  EXPECT_EQ(o.ring_packets, 16u);
  EXPECT_EQ(o.inbox_packets, 4u);
  ::setenv("BGL_TREE_RING", "48", 1);
  try {
    Options::from_environment();
    ADD_FAILURE();
  } catch (const ConfigError& e) {
    EXPECT_THAT(e.what(), HasSubstr("BGL_TREE_RING='48': expected a power of two"));
  }
  ::setenv("BGL_TREE_RING", "1", 1);
  EXPECT_THROW(Options::from_environment(), ConfigError);
  ::unsetenv("BGL_TREE");
  ::unsetenv("BGL_TREE_RING");
  ::unsetenv("BGL_TREE_INBOX");
  const Options defaults = Options::from_environment();
  EXPECT_EQ(defaults.ring_packets, Options::kAutomaticRing);
  EXPECT_EQ(defaults.ring_for(64), 256u);
  EXPECT_EQ(defaults.ring_for(512), 64u);
  EXPECT_EQ(o.ring_for(512), 16u);  // an explicit depth wins
}

}  // namespace
}  // namespace bgl::collective_net_emu
