#include "bgl/torus_emu/route.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "bgl/torus_emu/distance.hpp"

namespace bgl::torus_emu {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr auto px = Direction::x_plus;
constexpr auto mx = Direction::x_minus;
constexpr auto py = Direction::y_plus;
constexpr auto my = Direction::y_minus;
constexpr auto pz = Direction::z_plus;
constexpr auto mz = Direction::z_minus;

std::vector<Direction> steps_of(const Route& r) {
  return {r.steps().begin(), r.steps().end()};
}

// Follows the route link by link; every hop must exist in the shape.
NodeId walk(const Shape& s, const Route& r) {
  NodeId at = r.source();
  for (Direction d : r.steps()) {
    const auto next = s.neighbour(at, d);
    EXPECT_TRUE(next.has_value()) << "no link " << to_string(d) << " at " << to_string(s.coord(at));
    if (!next) return at;
    at = *next;
  }
  return at;
}

// Per-dimension hop count and the one sign used along it (0 when unused, 2 when mixed).
struct DimUse {
  int hops = 0;
  int sign = 0;
};
std::array<DimUse, kDims> use_of(const Route& r) {
  std::array<DimUse, kDims> use{};
  for (Direction d : r.steps()) {
    DimUse& u = use[static_cast<std::size_t>(dim_of(d))];
    ++u.hops;
    u.sign = (u.sign == 0 || u.sign == sign_of(d)) ? sign_of(d) : 2;
  }
  return use;
}

std::vector<Shape> sample_shapes() {
  return {Shape::parse("4x3x2"),      Shape::parse("5x4x1", "x"), Shape::parse("3x3x3", "xyz"),
          Shape::parse("6x2x5", "y"), Shape::parse("1x1x1"),      Shape::parse("2x2x2"),
          Shape::parse("7x1x1", "")};
}

TEST(Offset, TorusTakesTheShorterWayAndTiesGoPlus) {
  const Shape s = Shape::parse("8x5x1");
  auto x = [&](int from, int to) { return offset(s, Dim::x, from, to); };
  EXPECT_EQ(x(0, 3).hops, 3);
  EXPECT_EQ(x(0, 3).sign, +1);
  EXPECT_EQ(x(0, 5).hops, 3);
  EXPECT_EQ(x(0, 5).sign, -1);
  EXPECT_EQ(x(7, 0).hops, 1);
  EXPECT_EQ(x(7, 0).sign, +1);
  EXPECT_EQ(x(1, 6).hops, 3);
  EXPECT_EQ(x(1, 6).sign, -1);
  // Exactly half way round on an even ring: both ways are 4 hops; the + way is chosen.
  EXPECT_EQ(x(0, 4).hops, 4);
  EXPECT_EQ(x(0, 4).sign, +1);
  EXPECT_EQ(x(4, 0).hops, 4);
  EXPECT_EQ(x(4, 0).sign, +1);
  EXPECT_EQ(x(6, 2).sign, +1);
  EXPECT_EQ(x(3, 3).hops, 0);
  EXPECT_EQ(x(3, 3).sign, 0);

  // Odd ring: no ties; 2 forward, 3 backward.
  auto y = [&](int from, int to) { return offset(s, Dim::y, from, to); };
  EXPECT_EQ(y(0, 2).hops, 2);
  EXPECT_EQ(y(0, 2).sign, +1);
  EXPECT_EQ(y(0, 3).hops, 2);
  EXPECT_EQ(y(0, 3).sign, -1);
  EXPECT_EQ(y(3, 0).sign, +1);
  EXPECT_EQ(y(2, 0).sign, -1);

  // Extent 1: nothing to do.
  EXPECT_EQ(offset(s, Dim::z, 0, 0).hops, 0);
  EXPECT_EQ(offset(s, Dim::z, 0, 0).sign, 0);
}

TEST(Offset, ExtentTwoTorusAlwaysGoesPlus) {
  const Shape s = Shape::parse("2x1x1");
  EXPECT_EQ(offset(s, Dim::x, 0, 1).hops, 1);
  EXPECT_EQ(offset(s, Dim::x, 0, 1).sign, +1);
  EXPECT_EQ(offset(s, Dim::x, 1, 0).hops, 1);
  EXPECT_EQ(offset(s, Dim::x, 1, 0).sign, +1);
}

TEST(Offset, MeshUsesThePlainDifference) {
  const Shape s = Shape::parse("8x2x1", "xy");
  EXPECT_EQ(offset(s, Dim::x, 0, 7).hops, 7);
  EXPECT_EQ(offset(s, Dim::x, 0, 7).sign, +1);
  EXPECT_EQ(offset(s, Dim::x, 7, 0).hops, 7);
  EXPECT_EQ(offset(s, Dim::x, 7, 0).sign, -1);
  EXPECT_EQ(offset(s, Dim::x, 2, 6).hops, 4);
  EXPECT_EQ(offset(s, Dim::y, 1, 0).sign, -1);
  EXPECT_EQ(offset(s, Dim::x, 5, 5).sign, 0);
}

TEST(Offset, TorusHopsNeverExceedHalfTheRingAndLandOnTarget) {
  for (int k = 1; k <= 9; ++k) {
    const Shape s({k, 1, 1}, {true, true, true});
    for (int a = 0; a < k; ++a) {
      for (int b = 0; b < k; ++b) {
        const Offset o = offset(s, Dim::x, a, b);
        EXPECT_LE(o.hops, k / 2);
        EXPECT_EQ(((a + o.sign * o.hops) % k + k) % k, b) << k << ": " << a << "->" << b;
        EXPECT_EQ(o.sign == 0, o.hops == 0);
      }
    }
  }
}

TEST(Distance, SumsPerDimensionHops) {
  const Shape torus = Shape::parse("8x8x8");
  EXPECT_EQ(distance(torus, {0, 0, 0}, {7, 4, 3}), 1 + 4 + 3);
  EXPECT_EQ(distance(torus, {7, 4, 3}, {0, 0, 0}), 8);
  const Shape mesh = Shape::parse("8x8x8", "xyz");
  EXPECT_EQ(distance(mesh, {0, 0, 0}, {7, 4, 3}), 14);
  EXPECT_EQ(distance(mesh, {2, 2, 2}, {2, 2, 2}), 0);
}

TEST(DeterministicRoute, GoesXThenYThenZTheShortWay) {
  const Shape s = Shape::parse("8x8x8");
  const NodeId from = s.node_id({1, 2, 3});
  const NodeId to = s.node_id({6, 0, 5});
  const Route r = deterministic_route(s, from, to);
  EXPECT_EQ(r.source(), from);
  // x: 5 forward vs 3 back; y: 2 back; z: 2 forward.
  EXPECT_THAT(steps_of(r), ElementsAre(mx, mx, mx, my, my, pz, pz));
  EXPECT_EQ(r.last(), pz);
  EXPECT_EQ(walk(s, r), to);
}

TEST(DeterministicRoute, ZeroHopRouteHasNoLastDirection) {
  const Shape s = Shape::parse("4x4x4");
  const Route r = deterministic_route(s, 5, 5);
  EXPECT_EQ(r.hops(), 0);
  EXPECT_FALSE(r.last().has_value());
  EXPECT_TRUE(r.steps().empty());
}

TEST(DeterministicRoute, IsMinimalAndDimensionOrderedForAllPairs) {
  for (const Shape& s : sample_shapes()) {
    const auto n = static_cast<NodeId>(s.node_count());
    for (NodeId a = 0; a < n; ++a) {
      for (NodeId b = 0; b < n; ++b) {
        const Route r = deterministic_route(s, a, b);
        ASSERT_EQ(walk(s, r), b) << s.to_string() << " " << a << "->" << b;
        ASSERT_EQ(r.hops(), distance(s, s.coord(a), s.coord(b)));
        for (int i = 1; i < r.hops(); ++i) {
          ASSERT_LE(static_cast<int>(dim_of(r.steps()[i - 1])),
                    static_cast<int>(dim_of(r.steps()[i])));
        }
        for (const DimUse& u : use_of(r))
          ASSERT_NE(u.sign, 2);
      }
    }
  }
}

// for_each_link steps coordinates instead of asking the shape for each neighbour: the links it
// names must be the ones a hop-by-hop walk crosses, wrap links and meshes included.
TEST(Route, ForEachLinkNamesTheLinksAHopByHopWalkCrosses) {
  Rng rng(7);
  for (const Shape& s : sample_shapes()) {
    const auto n = static_cast<NodeId>(s.node_count());
    for (NodeId a = 0; a < n; ++a) {
      for (NodeId b = 0; b < n; ++b) {
        for (const Route& r : {deterministic_route(s, a, b), adaptive_route(s, a, b, rng)}) {
          std::vector<Link> expected;
          NodeId at = a;
          for (Direction d : r.steps()) {
            expected.push_back({at, d});
            at = *s.neighbour(at, d);
          }
          std::vector<Link> named;
          r.for_each_link(s, [&](Link l) { named.push_back(l); });
          ASSERT_EQ(named.size(), expected.size()) << s.to_string() << " " << a << "->" << b;
          for (std::size_t i = 0; i < named.size(); ++i) {
            ASSERT_EQ(named[i].node, expected[i].node) << s.to_string() << " " << a << "->" << b;
            ASSERT_EQ(named[i].dir, expected[i].dir);
          }
        }
      }
    }
  }
}

// A pair has a single minimal path exactly when its routes stay in one dimension; then every
// adaptive route is the deterministic one.
TEST(MinimalHops, SinglePathExactlyWhenOneDimensionIsCrossed) {
  Rng rng(3);
  for (const Shape& s : sample_shapes()) {
    const auto n = static_cast<NodeId>(s.node_count());
    for (NodeId a = 0; a < n; ++a) {
      for (NodeId b = 0; b < n; ++b) {
        const MinimalHops m = minimal_hops(s, a, b);
        const Route det = deterministic_route(s, a, b);
        int dims = 0;
        for (const DimUse& u : use_of(det))
          dims += u.hops > 0;
        ASSERT_EQ(m.single_path(), dims <= 1) << s.to_string() << " " << a << "->" << b;
        if (m.single_path()) ASSERT_EQ(steps_of(adaptive_route(a, m, rng)), steps_of(det));
      }
    }
  }
}

TEST(DeterministicRoute, MeshAndTorusDifferWhereWrappingIsShorter) {
  const Shape torus = Shape::parse("8x4x1");
  const Shape mesh = Shape::parse("8x4x1", "xy");
  const NodeId from = torus.node_id({0, 0, 0});
  const NodeId to = torus.node_id({7, 3, 0});
  const Route rt = deterministic_route(torus, from, to);
  const Route rm = deterministic_route(mesh, from, to);
  EXPECT_THAT(steps_of(rt), ElementsAre(mx, my));
  EXPECT_EQ(rm.hops(), 10);
  EXPECT_EQ(use_of(rm)[0].hops, 7);
  EXPECT_EQ(use_of(rm)[0].sign, +1);
  EXPECT_EQ(use_of(rm)[1].sign, +1);
  EXPECT_EQ(walk(torus, rt), to);
  EXPECT_EQ(walk(mesh, rm), to);
}

TEST(DeterministicRoute, LongestRoutesFitTheFixedCapacity) {
  const Shape mesh = Shape::parse("64x64x64", "xyz");
  const NodeId far = mesh.node_id({63, 63, 63});
  const Route rm = deterministic_route(mesh, 0, far);
  EXPECT_EQ(rm.hops(), 189);
  EXPECT_LE(rm.hops(), Route::kMaxHops);
  EXPECT_EQ(walk(mesh, rm), far);
  Rng rng(7);
  EXPECT_EQ(walk(mesh, adaptive_route(mesh, far, 0, rng)), 0u);

  const Shape torus = Shape::parse("64x64x64");
  const NodeId half = torus.node_id({32, 32, 32});
  EXPECT_EQ(deterministic_route(torus, 0, half).hops(), 96);
}

TEST(AdaptiveRoute, IsMinimalAndUsesTheMinimalDirectionPerDimension) {
  for (const Shape& s : sample_shapes()) {
    const auto n = static_cast<NodeId>(s.node_count());
    Rng rng(12345);
    for (NodeId a = 0; a < n; ++a) {
      for (NodeId b = 0; b < n; ++b) {
        const Route r = adaptive_route(s, a, b, rng);
        ASSERT_EQ(r.source(), a);
        ASSERT_EQ(walk(s, r), b) << s.to_string() << " " << a << "->" << b;
        const Coord ca = s.coord(a);
        const Coord cb = s.coord(b);
        ASSERT_EQ(r.hops(), distance(s, ca, cb));
        const auto use = use_of(r);
        for (Dim d : {Dim::x, Dim::y, Dim::z}) {
          const Offset o = offset(s, d, ca[d], cb[d]);
          ASSERT_EQ(use[static_cast<std::size_t>(d)].hops, o.hops);
          ASSERT_EQ(use[static_cast<std::size_t>(d)].sign, o.sign);
        }
      }
    }
  }
}

TEST(AdaptiveRoute, DifferentSeedsTakeDifferentPaths) {
  const Shape s = Shape::parse("8x8x8");
  const NodeId from = s.node_id({0, 0, 0});
  const NodeId to = s.node_id({2, 2, 2});
  std::set<Direction> last_hops;
  std::set<std::vector<Direction>> paths;
  for (std::uint64_t seed = 1; seed <= 200; ++seed) {
    Rng rng(seed);
    const Route r = adaptive_route(s, from, to, rng);
    ASSERT_EQ(r.hops(), 6);
    ASSERT_EQ(walk(s, r), to);
    last_hops.insert(*r.last());
    paths.insert(steps_of(r));
  }
  EXPECT_GE(last_hops.size(), 2u);
  EXPECT_EQ(last_hops, (std::set<Direction>{px, py, pz}));
  EXPECT_GT(paths.size(), 10u);  // 90 orderings exist
}

TEST(AdaptiveRoute, SameSeedGivesTheSamePath) {
  const Shape s = Shape::parse("8x8x8");
  Rng a(99);
  Rng b(99);
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(steps_of(adaptive_route(s, 0, 300, a)), steps_of(adaptive_route(s, 0, 300, b)));
  }
}

