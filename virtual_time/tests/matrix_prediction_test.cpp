#include "bgl/virtual_time/matrix_prediction.hpp"

#include <gtest/gtest.h>

#include "bgl/torus_emu/error.hpp"

namespace bgl::virtual_time {
namespace {

torus_emu::Mapping xyzt(const std::string& shape, int tpn, int tasks) {
  return torus_emu::Mapping::from_order(torus_emu::Shape::parse(shape), tpn, "XYZT", tasks);
}

TEST(MatrixPrediction, OneEagerMessageOneHopIsExact) {
  // 2,048 bytes: a full first packet (212 bytes of data after the 12-byte message and 16-byte
  // user headers), 7 full data packets and one of 156 bytes (192 bytes in chunks).
  torus_emu::CommMatrix m(2);
  m.add(0, 1, 2048, 1, {});
  const Params p;
  const auto r = predict_time(m, xyzt("2x1x1", 1, 2), p);
  EXPECT_DOUBLE_EQ(r.link_cycles, 8 * 1080.0 + 824);  // ceil((256 + 14) / 0.25), (192 + 14)
  EXPECT_EQ(r.busiest_link, (torus_emu::Link{0, torus_emu::Direction::x_plus}));
  EXPECT_DOUBLE_EQ(r.task_cycles, 1174 + 8 * 60 + 9 * 204.0);  // the receiver
  EXPECT_EQ(r.busiest_task, 1u);
  EXPECT_EQ(r.rounds, 1u);
  EXPECT_DOUBLE_EQ(r.latency_cycles, 63 + 1080.0);
  EXPECT_DOUBLE_EQ(r.cycles(), 9464 + 1143.0);
  EXPECT_STREQ(r.limit(), "links");
  EXPECT_EQ(r.packets, 9u);
}

TEST(MatrixPrediction, ProtocolsBySize) {
  const Params p;
  torus_emu::CommMatrix one(2);
  one.add(0, 1, 100, 1, {});
  const auto a = predict_time(one, xyzt("2x1x1", 1, 2), p);
  EXPECT_DOUBLE_EQ(a.task_cycles, 624 + 204.0);
  EXPECT_EQ(a.packets, 1u);
  // 100,000 bytes: rendezvous, 424 data packets of 236 bytes of data, scout, ack and fin
  torus_emu::CommMatrix big(2);
  big.add(0, 1, 100000, 1, {});
  const auto b = predict_time(big, xyzt("2x1x1", 1, 2), p);
  EXPECT_EQ(b.packets, 424u + 3);
  EXPECT_GT(b.link_cycles, 423 * 1080.0);
  // BGL_ML_EAGER_LIMIT above it: eager instead, fewer packets
  const auto c = predict_time(big, xyzt("2x1x1", 1, 2), p, {.eager_limit = 1 << 20});
  EXPECT_EQ(c.packets, 1 + (100000u - 212 + 239) / 240);
}

TEST(MatrixPrediction, UnknownMessageCountsUseTheEagerLimit) {
  torus_emu::CommMatrix m(2);
  m.add(0, 1, 40000);  // no count: three messages of at most 16 KiB
  const auto r = predict_time(m, xyzt("2x1x1", 1, 2), Params{});
  EXPECT_EQ(r.messages, 3u);
  EXPECT_EQ(r.rounds, 3u);
}

TEST(MatrixPrediction, VirtualNodePairsUseNoLink) {
  torus_emu::CommMatrix m(2);
  m.add(0, 1, 4300, 1, {});
  const auto r = predict_time(m, xyzt("1x1x1", 2, 2), Params{});  // both tasks on node 0
  EXPECT_DOUBLE_EQ(r.link_cycles, 0);
  EXPECT_DOUBLE_EQ(r.task_cycles, 800 + 4300 / 4.3);
}

TEST(MatrixPrediction, FollowsHopsAndParameters) {
  // A ring on 8x1x1: neighbours in XYZT order, scattered in another; twice the link bandwidth
  // halves the link time.
  torus_emu::CommMatrix m(8);
  for (torus_emu::Rank r = 0; r < 8; ++r)
    m.add(r, (r + 1) % 8, 64 * 1024, 16, {});
  const auto shape = torus_emu::Shape::parse("8x1x1");
  const auto near = torus_emu::Mapping::from_order(shape, 1, "XYZT", 8);
  const auto far = torus_emu::Mapping::from_text(
      shape, 1, "0 0 0\n4 0 0\n1 0 0\n5 0 0\n2 0 0\n6 0 0\n3 0 0\n7 0 0\n", "far", 8);
  const Params p;
  const auto a = predict_time(m, near, p), b = predict_time(m, far, p);
  EXPECT_GT(b.link_cycles, 3 * a.link_cycles);
  EXPECT_GT(b.cycles(), a.cycles());
  auto fast = p;
  fast.link_bytes_per_cycle *= 2;
  EXPECT_NEAR(predict_time(m, near, fast).link_cycles, a.link_cycles / 2, a.link_cycles * 0.01);
}

TEST(MatrixPrediction, SizesMustAgree) {
  torus_emu::CommMatrix m(3);
  EXPECT_THROW(predict_time(m, xyzt("2x1x1", 1, 2), Params{}), ConfigError);
}

}  // namespace
}  // namespace bgl::virtual_time
