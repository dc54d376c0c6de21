// Sparbit's step plan and its schedule.
#include <gtest/gtest.h>

#include <set>

#include "bgl/collectives/registry.hpp"
#include "bgl/collectives/topology_aware/sparbit.hpp"
#include "bgl/collectives/verifier.hpp"
#include "bgl/torus_emu/distance.hpp"
#include "bgl/torus_emu/mapping.hpp"

namespace bgl::collectives {
namespace {

int ceil_div(int a, int b) {
  return (a + b - 1) / b;
}

std::vector<int> offsets(int p, int r, const std::vector<int>& blocks) {
  std::vector<int> out;
  for (int b : blocks)
    out.push_back((r - b + p) % p);  // "r - k" printed as k
  return out;
}

TEST(Sparbit, DigestTableP5AndP21) {
  // p = 5: distances 4, 2, 1; skip 0, 1, 1; blocks sent 1, 1, 2; received r-4; r-2; r-1, r-3.
  const auto s5 = sparbit::plan(5);
  ASSERT_EQ(s5.size(), 3u);
  EXPECT_EQ(s5[0].distance, 4);
  EXPECT_EQ(s5[1].distance, 2);
  EXPECT_EQ(s5[2].distance, 1);
  EXPECT_EQ((std::vector<bool>{s5[0].skip, s5[1].skip, s5[2].skip}),
            (std::vector<bool>{false, true, true}));
  EXPECT_EQ((std::vector<int>{s5[0].sent(), s5[1].sent(), s5[2].sent()}),
            (std::vector<int>{1, 1, 2}));
  for (int r = 0; r < 5; ++r) {
    EXPECT_EQ(offsets(5, r, sparbit::received_blocks(5, r, s5[0])), (std::vector<int>{4}));
    EXPECT_EQ(offsets(5, r, sparbit::received_blocks(5, r, s5[1])), (std::vector<int>{2}));
    EXPECT_EQ(offsets(5, r, sparbit::received_blocks(5, r, s5[2])), (std::vector<int>{1, 3}));
  }
  // p = 21 = 10101b: distances 16..1, skip 0,1,0,1,1, blocks sent 1,1,3,5,10 (total 20).
  const auto s21 = sparbit::plan(21);
  ASSERT_EQ(s21.size(), 5u);
  const std::vector<int> dist = {16, 8, 4, 2, 1}, sent = {1, 1, 3, 5, 10};
  const std::vector<bool> skip = {false, true, false, true, true};
  for (std::size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(s21[i].distance, dist[i]);
    EXPECT_EQ(s21[i].skip, skip[i]);
    EXPECT_EQ(s21[i].sent(), sent[i]);
  }
  // The other rows of the table: 6, 7, 8, 3, 2.
  auto sent_of = [](int p) {
    std::vector<int> v;
    for (const auto& s : sparbit::plan(p))
      v.push_back(s.sent());
    return v;
  };
  EXPECT_EQ(sent_of(6), (std::vector<int>{1, 1, 3}));
  EXPECT_EQ(sent_of(7), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(sent_of(8), (std::vector<int>{1, 2, 4}));
  EXPECT_EQ(sent_of(3), (std::vector<int>{1, 1}));
  EXPECT_EQ(sent_of(2), (std::vector<int>{1}));
  EXPECT_TRUE(sparbit::plan(1).empty());
}

TEST(Sparbit, ClosedFormsForManySizes) {
  for (int p = 2; p <= 320; ++p) {
    const auto steps = sparbit::plan(p);
    int L = 0;
    while ((1 << L) < p)
      ++L;
    ASSERT_EQ(static_cast<int>(steps.size()), L) << p;
    int total = 0;
    for (const auto& s : steps) {
      // skip <=> ceil(p/d) odd; held before = ceil(p/2d); sent = ceil(p/d) - ceil(p/2d).
      EXPECT_EQ(s.skip, ceil_div(p, s.distance) % 2 == 1) << "p=" << p << " d=" << s.distance;
      EXPECT_EQ(s.held, ceil_div(p, 2 * s.distance));
      EXPECT_EQ(s.sent(), ceil_div(p, s.distance) - ceil_div(p, 2 * s.distance));
      total += s.sent();
    }
    EXPECT_EQ(total, p - 1) << p;
    // Every rank receives every other block exactly once.
    for (int r : {0, p / 2, p - 1}) {
      std::set<int> got;
      for (const auto& s : steps) {
        for (int b : sparbit::received_blocks(p, r, s)) {
          EXPECT_NE(b, r);
          EXPECT_TRUE(got.insert(b).second) << "p=" << p << " r=" << r << " block " << b;
        }
      }
      EXPECT_EQ(static_cast<int>(got.size()), p - 1);
    }
  }
}

TEST(Sparbit, VerifiesInCeilLog2Rounds) {
  const Algorithm* a = find_algorithm(Collective::allgather, "sparbit");
  ASSERT_NE(a, nullptr);
  for (int p : {21, 33, 63}) {
    for (std::uint64_t bytes : {std::uint64_t{1}}) {
      const Params x =
          Params::allgather(std::vector<std::uint64_t>(static_cast<std::size_t>(p), bytes));
      const auto r = verify(build_schedule(*a, x), x);
      ASSERT_TRUE(r.ok) << p << "\n" << r.summary();
      // ceil_log2(p) communication rounds at most (steps overlap only as data allows).
      int L = 0;
      while ((1 << L) < p)
        ++L;
      EXPECT_LE(r.rounds, L);
    }
  }
}

TEST(Sparbit, LastStepIsLocalUnderSequentialMapping) {
  // 4x4x4 torus, XYZ order: the distance-1 step is one hop along X except at row ends, where it
  // is an X wrap plus a Y (and at plane ends a Z) hop.
  const torus_emu::Shape shape({4, 4, 4}, {true, true, true});
  const auto m = torus_emu::Mapping::from_order(shape, 1, "XYZ", 64);
  const auto steps = sparbit::plan(64);
  const auto& last = steps.back();
  ASSERT_EQ(last.distance, 1);
  int one_hop = 0;
  for (int r = 0; r < 64; ++r) {
    const int to = (r + 1) % 64;
    const int hops = torus_emu::distance(shape, m.coord(static_cast<torus_emu::Rank>(r)),
                                         m.coord(static_cast<torus_emu::Rank>(to)));
    EXPECT_LE(hops, 3);
    one_hop += hops == 1;
  }
  EXPECT_EQ(one_hop, 48);  // 3 of every 4 ranks are X neighbours
}

}  // namespace
}  // namespace bgl::collectives
