// The timed replay with arrival times, and the Clairvoyant papers' headline shape: under imbalanced
// arrivals Clairvoyant's reduce finishes earlier (first arrival to last exit) than the binomial
// tree.
#include <gtest/gtest.h>

#include <algorithm>

#include "bgl/collectives/arrival_aware/arrival.hpp"
#include "bgl/collectives/arrival_aware/timed_replay.hpp"
#include "bgl/collectives/registry.hpp"

namespace bgl::collectives {
namespace {

TEST(TimedReplay, TwoRanksEagerSend) {
  Schedule s;
  s.programs.emplace_back(0);
  s.programs.emplace_back(1);
  s.programs[0].send(1, send_buf(0, 700), 0, {});
  s.programs[1].recv(0, recv_buf(0, 700), 0, {});
  const Params x = Params::bcast(2, 0, 700);
  const CostConstants k;
  const double dur = (k.message_cycles + 700 / k.link_bytes_per_cycle + k.hop_cycles) / k.cpu_hz;
  // The receiver arrives late: the data waits for it.
  const double late[] = {0.0, 1.0};
  auto r = timed_replay(s, x, late);
  EXPECT_DOUBLE_EQ(r.exit[0], dur);
  EXPECT_DOUBLE_EQ(r.exit[1], 1.0);
  // The sender arrives late: the receiver waits for the data.
  const double early[] = {1.0, 0.0};
  r = timed_replay(s, x, early);
  EXPECT_DOUBLE_EQ(r.exit[1], 1.0 + dur);
  EXPECT_DOUBLE_EQ(r.span(), 1.0 + dur);
  const double wrong[] = {0.0};
  EXPECT_THROW(timed_replay(s, x, wrong), std::invalid_argument);
}

double median_span(const Algorithm& a, int p, std::uint64_t items, const arrival::Imbalance& im,
                   bool oracle) {
  std::vector<double> spans;
  for (std::uint64_t it = 0; it < 9; ++it) {
    Params x = Params::reduce(p, 0, items, DataType::f32, ReduceOp::sum);
    const auto d = arrival::delays(im, p, it);
    if (oracle) x.arrival = d;
    spans.push_back(timed_replay(build_schedule(a, x), x, d).span());
  }
  std::sort(spans.begin(), spans.end());
  return spans[spans.size() / 2];
}

TEST(TimedReplay, ClairvoyantBeatsBinomialUnderImbalancedArrival) {
  const Algorithm* clv = find_algorithm(Collective::reduce, "clairvoyant");
  const Algorithm* bin = find_algorithm(Collective::reduce, "binomial");
  ASSERT_NE(clv, nullptr);
  ASSERT_NE(bin, nullptr);
  const auto im = arrival::parse_imbalance("uniform:500us");
  for (int p : {16, 32}) {
    const double c = median_span(*clv, p, 16384, im, true);
    const double b = median_span(*bin, p, 16384, im, false);
    EXPECT_LT(c, b) << "p=" << p << " clairvoyant " << c * 1e6 << " us, binomial " << b * 1e6
                    << " us";
  }
}

}  // namespace
}  // namespace bgl::collectives
