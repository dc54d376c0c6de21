// The torus cost model against hand-computed link loads.
#include <gtest/gtest.h>

#include "bgl/collectives/cost_model.hpp"
#include "bgl/collectives/registry.hpp"
#include "bgl/collectives/verifier.hpp"

namespace bgl::collectives {
namespace {

struct Fixture {
  torus_emu::Mapping mapping;
  Fixture(std::string_view shape, int p)
      : mapping(torus_emu::Mapping::from_order(torus_emu::Shape::parse(shape), 1, "XYZ", p)) {}
};

CostReport cost_of(std::string_view algo, Params x, const torus_emu::Mapping& m) {
  x.topology.mapping = &m;
  x.topology.whole_partition = m.size() == m.shape().node_count();
  const Schedule s = build_schedule(*find_algorithm(x.op, algo), x);
  VerifyOptions o;
  o.track_data = x.bytes() < (1u << 16);
  const VerifyResult v = verify(s, x, o);
  EXPECT_TRUE(v.ok) << v.summary();
  return estimate_cost(s, x, v);
}

TEST(CostModel, RingAllgatherOnARing) {
  // 8 ranks on an 8-node torus ring: every +x link carries 7 blocks, each block crosses 1 link.
  Fixture f("8x1x1", 8);
  const CostReport c =
      cost_of("ring", Params::allgather(std::vector<std::uint64_t>(8, 1000)), f.mapping);
  EXPECT_EQ(c.max_link_bytes, 7000u);
  EXPECT_EQ(c.hop_bytes, 8u * 7u * 1000u);
  EXPECT_EQ(c.messages, 56u);
  EXPECT_EQ(c.rounds, 7);
  EXPECT_EQ(c.busiest.dir, torus_emu::Direction::x_plus);
  // 7 rounds of 1000 B (5 packets: 4 full + one of 40 B) on one link each, plus hop latency.
  EXPECT_GT(c.time_us, 7 * 1000 / 175.0);
  EXPECT_LT(c.time_us, 7 * (1000 / 150.0 + 5.0));
}

TEST(CostModel, BinomialBroadcastHopBytes) {
  // 4x1x1 torus from rank 0: 0->2 (2 hops, +x), then 0->1 and 2->3 (1 hop each).
  Fixture f("4x1x1", 4);
  const CostReport c = cost_of("binomial", Params::bcast(4, 0, 480), f.mapping);
  EXPECT_EQ(c.hop_bytes, 480u * 4u);
  EXPECT_EQ(c.max_link_bytes, 960u);  // link 0 -> 1 carries 0->2 and 0->1
  EXPECT_EQ(c.rounds, 2);
}

TEST(CostModel, LineSendLoadsEachLinkOnce) {
  Fixture f("4x1x1", 4);
  Params x = Params::bcast(4, 0, 240);
  x.topology.mapping = &f.mapping;
  Schedule s;
  for (int r = 0; r < 4; ++r)
    s.programs.emplace_back(r);
  s.programs[0].line_send(torus_emu::Direction::x_plus, {1, 2, 3}, recv_buf(0, 240), 0);
  for (int r = 1; r < 4; ++r)
    s.programs[static_cast<std::size_t>(r)].recv(0, recv_buf(0, 240), 0);
  const VerifyResult v = verify(s, x);
  ASSERT_TRUE(v.ok) << v.summary();
  const CostReport c = estimate_cost(s, x, v);
  EXPECT_EQ(c.max_link_bytes, 240u);
  EXPECT_EQ(c.hop_bytes, 720u);
  // A receiver off the line is rejected with an explanation.
  s.programs[0] = Program(0);
  s.programs[0].line_send(torus_emu::Direction::x_plus, {2, 1, 3}, recv_buf(0, 240), 0);
  const VerifyResult w = verify(s, x);
  ASSERT_TRUE(w.ok);
  EXPECT_THROW(estimate_cost(s, x, w), std::invalid_argument);
}

TEST(CostModel, NeedsAMapping) {
  const Params x = Params::bcast(2, 0, 8);
  Schedule s;
  s.programs.emplace_back(0);
  s.programs.emplace_back(1);
  s.programs[0].send(1, recv_buf(0, 8), 0);
  s.programs[1].recv(0, recv_buf(0, 8), 0);
  EXPECT_THROW(estimate_cost(s, x, verify(s, x)), std::invalid_argument);
}

TEST(CostModel, AlltoallBisectionBound) {
  // 8x8x8 torus, 512 ranks, 1 KiB blocks: 256*256*1024 B over 2*64 links at 155.6 MB/s.
  const double t = alltoall_bisection_bound_us(torus_emu::Shape::parse("8x8x8"), 512, 1024);
  EXPECT_NEAR(t, 256.0 * 256 * 1024 / (128 * 175e6 * 240 / 270) * 1e6, 1e-6);
}

}  // namespace
}  // namespace bgl::collectives

namespace bgl::collectives {
namespace {

// BG/L's claim: the three edge-disjoint deposit-bit routes load the busiest link at most a
// third as much as a binomial tree (which sends the whole message over some links several times).
TEST(CostModel, Torus3BroadcastVersusBinomial) {
  for (const char* shape : {"4x4x4", "4x4x2", "8x4x2"}) {
    Fixture f(shape, torus_emu::Shape::parse(shape).node_count());
    const std::uint64_t n = 3u << 20;
    Params x = Params::bcast(f.mapping.size(), 5, n);
    const CostReport t3 = cost_of("torus3", x, f.mapping);
    const CostReport bin = cost_of("binomial", x, f.mapping);
    EXPECT_LE(t3.max_link_bytes * 3, bin.max_link_bytes + 3) << shape;
    // Every link of the three routes carries exactly one part: n / 3.
    EXPECT_EQ(t3.max_link_bytes, n / 3) << shape;
    EXPECT_LT(t3.time_us, bin.time_us) << shape;
  }
}

// The controlled-injection alltoall stays within a small factor of the bisection bound.
TEST(CostModel, ControlledAlltoallNearBisectionBound) {
  Fixture f("4x4x4", 64);
  const std::uint64_t block = 16384;
  const CostReport c = cost_of("controlled", Params::alltoall(64, block), f.mapping);
  const double bound = alltoall_bisection_bound_us(f.mapping.shape(), 64, block);
  EXPECT_GT(c.time_us, bound * 0.99);
  EXPECT_LT(c.time_us, bound * 3.0) << c.to_json() << " bound " << bound;
}

}  // namespace
}  // namespace bgl::collectives
