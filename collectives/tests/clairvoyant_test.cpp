// the Clairvoyant schedule (corrections and improvements of section 4.3-4.5).
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

#include "bgl/collectives/arrival_aware/clairvoyant.hpp"
#include "bgl/collectives/registry.hpp"
#include "bgl/collectives/verifier.hpp"

namespace bgl::collectives::clv {
namespace {

// Replays a schedule on sets of contributions: receivers that hold a segment combine (the sets
// must be disjoint), the sink overwrites a segment it gave away. Checks one send and one receive
// per process and round, no forwarding of what arrived in the same round, and that the root ends
// with every contribution of every segment exactly once while everybody else holds nothing.
void check_semantics(const Inputs& in, const Schedule& s) {
  const int P = static_cast<int>(in.arrival.size());
  const int N = in.segments;
  std::vector<std::vector<std::set<int>>> val(
      static_cast<std::size_t>(P), std::vector<std::set<int>>(static_cast<std::size_t>(N)));
  std::vector<std::vector<bool>> holds(static_cast<std::size_t>(P),
                                       std::vector<bool>(static_cast<std::size_t>(N), true));
  for (int p = 0; p < P; ++p) {
    for (int k = 0; k < N; ++k)
      val[static_cast<std::size_t>(p)][static_cast<std::size_t>(k)] = {p};
  }
  std::size_t i = 0;
  while (i < s.transfers.size()) {
    const int round = s.transfers[i].round;
    std::set<int> senders, receivers;
    std::vector<Transfer> batch;
    for (; i < s.transfers.size() && s.transfers[i].round == round; ++i)
      batch.push_back(s.transfers[i]);
    for (const auto& t : batch) {
      ASSERT_TRUE(senders.insert(t.from).second)
          << "two sends by " << t.from << " in round " << round;
      ASSERT_TRUE(receivers.insert(t.to).second)
          << "two receives by " << t.to << " in round " << round;
      ASSERT_TRUE(holds[static_cast<std::size_t>(t.from)][static_cast<std::size_t>(t.segment)])
          << "p" << t.from << " sends segment " << t.segment << " it does not hold, round "
          << round;
      // Sent values are those at the start of the round (nobody forwards what arrived now).
    }
    auto before = val;
    auto held_before = holds;
    for (const auto& t : batch) {
      const auto f = static_cast<std::size_t>(t.from), to = static_cast<std::size_t>(t.to);
      const auto sg = static_cast<std::size_t>(t.segment);
      ASSERT_TRUE(held_before[f][sg]);
      for (const auto& u : batch) {
        ASSERT_FALSE(u.to == t.from && u.segment == t.segment) << "P' violated in round " << round;
      }
      if (held_before[to][sg]) {
        for (int c : before[f][sg]) {
          ASSERT_TRUE(val[to][sg].insert(c).second) << "contribution " << c << " reduced twice";
        }
      } else {
        val[to][sg] = before[f][sg];  // the sink takes back a segment it gave away
      }
      holds[to][sg] = true;
      holds[f][sg] = false;
    }
  }
  for (int p = 0; p < P; ++p) {
    for (int k = 0; k < N; ++k) {
      if (p == in.root) {
        ASSERT_TRUE(holds[static_cast<std::size_t>(p)][static_cast<std::size_t>(k)]);
        ASSERT_EQ(val[static_cast<std::size_t>(p)][static_cast<std::size_t>(k)].size(),
                  static_cast<std::size_t>(P));
      } else {
        ASSERT_FALSE(holds[static_cast<std::size_t>(p)][static_cast<std::size_t>(k)])
            << "p" << p << " still holds segment " << k;
      }
    }
  }
}

TEST(Clairvoyant, FourProcessExampleOfSection43) {
  // P = 4, a = (0, 0, 0, 1.1), root p0, N = 4, d = 1.
  Inputs in{{0, 0, 0, 11}, 0, 4, 10};
  const auto s = schedule(in);
  const std::vector<Transfer> expected = {
      {0, 1, 0, 0}, {0, 0, 1, 1},                              // round 0
      {1, 2, 0, 0}, {1, 3, 1, 1}, {1, 0, 2, 2}, {1, 1, 3, 2},  // round 1
      {2, 3, 0, 0}, {2, 2, 1, 1}, {2, 0, 2, 3}, {2, 1, 3, 3},  // round 2
      {3, 1, 0, 1}, {3, 3, 2, 2}, {3, 2, 3, 3},                // round 3
      {4, 2, 0, 2},                                            // round 4
      {5, 3, 0, 3},                                            // round 5
  };
  EXPECT_EQ(s.transfers, expected);
  EXPECT_EQ(s.rounds, 6);
  check_semantics(in, s);
  // The original algorithm would forward in round 1 what arrived in round 1 (p1 -> p2 segment 1,
  // p0 -> p3 segment 0); correction 1 forbids it.
  for (const auto& t : s.transfers) {
    if (t.round == 1) {
      EXPECT_FALSE(t.from == 1 && t.to == 2 && t.segment == 1);
      EXPECT_FALSE(t.from == 0 && t.to == 3 && t.segment == 0);
    }
  }
}

TEST(Clairvoyant, BalancedArrivalRoundCounts) {
  // Digest section 4.4: P=8,N=4 -> 6 rounds, 31 messages; P=16,N=8 -> 11 rounds, 127 messages;
  // P=64,N=16 -> 21 rounds.
  auto run = [](int P, int N) {
    Inputs in{std::vector<std::int64_t>(static_cast<std::size_t>(P), 0), 0, N, 1};
    auto s = schedule(in);
    check_semantics(in, s);
    return s;
  };
  auto a = run(8, 4);
  EXPECT_EQ(a.rounds, 6);
  EXPECT_EQ(a.transfers.size(), 31u);
  auto b = run(16, 8);
  EXPECT_EQ(b.rounds, 11);
  EXPECT_EQ(b.transfers.size(), 127u);
  EXPECT_EQ(run(64, 16).rounds, 21);
}

TEST(Clairvoyant, EdgeCases) {
  // P = 1: nothing to send.
  EXPECT_TRUE(schedule({{5}, 0, 3, 1}).transfers.empty());
  // N = 1, root arriving last, ties by rank, d much larger and much smaller than the gaps.
  for (const Inputs& in : {Inputs{{0, 0, 0, 0, 0}, 4, 1, 1}, Inputs{{0, 1, 2, 3, 100}, 4, 3, 1},
                           Inputs{{7, 7, 7}, 1, 2, 3}, Inputs{{0, 5, 9, 2}, 2, 5, 1000},
                           Inputs{{0, 1000000, 2000000, 3000000}, 0, 1, 1}}) {
    check_semantics(in, schedule(in));
  }
  EXPECT_THROW(schedule({{0, 0}, 2, 1, 1}), std::invalid_argument);
  EXPECT_THROW(schedule({{0, 0}, 0, 0, 1}), std::invalid_argument);
  EXPECT_THROW(schedule({{0, 0}, 0, 1, 0}), std::invalid_argument);
  EXPECT_THROW(schedule({{}, 0, 1, 1}), std::invalid_argument);
}

TEST(Clairvoyant, IdleRoundSkippingIsExactOnRandomInstances) {
  // The seed's generators: uniform arrivals U[0, P + 0.1] and skewed (all 0 but the last at N);
  // d ~ U[0.001, 1]; exact integer ticks of 1e-4.
  std::mt19937_64 rng(12345);
  for (int iter = 0; iter < 120; ++iter) {
    const int P = 1 + static_cast<int>(rng() % 16);
    const int N = 1 + static_cast<int>(rng() % 12);
    std::uniform_real_distribution<double> u(0, P + 0.1), dd(0.001, 1);
    std::vector<double> a(static_cast<std::size_t>(P));
    const bool skewed = iter % 2;
    for (int p = 0; p < P; ++p)
      a[static_cast<std::size_t>(p)] = skewed ? (p == P - 1 ? N : 0) : u(rng);
    const int root = skewed ? 0 : static_cast<int>(rng() % static_cast<unsigned>(P));
    const Inputs in = quantize(a, root, N, dd(rng), 1e-4);
    const auto fast = schedule(in);
    const auto slow = schedule_unskipped(in);
    ASSERT_EQ(fast.transfers, slow.transfers) << "instance " << iter;
    ASSERT_EQ(fast.finish, slow.finish);
    check_semantics(in, fast);
    // Every process computes the identical schedule from the same inputs.
    ASSERT_EQ(schedule(in).transfers, fast.transfers);
  }
}

TEST(Clairvoyant, QuantizeIsRelativeToTheEarliestArrival) {
  const double a[] = {10.5, 10.0, 12.25};
  const auto in = quantize(a, 1, 4, 0.25, 0.25);
  EXPECT_EQ(in.arrival, (std::vector<std::int64_t>{2, 0, 9}));
  EXPECT_EQ(in.round, 1);
  EXPECT_EQ(in.root, 1);
  EXPECT_EQ(in.segments, 4);
}

}  // namespace
}  // namespace bgl::collectives::clv

