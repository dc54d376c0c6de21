#include <gtest/gtest.h>

#include <vector>

#include "bgl/torus_emu/route.hpp"
#include "bgl/virtual_time/collective_timing.hpp"
#include "bgl/virtual_time/torus_timing.hpp"

namespace bgl::virtual_time {
namespace {

struct Net {
  torus_emu::Shape shape;
  Params params;
  std::vector<LinkCalendar> calendars;
  TorusTiming timing;
  explicit Net(torus_emu::Shape s)
      : shape(s),
        calendars(static_cast<std::size_t>(s.node_count()) * torus_emu::kDirections),
        timing(params, shape, calendars) {}
  torus_emu::NodeId at(int x, int y, int z) const { return shape.node_id({x, y, z}); }
};

TEST(TorusTiming, CutThroughIsHopsTimesHopLatencyPlusOneWireTime) {
  Net n(torus_emu::Shape::parse("8x8x8"));
  for (int hops = 1; hops <= 4; ++hops) {
    const auto r = torus_emu::deterministic_route(n.shape, n.at(0, 0, 0), n.at(hops, 0, 0));
    ASSERT_EQ(r.hops(), hops);
    Net fresh(torus_emu::Shape::parse("8x8x8"));
    EXPECT_EQ(fresh.timing.transit(r, 1000, 256).arrival, 1000u + 63u * hops + 1080u);
    EXPECT_EQ(fresh.timing.transit(r, 5000, 256).left, 5000u + 1080u);
  }
  const auto local = torus_emu::deterministic_route(n.shape, 5, 5);
  EXPECT_EQ(n.timing.transit(local, 10, 64).arrival, 10u + 100u);
}

TEST(TorusTiming, PacketsOnOneLinkSerialiseAtLinkRate) {
  Net n(torus_emu::Shape::parse("4x4x4"));
  const auto r = torus_emu::deterministic_route(n.shape, n.at(0, 0, 0), n.at(1, 0, 0));
  Tick last = 0;
  for (int i = 0; i < 100; ++i)
    last = n.timing.transit(r, 0, 256).arrival;
  // 100 full packets: the link is busy 100 x 1080 cycles; payload rate 240 / 1080 per cycle.
  EXPECT_EQ(last, 99u * 1080u + 63u + 1080u);
}

TEST(TorusTiming, DisjointRoutesDoNotContend) {
  Net n(torus_emu::Shape::parse("4x4x4"));
  const auto a = torus_emu::deterministic_route(n.shape, n.at(0, 0, 0), n.at(1, 0, 0));
  const auto b = torus_emu::deterministic_route(n.shape, n.at(1, 0, 0), n.at(0, 0, 0));  // reverse
  EXPECT_EQ(n.timing.transit(a, 0, 256).arrival, 63u + 1080u);
  EXPECT_EQ(n.timing.transit(b, 0, 256).arrival, 63u + 1080u);
}

TEST(TorusTiming, ASharedMiddleLinkDelaysTheSecondPacket) {
  Net n(torus_emu::Shape::parse("8x1x1"));
  const auto a = torus_emu::deterministic_route(n.shape, n.at(0, 0, 0), n.at(3, 0, 0));
  const auto b = torus_emu::deterministic_route(n.shape, n.at(1, 0, 0), n.at(2, 0, 0));
  const Tick ta = n.timing.transit(a, 0, 256).arrival;  // link 1->2 busy [63, 1143)
  EXPECT_EQ(ta, 3u * 63u + 1080u);
  const auto tb = n.timing.transit(b, 63, 256);
  EXPECT_EQ(tb.arrival, 1143u + 63u + 1080u);
  EXPECT_EQ(tb.left, 1143u + 1080u);  // waited for the shared link
}

TEST(TorusTiming, ARouteTimedInTwoPartsArrivesWhenItWouldInOne) {
  // Several hosts: the sender times the first links, the receiving host the rest.
  const auto shape = torus_emu::Shape::parse("8x8x8");
  const auto r =
      torus_emu::deterministic_route(shape, shape.node_id({0, 0, 0}), shape.node_id({3, 2, 1}));
  ASSERT_EQ(r.hops(), 6);
  Net whole(shape);
  const auto once = whole.timing.transit(r, 1000, 256);
  for (int first = 1; first <= r.hops(); ++first) {
    Net split(shape);
    const auto head = split.timing.transit_first(r, 1000, 256, first);
    EXPECT_EQ(head.left, once.left) << first;
    EXPECT_EQ(head.head, 1000u + 63u * first) << first;
    EXPECT_EQ(split.timing.transit_rest(r, first, head.head, 256), once.arrival) << first;
  }
}

TEST(TorusTiming, TheRestOfARouteWaitsForItsBusyLinks) {
  Net n(torus_emu::Shape::parse("8x1x1"));
  const auto a = torus_emu::deterministic_route(n.shape, n.at(1, 0, 0), n.at(3, 0, 0));
  const auto b = torus_emu::deterministic_route(n.shape, n.at(0, 0, 0), n.at(3, 0, 0));
  n.timing.transit(a, 0, 256);  // link 1->2 busy [0, 1080), link 2->3 [63, 1143)
  const auto head = n.timing.transit_first(b, 0, 256, 1);  // link 0->1 free: head at 63
  EXPECT_EQ(head.head, 63u);
  // The receiving side's links: 1->2 is free from 1080, 2->3 from 1143 (1080 + 63 is later).
  EXPECT_EQ(n.timing.transit_rest(b, 1, head.head, 256), 1080u + 63u + 63u + 1080u);
}

TEST(TorusTiming, DepositLineArrivesAtEveryNodeInTurn) {
  Net n(torus_emu::Shape::parse("8x1x1"));
  const auto line = torus_emu::make_line(n.shape, 0, 4, torus_emu::Direction::x_plus);
  ASSERT_TRUE(line.line);
  const auto r = torus_emu::line_route(n.shape, *line.line);
  std::vector<Tick> arrivals(static_cast<std::size_t>(r.hops()));
  EXPECT_EQ(n.timing.transit_line(r, 0, 256, arrivals), 1080u);
  for (std::size_t i = 0; i < arrivals.size(); ++i)
    EXPECT_EQ(arrivals[i], 63u * (i + 1) + 1080u);
}

TEST(CollectiveTiming, TreeAndBarrier) {
  const Params p;
  EXPECT_EQ(tree_latency(p, 64), 1750u);
  EXPECT_EQ(tree_packet_cycles(p), 532u);  // (256 + 10) / 0.5
  EXPECT_EQ(tree_result(p, 4, 1000, 10), 1000u + 2u * tree_latency(p, 4) + 5320u);
  EXPECT_EQ(barrier_release(p, 5000), 6050u);
}

}  // namespace
}  // namespace bgl::virtual_time
