#include "bgl/torus_emu/link_counters.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

namespace bgl::torus_emu {
namespace {

constexpr auto px = Direction::x_plus;
constexpr auto mx = Direction::x_minus;
constexpr auto py = Direction::y_plus;

TEST(LinkCounters, StartsEmptyWithSixLinksPerNode) {
  const Shape s = Shape::parse("4x3x2");
  const LinkCounters c(s);
  EXPECT_EQ(c.raw().size(), 24u * 6u);
  EXPECT_EQ(c.total_packet_hops(), 0u);
  EXPECT_EQ(c.total_bytes(), 0u);
  EXPECT_EQ(c.to_json(s), "{\"links\":[]}");
  Link which{7, Direction::z_minus};
  EXPECT_EQ(c.busiest(&which).bytes, 0u);
  EXPECT_EQ(which, (Link{0, px}));
}

TEST(LinkCounters, AccountsEveryLinkOfAKnownRoute) {
  const Shape s = Shape::parse("4x4x1");
  LinkCounters c(s);
  // (0,0,0) -> (2,1,0): x is a tie (2 either way) so it goes +x twice, then +y once.
  const Route r = deterministic_route(s, s.node_id({0, 0, 0}), s.node_id({2, 1, 0}));
  c.account(r, 100);
  const Link l0{s.node_id({0, 0, 0}), px};
  const Link l1{s.node_id({1, 0, 0}), px};
  const Link l2{s.node_id({2, 0, 0}), py};
  for (const Link& l : {l0, l1, l2}) {
    EXPECT_EQ(c.at(l).packets, 1u);
    EXPECT_EQ(c.at(l).bytes, 100u);
  }
  EXPECT_EQ(c.total_packet_hops(), 3u);
  EXPECT_EQ(c.total_bytes(), 300u);
  EXPECT_EQ(c.at(Link{s.node_id({1, 0, 0}), mx}).packets, 0u);  // direction matters

  // The raw view is indexed node * 6 + direction.
  EXPECT_EQ(c.raw()[s.node_id({2, 0, 0}) * 6 + index_of(py)].bytes, 100u);

  // A second packet sharing the first link adds up there only.
  c.account(deterministic_route(s, s.node_id({0, 0, 0}), s.node_id({1, 0, 0})), 32);
  EXPECT_EQ(c.at(l0).packets, 2u);
  EXPECT_EQ(c.at(l0).bytes, 132u);
  EXPECT_EQ(c.at(l1).packets, 1u);
  EXPECT_EQ(c.total_packet_hops(), 4u);
  EXPECT_EQ(c.total_bytes(), 332u);

  Link which{};
  const LinkCounters::Count top = c.busiest(&which);
  EXPECT_EQ(which, l0);
  EXPECT_EQ(top.bytes, 132u);
  EXPECT_EQ(top.packets, 2u);
  EXPECT_EQ(c.busiest().bytes, 132u);
}

TEST(LinkCounters, CountsTheWrapLinkAtItsSource) {
  const Shape s = Shape::parse("4x1x1");
  LinkCounters c(s);
  c.account(deterministic_route(s, 3, 0), 8);
  EXPECT_EQ(c.at(Link{3, px}).packets, 1u);
  EXPECT_EQ(c.total_packet_hops(), 1u);
}

TEST(LinkCounters, ZeroHopRouteCountsNothing) {
  const Shape s = Shape::parse("4x4x4");
  LinkCounters c(s);
  c.account(deterministic_route(s, 9, 9), 1000);
  EXPECT_EQ(c.total_bytes(), 0u);
}

TEST(LinkCounters, AddMergeAndReset) {
  const Shape s = Shape::parse("2x2x2");
  LinkCounters a(s);
  LinkCounters b(s);
  a.add(Link{1, py}, {2, 20});
  b.add(Link{1, py}, {1, 5});
  b.add(Link{6, Direction::z_minus}, {3, 300});
  a.merge(b);
  EXPECT_EQ(a.at(Link{1, py}).packets, 3u);
  EXPECT_EQ(a.at(Link{1, py}).bytes, 25u);
  EXPECT_EQ(a.at(Link{6, Direction::z_minus}).bytes, 300u);
  EXPECT_EQ(a.total_packet_hops(), 6u);
  EXPECT_EQ(b.total_packet_hops(), 4u);  // merge leaves the source alone
  Link which{};
  EXPECT_EQ(a.busiest(&which).bytes, 300u);
  EXPECT_EQ(which, (Link{6, Direction::z_minus}));
  a.reset();
  EXPECT_EQ(a.total_packet_hops(), 0u);
  EXPECT_EQ(a.total_bytes(), 0u);
}

TEST(LinkCounters, MergeRejectsADifferentShape) {
  LinkCounters a(Shape::parse("2x2x2"));
  const LinkCounters b(Shape::parse("2x2x2", "x"));
  EXPECT_THROW(a.merge(b), std::invalid_argument);
}

TEST(LinkCounters, WritableRawViewFeedsBack) {
  const Shape s = Shape::parse("2x1x1");
  LinkCounters c(s);
  c.raw()[index_of(mx)] = {4, 44};
  EXPECT_EQ(c.at(Link{0, mx}).bytes, 44u);
}

TEST(LinkCounters, JsonListsOnlyLinksWithTrafficInNodeOrder) {
  const Shape s = Shape::parse("4x4x2");
  LinkCounters c(s);
  c.account(deterministic_route(s, s.node_id({3, 1, 0}), s.node_id({0, 1, 1})), 64);
  EXPECT_EQ(c.to_json(s),
            "{\"links\":["
            "{\"node\":[0,1,0],\"dir\":\"+z\",\"packets\":1,\"bytes\":64},"
            "{\"node\":[3,1,0],\"dir\":\"+x\",\"packets\":1,\"bytes\":64}"
            "]}");
}

}  // namespace
}  // namespace bgl::torus_emu