namespace bgl::collectives {
namespace {

TEST(ClairvoyantReduce, VerifiesUnderImbalancedArrivals) {
  const Algorithm* a = find_algorithm(Collective::reduce, "clairvoyant");
  ASSERT_NE(a, nullptr);
  std::mt19937_64 rng(99);
  for (int p : {2, 4, 5, 13, 32}) {
    for (int root : {0, p - 1}) {
      for (std::uint64_t items :
           {std::uint64_t{1}, std::uint64_t{7}, static_cast<std::uint64_t>(3 * p)}) {
        Params x = Params::reduce(p, root, items, DataType::i32, ReduceOp::sum);
        std::uniform_real_distribution<double> u(0, 50e-6);
        for (int r = 0; r < p; ++r)
          x.arrival.push_back(u(rng));
        const auto s = build_schedule(*a, x);
        const auto v = verify(s, x);
        ASSERT_TRUE(v.ok) << "p=" << p << " root=" << root << " items=" << items << "\n"
                          << v.summary();
        // Every rank's program has at most one send and one receive per round.
        for (const auto& prog : s.programs) {
          std::map<int, std::pair<int, int>> per_round;
          for (const auto& st : prog.steps()) {
            if (st.kind == StepKind::send) ++per_round[st.round].first;
            if (st.kind == StepKind::recv) ++per_round[st.round].second;
          }
          for (const auto& [round, c] : per_round) {
            EXPECT_LE(c.first, 1);
            EXPECT_LE(c.second, 1);
          }
        }
      }
    }
  }
  // The four-process example through the generator: arrivals (0, 0, 0, 1.1 d).
  Params x = Params::reduce(4, 0, 4, DataType::f64, ReduceOp::sum);
  x.segment = 8;  // N = 4 segments of one element
  x.arrival = {0, 0, 0, 1e-3};
  ASSERT_TRUE(verify(build_schedule(*a, x), x).ok);
  x.arrival = {0, 0, 0};
  EXPECT_NE(x.validate().find("arrival has 3 entries, expected p = 4"), std::string::npos);
}

}  // namespace
}  // namespace bgl::collectives
