// contention-free logical rings (DFS of a tree, snake on the torus) and the
// bandwidth-optimal ring allreduce.
#include <gtest/gtest.h>

#include <random>

#include "bgl/collectives/cost_model.hpp"
#include "bgl/collectives/registry.hpp"
#include "bgl/collectives/topology_aware/logical_ring.hpp"
#include "bgl/collectives/verifier.hpp"
#include "bgl/torus_emu/distance.hpp"
#include "bgl/torus_emu/link_counters.hpp"
#include "bgl/torus_emu/route.hpp"

namespace bgl::collectives {
namespace {

TEST(LogicalRing, DfsOfTheTwoSwitchTopologyIsContentionFree) {
  // Patarasuk and Yuan's Figure 5: n0-n15 on switch S0, n16-n31 on S1, S0-S1 linked. Vertices: 0 =
  // S0, 1 = S1, 2..33 = machines 0..31.
  ring::TreeTopology t;
  t.vertices = 34;
  t.rank_of_vertex.assign(34, -1);
  t.edges.push_back({0, 1});
  for (int m = 0; m < 32; ++m) {
    t.rank_of_vertex[static_cast<std::size_t>(m + 2)] = m;
    t.edges.push_back({m < 16 ? 0 : 1, m + 2});
  }
  const auto r = ring::dfs_ring(t);
  ASSERT_EQ(r.size(), 32u);
  // From S0 the DFS visits S1 first (ascending vertex order): n16..n31, then n0..n15.
  for (int m = 0; m < 32; ++m)
    EXPECT_EQ(r[static_cast<std::size_t>(m)], (m + 16) % 32);
  EXPECT_EQ(ring::tree_ring_max_load(t, r), 1);
  // A badly ordered ring (alternating switches) is not.
  std::vector<int> bad;
  for (int m = 0; m < 16; ++m) {
    bad.push_back(m);
    bad.push_back(m + 16);
  }
  EXPECT_GT(ring::tree_ring_max_load(t, bad), 1);
}

TEST(LogicalRing, DfsOfRandomTreesIsContentionFree) {
  std::mt19937 rng(7);
  for (int iter = 0; iter < 200; ++iter) {
    const int switches = 1 + static_cast<int>(rng() % 6);
    const int machines = 1 + static_cast<int>(rng() % 20);
    ring::TreeTopology t;
    t.vertices = switches + machines;
    t.rank_of_vertex.assign(static_cast<std::size_t>(t.vertices), -1);
    for (int s = 1; s < switches; ++s)
      t.edges.push_back({static_cast<int>(rng() % static_cast<unsigned>(s)), s});
    std::vector<int> ranks(static_cast<std::size_t>(machines));
    std::iota(ranks.begin(), ranks.end(), 0);
    std::shuffle(ranks.begin(), ranks.end(), rng);
    for (int m = 0; m < machines; ++m) {
      t.rank_of_vertex[static_cast<std::size_t>(switches + m)] = ranks[static_cast<std::size_t>(m)];
      t.edges.push_back({static_cast<int>(rng() % static_cast<unsigned>(switches)), switches + m});
    }
    const auto r = ring::dfs_ring(t, static_cast<int>(rng() % static_cast<unsigned>(switches)));
    ASSERT_EQ(static_cast<int>(r.size()), machines);
    ASSERT_LE(ring::tree_ring_max_load(t, r), 1) << "iteration " << iter;
  }
  ring::TreeTopology cyclic{3, {{0, 1}, {1, 2}, {2, 0}}, {0, 1, 2}};
  EXPECT_THROW(ring::dfs_ring(cyclic), std::invalid_argument);
}

// Max packets on one directed torus link when every ring member sends one packet to its
// successor along the deterministic route (the ring's steps are all like that).
std::uint64_t torus_ring_link_load(const torus_emu::Mapping& m, const std::vector<int>& ring) {
  torus_emu::LinkCounters counters(m.shape());
  for (std::size_t i = 0; i < ring.size() && ring.size() > 1; ++i) {
    const auto a = m.location(static_cast<torus_emu::Rank>(ring[i])).node;
    const auto b = m.location(static_cast<torus_emu::Rank>(ring[(i + 1) % ring.size()])).node;
    counters.account(torus_emu::deterministic_route(m.shape(), a, b), 1);
  }
  return counters.busiest().packets;
}

TEST(LogicalRing, TorusSnakeIsANearestNeighbourCycle) {
  for (const char* s : {"4x4x4", "4x4x2", "8x8x8", "2x2x2", "3x5x4", "3x5x7", "1x1x6", "5x1x1"}) {
    const auto shape = torus_emu::Shape::parse(s);
    const auto cycle = ring::snake_cycle(shape);
    if (std::string(s) == "3x5x7") {
      EXPECT_TRUE(cycle.empty()) << "no snake closes when every extent is odd";
      continue;
    }
    ASSERT_EQ(static_cast<int>(cycle.size()), shape.node_count()) << s;
    std::vector<bool> seen(cycle.size(), false);
    for (std::size_t i = 0; i < cycle.size(); ++i) {
      EXPECT_FALSE(seen[cycle[i]]);
      seen[cycle[i]] = true;
      const auto next = cycle[(i + 1) % cycle.size()];
      if (cycle.size() > 1) {
        EXPECT_EQ(torus_emu::distance(shape, shape.coord(cycle[i]), shape.coord(next)), 1)
            << s << " at " << i;
      }
    }
  }
}

TEST(LogicalRing, RingAllreduceIsContentionFreeOnTheTorus) {
  // The ring the generator uses loads every directed link with at most one message per step,
  // also in the fallback when every extent is odd (the XYZ identity ring).
  for (const char* s : {"4x4x4", "4x4x2", "8x8x8", "3x5x7", "3x5x4"}) {
    const auto shape = torus_emu::Shape::parse(s);
    const int p = shape.node_count();
    const auto m = torus_emu::Mapping::from_order(shape, 1, "XYZ", p);
    Params x = Params::allreduce(p, 1024, DataType::f32, ReduceOp::sum);
    x.topology.mapping = &m;
    const auto r = ring::torus_ring(x);
    EXPECT_EQ(torus_ring_link_load(m, r), 1u) << s;
  }
  // Part of a partition, virtual-node mode with T fastest: both tasks of a node are adjacent.
  const auto shape = torus_emu::Shape::parse("4x4x2");
  const auto m = torus_emu::Mapping::from_order(shape, 2, "TXYZ", 64);
  Params x = Params::allreduce(64, 100, DataType::i32, ReduceOp::sum);
  x.topology.mapping = &m;
  EXPECT_EQ(torus_ring_link_load(m, ring::torus_ring(x)), 1u);
  // With XYZT order the identity ring would be loaded twice; the snake ring sorts by node first.
  const auto m2 = torus_emu::Mapping::from_order(shape, 2, "XYZT", 64);
  x.topology.mapping = &m2;
  EXPECT_EQ(torus_ring_link_load(m2, ring::torus_ring(x)), 1u);
  std::vector<int> identity(64);
  std::iota(identity.begin(), identity.end(), 0);
  EXPECT_EQ(torus_ring_link_load(m2, identity), 2u);
}

TEST(RingAllreduce, MessagesAndBytesMatchTheTheorem) {
  const Algorithm* a = find_algorithm(Collective::allreduce, "py_ring");
  ASSERT_NE(a, nullptr);
  for (int p : {1, 2, 3, 7, 16, 31}) {
    for (std::uint64_t items : {std::uint64_t{0}, std::uint64_t{5}, std::uint64_t{64},
                                static_cast<std::uint64_t>(p) * 10}) {
      const Params x = Params::allreduce(p, items, DataType::i64, ReduceOp::sum);
      const auto s = build_schedule(*a, x);
      const auto v = verify(s, x);
      ASSERT_TRUE(v.ok) << p << " " << items << "\n" << v.summary();
      const std::uint64_t c =
          (items + static_cast<std::uint64_t>(p) - 1) / static_cast<std::uint64_t>(p);
      for (const auto& prog : s.programs) {
        std::uint64_t sends = 0, bytes = 0;
        for (const auto& st : prog.steps()) {
          if (st.kind == StepKind::send) {
            ++sends;
            bytes += st.src.bytes;
          }
        }
        EXPECT_EQ(sends, p == 1 ? 0u : 2u * static_cast<std::uint64_t>(p - 1));
        EXPECT_LE(bytes, 2 * static_cast<std::uint64_t>(p - 1) * c * 8);
        if (items % static_cast<std::uint64_t>(p) == 0) {
          EXPECT_EQ(bytes, 2 * static_cast<std::uint64_t>(p - 1) * items /
                               static_cast<std::uint64_t>(p) * 8);
        }
      }
    }
  }
}

}  // namespace
}  // namespace bgl::collectives

