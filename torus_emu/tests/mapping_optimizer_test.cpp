#include "bgl/torus_emu/mapping_optimizer.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <numeric>
#include <random>

#include "bgl/torus_emu/error.hpp"

namespace bgl::torus_emu {
namespace {

using ::testing::HasSubstr;

// A periodic 7-point stencil on an X x Y x Z grid of ranks numbered x fastest; rank r of the
// matrix is grid point perm[r].
CommMatrix stencil(int x, int y, int z, std::uint64_t bytes, const std::vector<Rank>& perm = {}) {
  const int n = x * y * z;
  std::vector<Rank> rank_of(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r)
    rank_of[perm.empty() ? static_cast<std::size_t>(r) : perm[static_cast<std::size_t>(r)]] =
        static_cast<Rank>(r);
  CommMatrix m(n);
  const auto id = [&](int i, int j, int k) {
    return rank_of[static_cast<std::size_t>(((i + x) % x) +
                                            x * (((j + y) % y) + y * ((k + z) % z)))];
  };
  for (int k = 0; k < z; ++k)
    for (int j = 0; j < y; ++j)
      for (int i = 0; i < x; ++i)
        for (const auto [di, dj, dk] :
             {std::array{1, 0, 0}, std::array{-1, 0, 0}, std::array{0, 1, 0}, std::array{0, -1, 0},
              std::array{0, 0, 1}, std::array{0, 0, -1}})
          m.add(id(i, j, k), id(i + di, j + dj, k + dk), bytes);
  return m;
}

std::vector<Rank> permutation(int n, std::uint64_t seed) {
  std::vector<Rank> p(static_cast<std::size_t>(n));
  std::iota(p.begin(), p.end(), Rank{0});
  std::shuffle(p.begin(), p.end(), std::mt19937_64(seed));
  return p;
}

Mapping shuffled(const Shape& shape, int tpn, int n, std::uint64_t seed) {
  const auto natural = Mapping::from_order(shape, tpn, "XYZT", shape.node_count() * tpn);
  auto locs = natural.locations();
  std::shuffle(locs.begin(), locs.end(), std::mt19937_64(seed));
  locs.resize(static_cast<std::size_t>(n));
  return Mapping::from_locations(shape, tpn, locs);
}

TEST(RateMapping, HopBytesAndBusiestLinkOfAKnownCase) {
  const Shape shape = Shape::parse("4x1x1");
  CommMatrix m(2);
  m.add(0, 1, 100);
  m.add(1, 0, 100);
  m.add(0, 0, 5000);  // to oneself: no hops
  const auto mapping = Mapping::from_locations(shape, 1, {{0, 0}, {2, 0}});
  const auto r = rate_mapping(m, mapping);
  EXPECT_EQ(r.total_bytes, 200u);
  EXPECT_EQ(r.hop_bytes, 400u);  // two hops each way
  // 0 -> 2 takes +x twice; 2 -> 0 is a tie too and also goes +x: four links of 100 bytes.
  EXPECT_EQ(r.busiest_link_bytes, 100u);
  EXPECT_DOUBLE_EQ(r.mean_hops(), 2.0);
  EXPECT_EQ(r.hop_bytes_lower_bound, 200u);  // neighbours at best
}

TEST(RateMapping, DisagreeingTaskCountsAreAnError) {
  CommMatrix m(4);
  const auto mapping = Mapping::from_order(Shape::parse("2x2x2"), 1, "XYZ", 8);
  try {
    rate_mapping(m, mapping);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_THAT(e.what(), HasSubstr("matrix has 4 tasks but the mapping has 8"));
  }
  EXPECT_THROW(optimize_mapping(m, mapping), ConfigError);
}

struct StencilCase {
  int x, y, z;
  std::uint64_t seed;
};

class PermutedStencil : public ::testing::TestWithParam<StencilCase> {};

// The ranks of a 3D stencil are shuffled; mapped in rank order they are scattered over the torus.
// The optimiser must find a placement as good as the natural one (every neighbour one hop away),
// which is also the lower bound.
TEST_P(PermutedStencil, RecoversTheNaturalHopBytes) {
  const auto c = GetParam();
  const Shape shape({c.x, c.y, c.z}, {true, true, true});
  const int n = c.x * c.y * c.z;
  const auto natural =
      rate_mapping(stencil(c.x, c.y, c.z, 1000), Mapping::from_order(shape, 1, "XYZ", n));
  const auto permuted = stencil(c.x, c.y, c.z, 1000, permutation(n, c.seed));
  const auto start = Mapping::from_order(shape, 1, "XYZ", n);
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = optimize_mapping(permuted, start);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  RecordProperty("seconds", std::to_string(seconds));
  EXPECT_EQ(natural.hop_bytes, natural.hop_bytes_lower_bound);
  EXPECT_GT(r.before.hop_bytes, 2 * natural.hop_bytes) << "the permutation scatters the ranks";
  EXPECT_EQ(r.after.hop_bytes, natural.hop_bytes)
      << "greedy " << r.greedy_hop_bytes << ", " << r.moves << " moves, " << seconds << " s";
  EXPECT_LE(r.after.busiest_link_bytes, natural.busiest_link_bytes);
  EXPECT_FALSE(r.time_capped);
  // The result is what it claims to be.
  const auto check = rate_mapping(permuted, r.mapping);
  EXPECT_EQ(check.hop_bytes, r.after.hop_bytes);
  EXPECT_EQ(check.busiest_link_bytes, r.after.busiest_link_bytes);
}

INSTANTIATE_TEST_SUITE_P(, PermutedStencil,
                         ::testing::Values(StencilCase{4, 4, 4, 1}, StencilCase{4, 4, 4, 2},
                                           StencilCase{8, 8, 8, 3}, StencilCase{8, 8, 8, 4},
                                           StencilCase{16, 8, 4, 5}, StencilCase{8, 4, 2, 6}),
                         [](const auto& info) {
                           const auto& p = info.param;
                           return std::to_string(p.x) + "x" + std::to_string(p.y) + "x" +
                                  std::to_string(p.z) + "_seed" + std::to_string(p.seed);
                         });

// Random sparse and dense matrices from random starting mappings, on other shapes and in
// virtual-node mode: the result is never rated worse than the start, and is a valid mapping.
TEST(OptimizeMapping, NeverWorseThanItsInputOnRandomMatrices) {
  struct Case {
    const char* shape;
    int tpn, tasks, partners;
  };
  for (const Case c : {Case{"4x4x4", 1, 64, 3}, Case{"4x4x2", 2, 64, 63}, Case{"8x4x1", 1, 20, 5},
                       Case{"3x5x2", 2, 50, 4}, Case{"4x4x4", 1, 64, 63}}) {
    for (std::uint64_t seed = 1; seed <= 3; ++seed) {
      SCOPED_TRACE(std::string(c.shape) + " tpn " + std::to_string(c.tpn) + " seed " +
                   std::to_string(seed));
      const Shape shape = Shape::parse(c.shape, seed == 3 ? "z" : "");
      std::mt19937_64 rng(seed);
      CommMatrix m(c.tasks);
      for (int s = 0; s < c.tasks; ++s)
        for (int k = 0; k < c.partners; ++k)
          m.add(static_cast<Rank>(s), static_cast<Rank>(rng() % static_cast<unsigned>(c.tasks)),
                1 + rng() % 100000);
      const auto start = shuffled(shape, c.tpn, c.tasks, seed);
      OptimizeOptions o;
      o.moves_per_task = 2000;
      const auto r = optimize_mapping(m, start, o);
      EXPECT_FALSE(r.before.better_than(r.after));
      EXPECT_LE(r.after.hop_bytes, r.before.hop_bytes);
      EXPECT_GE(r.after.hop_bytes, r.after.hop_bytes_lower_bound);
      const auto check = rate_mapping(m, r.mapping);
      EXPECT_EQ(check.hop_bytes, r.after.hop_bytes);
      EXPECT_EQ(check.busiest_link_bytes, r.after.busiest_link_bytes);
      EXPECT_EQ(r.mapping.size(), c.tasks);
      EXPECT_EQ(r.mapping.shape(), shape);
    }
  }
}

// Starting from the best mapping there is, the optimiser keeps it.
TEST(OptimizeMapping, KeepsAnOptimalStart) {
  const Shape shape = Shape::parse("4x4x4");
  const auto m = stencil(4, 4, 4, 10);
  const auto start = Mapping::from_order(shape, 1, "XYZ", 64);
  OptimizeOptions o;
  o.moves_per_task = 100;  // too few to find it again: the start must win
  const auto r = optimize_mapping(m, start, o);
  EXPECT_EQ(r.after.hop_bytes, r.before.hop_bytes);
  EXPECT_LE(r.after.busiest_link_bytes, r.before.busiest_link_bytes);
}

// A 64-task stencil onto another shape (8x8x1, a plane) and into virtual-node mode (4x4x2 nodes,
// two tasks each): better than the scattered start and no better than the bound.
TEST(OptimizeMapping, OtherShapesAndVirtualNodeMode) {
  const auto m = stencil(4, 4, 4, 100, permutation(64, 9));
  for (const auto& [shape_text, tpn] : {std::pair{"8x8x1", 1}, std::pair{"4x4x2", 2}}) {
    SCOPED_TRACE(shape_text);
    const Shape shape = Shape::parse(shape_text);
    const auto r = optimize_mapping(m, Mapping::from_order(shape, tpn, "XYZT", 64));
    EXPECT_LT(r.after.hop_bytes, r.before.hop_bytes / 2);
    EXPECT_GE(r.after.hop_bytes, r.after.hop_bytes_lower_bound);
  }
}

TEST(OptimizeMapping, FixedSeedGivesTheSameMapping) {
  const auto m = stencil(4, 4, 2, 100, permutation(32, 4));
  const auto start = Mapping::from_order(Shape::parse("4x4x2"), 1, "XYZ", 32);
  const auto a = optimize_mapping(m, start);
  const auto b = optimize_mapping(m, start);
  EXPECT_EQ(a.mapping.to_text(), b.mapping.to_text());
}

std::string matrix_error(std::string_view text) {
  try {
    CommMatrix::from_text(text, "m.txt");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

TEST(CommMatrixText, ReadsPairsAndAddsRepeatedOnes) {
  const auto m =
      CommMatrix::from_text("# a comment\n\ntasks 3\n0 1 100\n1 2 7 # trailing\n0 1 5\n", "m.txt");
  EXPECT_EQ(m.tasks(), 3);
  EXPECT_EQ(m.flows(), (std::vector<Flow>{{0, 1, 105}, {1, 2, 7}}));
  EXPECT_EQ(m.total_bytes(), 112u);
  EXPECT_EQ(CommMatrix::from_text(m.to_text(), "again").flows(), m.flows());
}

TEST(CommMatrixText, MessageCountsAreOptionalAndAddUp) {
  // a pair's count is known only when every line of it gives one
  const auto m =
      CommMatrix::from_text("tasks 3\n0 1 100 2\n0 1 50 1\n1 2 7\n2 0 10 1\n2 0 5\n", "m.txt");
  EXPECT_EQ(m.flows(), (std::vector<Flow>{{0, 1, 150, 3}, {1, 2, 7, 0}, {2, 0, 15, 0}}));
  EXPECT_EQ(CommMatrix::from_text(m.to_text(), "again").flows(), m.flows());
}

TEST(CommMatrixText, MalformedFilesNameTheFileAndLine) {
  EXPECT_THAT(matrix_error(""), HasSubstr("m.txt: no \"tasks N\" line"));
  EXPECT_THAT(matrix_error("0 1 5\n"), HasSubstr("m.txt:1: the first line must be \"tasks N\""));
  EXPECT_THAT(matrix_error("tasks 0\n"), HasSubstr("m.txt:1: the task count must be at least 1"));
  EXPECT_THAT(matrix_error("tasks x\n"), HasSubstr("m.txt:1: task count \"x\" is not"));
  EXPECT_THAT(matrix_error("tasks 99999999\n"), HasSubstr("m.txt:1: task count 99999999 is out"));
  EXPECT_THAT(matrix_error("tasks 4\n0 1\n"), HasSubstr("m.txt:2: 2 fields"));
  EXPECT_THAT(matrix_error("tasks 4\n\n0 1 2 3 4\n"), HasSubstr("m.txt:3: 5 fields"));
  EXPECT_THAT(matrix_error("tasks 4\n0 1 2 0\n"),
              HasSubstr("m.txt:2: a pair with bytes needs at least one message"));
  EXPECT_THAT(matrix_error("tasks 4\n0 1 2 -3\n"), HasSubstr("m.txt:2: message count \"-3\""));
  EXPECT_THAT(matrix_error("tasks 4\n0 4 1\n"),
              HasSubstr("m.txt:2: destination rank 4 is out of range 0..3"));
  EXPECT_THAT(matrix_error("tasks 4\n-1 2 1\n"), HasSubstr("m.txt:2: source rank \"-1\" is not"));
  EXPECT_THAT(matrix_error("tasks 4\n0 1 1e6\n"), HasSubstr("m.txt:2: byte count \"1e6\""));
  EXPECT_THAT(matrix_error("tasks 4\n0 1 99999999999999999999\n"),
              HasSubstr("m.txt:2: byte count 99999999999999999999 is out of range"));
  EXPECT_THAT(matrix_error("tasks 2\n0 1 18446744073709551615\n1 0 1\n"),
              HasSubstr("m.txt:3: the matrix's bytes add up to more than 2^64"));
  EXPECT_THAT(matrix_error("tasks 2\n0 1 \x1b[31m\n"), HasSubstr("\\x1b"));
}

}  // namespace
}  // namespace bgl::torus_emu