TEST(AdaptiveRoute, SingleDimensionIsAStraightLine) {
  const Shape s = Shape::parse("8x8x8");
  Rng rng(3);
  const Route r = adaptive_route(s, s.node_id({0, 5, 5}), s.node_id({0, 5, 2}), rng);
  EXPECT_THAT(steps_of(r), ElementsAre(mz, mz, mz));
}

TEST(Line, TorusLineInEitherDirection) {
  const Shape s = Shape::parse("8x4x4");
  const NodeId from = s.node_id({1, 2, 3});
  const NodeId to = s.node_id({4, 2, 3});
  const LineOrError plus = make_line(s, from, to, px);
  ASSERT_TRUE(plus.line.has_value()) << plus.error;
  EXPECT_TRUE(plus.error.empty());
  EXPECT_EQ(plus.line->source, from);
  EXPECT_EQ(plus.line->destination, to);
  EXPECT_EQ(plus.line->dir, px);
  EXPECT_EQ(plus.line->length, 3);
  EXPECT_THAT(steps_of(line_route(s, *plus.line)), ElementsAre(px, px, px));
  EXPECT_EQ(walk(s, line_route(s, *plus.line)), to);

  // The long way round, through the wrap link: 1 -> 0 -> 7 -> 6 -> 5 -> 4.
  const LineOrError minus = make_line(s, from, to, mx);
  ASSERT_TRUE(minus.line.has_value()) << minus.error;
  EXPECT_EQ(minus.line->length, 5);
  const Route r = line_route(s, *minus.line);
  EXPECT_EQ(r.hops(), 5);
  EXPECT_EQ(walk(s, r), to);
}