namespace bgl::collectives {
namespace {

TEST(RingAllreduce, CostModelConfirmsContentionFreedom) {
  // Contention free: the busiest directed link carries exactly what one rank injects (each link
  // serves one ring edge), for the snake ring and for the odd-extent fallback.
  const Algorithm* a = find_algorithm(Collective::allreduce, "py_ring");
  ASSERT_NE(a, nullptr);
  for (const char* s : {"4x4x2", "4x4x4", "3x5x3"}) {
    const auto shape = torus_emu::Shape::parse(s);
    const int p = shape.node_count();
    const auto m = torus_emu::Mapping::from_order(shape, 1, "XYZ", p);
    Params x =
        Params::allreduce(p, static_cast<std::uint64_t>(p) * 16, DataType::f32, ReduceOp::sum);
    x.topology.mapping = &m;
    const auto sched = build_schedule(*a, x);
    const auto trace = verify(sched, x);
    ASSERT_TRUE(trace.ok) << trace.summary();
    const auto cost = estimate_cost(sched, x, trace);
    EXPECT_EQ(cost.max_link_bytes, cost.max_rank_bytes_out) << s;
    EXPECT_EQ(cost.max_rank_bytes_out, 2u * static_cast<std::uint64_t>(p - 1) * 16 * 4) << s;
    // The snake ring's hops are all nearest-neighbour when a snake closes.
    if (std::string(s) != "3x5x3") {
      EXPECT_EQ(cost.hop_bytes, cost.max_rank_bytes_out * static_cast<std::uint64_t>(p)) << s;
    }
  }
}

}  // namespace
}  // namespace bgl::collectives