TEST(Line, MeshLineMustPointTowardsTheDestination) {
  const Shape s = Shape::parse("8x4x4", "y");
  const NodeId from = s.node_id({1, 3, 0});
  const NodeId to = s.node_id({1, 0, 0});
  const LineOrError ok = make_line(s, from, to, my);
  ASSERT_TRUE(ok.line.has_value()) << ok.error;
  EXPECT_EQ(ok.line->length, 3);
  EXPECT_EQ(walk(s, line_route(s, *ok.line)), to);

  const LineOrError bad = make_line(s, from, to, py);
  EXPECT_FALSE(bad.line.has_value());
  EXPECT_EQ(bad.error,
            "deposit-bit line from (1,3,0) to (1,0,0): direction +y points away from the "
            "destination on mesh dimension y");
}

TEST(Line, MustStayInExactlyOneDimension) {
  const Shape s = Shape::parse("4x4x4");
  const LineOrError two = make_line(s, s.node_id({0, 0, 0}), s.node_id({1, 1, 0}), px);
  EXPECT_FALSE(two.line.has_value());
  EXPECT_EQ(two.error,
            "deposit-bit line from (0,0,0) to (1,1,0) differs in 2 coordinates; a line must stay "
            "in one dimension");
  const LineOrError three = make_line(s, 0, s.node_id({1, 1, 1}), px);
  EXPECT_THAT(three.error, HasSubstr("differs in 3 coordinates"));

  const LineOrError zero = make_line(s, 5, 5, px);
  EXPECT_FALSE(zero.line.has_value());
  EXPECT_THAT(zero.error, HasSubstr("zero length"));
  EXPECT_THAT(zero.error, HasSubstr("(1,1,0) to (1,1,0)"));
}

TEST(Line, DirectionMustBeAlongTheLine) {
  const Shape s = Shape::parse("4x4x4");
  const LineOrError r = make_line(s, s.node_id({0, 0, 0}), s.node_id({0, 0, 2}), py);
  EXPECT_FALSE(r.line.has_value());
  EXPECT_EQ(r.error,
            "deposit-bit line from (0,0,0) to (0,0,2) runs along z but direction +y is along y");
}

TEST(Line, RejectsNodesOutsideTheShape) {
  const Shape s = Shape::parse("2x2x2");
  const LineOrError r = make_line(s, 0, 8, px);
  EXPECT_FALSE(r.line.has_value());
  EXPECT_THAT(r.error, HasSubstr("leaves shape 2x2x2"));
}

TEST(Line, ExtentTwoTorusLineIsOneHopEitherWay) {
  const Shape s = Shape::parse("2x1x1");
  for (Direction d : {px, mx}) {
    const LineOrError r = make_line(s, 0, 1, d);
    ASSERT_TRUE(r.line.has_value()) << r.error;
    EXPECT_EQ(r.line->length, 1);
    EXPECT_EQ(walk(s, line_route(s, *r.line)), 1u);
  }
}

TEST(Route, ForEachLinkVisitsEveryHopInOrder) {
  const Shape s = Shape::parse("4x4x1");
  const Route r = deterministic_route(s, s.node_id({3, 0, 0}), s.node_id({1, 3, 0}));
  std::vector<Link> links;
  r.for_each_link(s, [&](Link l) { links.push_back(l); });
  // x: 3 -> 1 is 2 either way, tie goes +: 3 -> 0 -> 1; then y: 0 -> 3 is one hop back.
  EXPECT_THAT(links, ElementsAre(Link{s.node_id({3, 0, 0}), px}, Link{s.node_id({0, 0, 0}), px},
                                 Link{s.node_id({1, 0, 0}), my}));
}

}  // namespace
}  // namespace bgl::torus_emu
