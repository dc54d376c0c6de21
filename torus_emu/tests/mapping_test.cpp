#include "bgl/torus_emu/mapping.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include <unistd.h>

#include "bgl/torus_emu/error.hpp"

namespace bgl::torus_emu {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::StartsWith;

template <class F>
std::string config_error_of(F&& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "<no ConfigError thrown>";
}

// Every rank has a distinct in-shape location and rank_at() inverts location().
void expect_consistent(const Mapping& m) {
  std::set<std::pair<NodeId, int>> seen;
  for (Rank r = 0; r < static_cast<Rank>(m.size()); ++r) {
    const TaskLocation loc = m.location(r);
    ASSERT_LT(loc.node, static_cast<NodeId>(m.shape().node_count()));
    ASSERT_GE(loc.t, 0);
    ASSERT_LT(loc.t, m.tasks_per_node());
    ASSERT_TRUE(seen.insert({loc.node, loc.t}).second) << "rank " << r;
    ASSERT_EQ(m.rank_at(loc.node, loc.t), r);
    ASSERT_EQ(m.coord(r), m.shape().coord(loc.node));
  }
}

// --- from_order -------------------------------------------------------------------------------

TEST(MappingOrder, XyztNumbersXFastestThenYZT) {
  const Shape s = Shape::parse("4x3x2");
  const Mapping m = Mapping::from_order(s, 2, "XYZT", 48);
  ASSERT_EQ(m.size(), 48);
  EXPECT_EQ(m.tasks_per_node(), 2);
  expect_consistent(m);
  for (int t = 0; t < 2; ++t) {
    for (int z = 0; z < 2; ++z) {
      for (int y = 0; y < 3; ++y) {
        for (int x = 0; x < 4; ++x) {
          const auto rank = static_cast<Rank>(x + 4 * (y + 3 * (z + 2 * t)));
          EXPECT_EQ(m.coord(rank), (Coord{x, y, z}));
          EXPECT_EQ(m.location(rank).t, t);
        }
      }
    }
  }
}

TEST(MappingOrder, TxyzPutsTheTwoTasksOfANodeNextToEachOther) {
  const Shape s = Shape::parse("4x3x2");
  const Mapping m = Mapping::from_order(s, 2, "TXYZ", 48);
  expect_consistent(m);
  for (int z = 0; z < 2; ++z) {
    for (int y = 0; y < 3; ++y) {
      for (int x = 0; x < 4; ++x) {
        for (int t = 0; t < 2; ++t) {
          const auto rank = static_cast<Rank>(t + 2 * (x + 4 * (y + 3 * z)));
          EXPECT_EQ(m.coord(rank), (Coord{x, y, z}));
          EXPECT_EQ(m.location(rank).t, t);
        }
      }
    }
  }
}

TEST(MappingOrder, ZyxtNumbersZFastest) {
  const Shape s = Shape::parse("4x3x2");
  const Mapping m = Mapping::from_order(s, 2, "ZYXT", 48);
  expect_consistent(m);
  for (int t = 0; t < 2; ++t) {
    for (int x = 0; x < 4; ++x) {
      for (int y = 0; y < 3; ++y) {
        for (int z = 0; z < 2; ++z) {
          const auto rank = static_cast<Rank>(z + 2 * (y + 3 * (x + 4 * t)));
          EXPECT_EQ(m.coord(rank), (Coord{x, y, z}));
          EXPECT_EQ(m.location(rank).t, t);
        }
      }
    }
  }
}

TEST(MappingOrder, ThreeLetterOrdersInCoprocessorMode) {
  const Shape s = Shape::parse("4x3x2");
  const Mapping xyz = Mapping::from_order(s, 1, "XYZ", 24);
  const Mapping xyzt = Mapping::from_order(s, 1, "XYZT", 24);
  const Mapping txyz = Mapping::from_order(s, 1, "TXYZ", 24);
  EXPECT_EQ(xyz.locations(), xyzt.locations());
  EXPECT_EQ(xyz.locations(), txyz.locations());
  for (Rank r = 0; r < 24; ++r) {
    EXPECT_EQ(xyz.location(r).node, r);  // XYZ order is node id order
    EXPECT_EQ(xyz.location(r).t, 0);
  }

  const Mapping zyx = Mapping::from_order(s, 1, "ZYX", 24);
  expect_consistent(zyx);
  EXPECT_EQ(zyx.coord(1), (Coord{0, 0, 1}));
  EXPECT_EQ(zyx.coord(2), (Coord{0, 1, 0}));
  EXPECT_EQ(zyx.coord(6), (Coord{1, 0, 0}));
  EXPECT_EQ(zyx.coord(23), (Coord{3, 2, 1}));
}

TEST(MappingOrder, LettersAreCaseInsensitive) {
  const Shape s = Shape::parse("2x2x2");
  EXPECT_EQ(Mapping::from_order(s, 2, "tzyx", 16).locations(),
            Mapping::from_order(s, 2, "TZYX", 16).locations());
  EXPECT_EQ(Mapping::from_order(s, 1, "yXz", 8).coord(1), (Coord{0, 1, 0}));
}

TEST(MappingOrder, PartialFillTakesTheFirstPositions) {
  const Shape s = Shape::parse("4x4x1");
  const Mapping m = Mapping::from_order(s, 2, "XYZT", 5);
  ASSERT_EQ(m.size(), 5);
  expect_consistent(m);
  for (Rank r = 0; r < 4; ++r) {
    EXPECT_EQ(m.coord(r), (Coord{static_cast<int>(r), 0, 0}));
    EXPECT_EQ(m.location(r).t, 0);
  }
  EXPECT_EQ(m.coord(4), (Coord{0, 1, 0}));
  EXPECT_FALSE(m.rank_at(s.node_id({1, 1, 0}), 0).has_value());
  EXPECT_FALSE(m.rank_at(0, 1).has_value());  // t = 1 slots are not reached with 5 tasks

  const Mapping t = Mapping::from_order(s, 2, "TXYZ", 3);
  EXPECT_EQ(t.location(0), (TaskLocation{0, 0}));
  EXPECT_EQ(t.location(1), (TaskLocation{0, 1}));
  EXPECT_EQ(t.location(2), (TaskLocation{1, 0}));
  EXPECT_EQ(t.rank_at(0, 1), 1u);
}

TEST(MappingOrder, RankAtRejectsOutOfRangeArguments) {
  const Mapping m = Mapping::from_order(Shape::parse("2x2x2"), 1, "XYZ", 8);
  EXPECT_FALSE(m.rank_at(8, 0).has_value());
  EXPECT_FALSE(m.rank_at(0, 1).has_value());
  EXPECT_FALSE(m.rank_at(0, -1).has_value());
  EXPECT_EQ(m.rank_at(7, 0), 7u);
}

TEST(MappingOrder, RejectsBadOrderStrings) {
  const Shape s = Shape::parse("4x4x2");
  EXPECT_EQ(config_error_of([&] { Mapping::from_order(s, 2, "XYZX", 4); }),
            "mapping order \"XYZX\": 'X' appears twice");
  EXPECT_EQ(config_error_of([&] { Mapping::from_order(s, 2, "XYQT", 4); }),
            "mapping order \"XYQT\": 'Q' is not one of X, Y, Z, T");
  EXPECT_EQ(config_error_of([&] { Mapping::from_order(s, 2, "XYT", 4); }),
            "mapping order \"XYT\": Z is missing; give a permutation of XYZT");
  EXPECT_THAT(config_error_of([&] { Mapping::from_order(s, 1, "", 4); }),
              HasSubstr("X is missing"));
  EXPECT_THAT(config_error_of([&] { Mapping::from_order(s, 1, "XYZTT", 4); }),
              HasSubstr("'T' appears twice"));
  EXPECT_THAT(config_error_of([&] { Mapping::from_order(s, 1, "xyyz", 4); }),
              HasSubstr("\"xyyz\": 'Y' appears twice"));
  // Virtual-node mode needs T somewhere in the order.
  EXPECT_THAT(config_error_of([&] { Mapping::from_order(s, 2, "ZYX", 4); }),
              AllOf(StartsWith("mapping order \"ZYX\": "), HasSubstr("T is missing")));
}

TEST(MappingOrder, RejectsBadTaskCounts) {
  const Shape s = Shape::parse("4x4x2");
  EXPECT_EQ(config_error_of([&] { Mapping::from_order(s, 2, "XYZT", 65); }),
            "65 tasks do not fit shape 4x4x2 with 2 task(s) per node (at most 64)");
  EXPECT_THAT(config_error_of([&] { Mapping::from_order(s, 1, "XYZT", 33); }),
              HasSubstr("33 tasks do not fit"));
  EXPECT_THAT(config_error_of([&] { Mapping::from_order(s, 1, "XYZT", 0); }),
              HasSubstr("at least 1, got 0"));
  EXPECT_THAT(config_error_of([&] { Mapping::from_order(s, 3, "XYZT", 8); }),
              HasSubstr("must be 1 (coprocessor/heater mode) or 2 (virtual-node mode), got 3"));
  EXPECT_THAT(config_error_of([&] { Mapping::from_order(s, 0, "XYZT", 8); }), HasSubstr("got 0"));
  EXPECT_EQ(Mapping::from_order(s, 1, "XYZ", 32).size(), 32);
  EXPECT_EQ(Mapping::from_order(s, 2, "XYZT", 1).size(), 1);
}

// --- from_text --------------------------------------------------------------------------------

TEST(MappingText, ParsesLinesCommentsAndBlankLines) {
  const Shape s = Shape::parse("4x4x2");
  const std::string text =
      "# a hand-written map\n"
      "\n"
      "1 0 0 1   # rank 0\n"
      "   \t\n"
      "\t0 3 1 0\r\n"
      "#2 2 2 2 not a task\n"
      "3 3 1 1";  // no trailing newline
  const Mapping m = Mapping::from_text(s, 2, text, "map.txt", 3);
  ASSERT_EQ(m.size(), 3);
  EXPECT_EQ(m.coord(0), (Coord{1, 0, 0}));
  EXPECT_EQ(m.location(0).t, 1);
  EXPECT_EQ(m.coord(1), (Coord{0, 3, 1}));
  EXPECT_EQ(m.location(1).t, 0);
  EXPECT_EQ(m.coord(2), (Coord{3, 3, 1}));
  EXPECT_EQ(m.rank_at(s.node_id({0, 3, 1}), 0), 1u);
  EXPECT_FALSE(m.rank_at(s.node_id({1, 0, 0}), 0).has_value());
  expect_consistent(m);
}

TEST(MappingText, TIsOptionalButMustBeZeroInCoprocessorMode) {
  const Shape s = Shape::parse("2x2x1");
  const Mapping m = Mapping::from_text(s, 1, "1 1 0\n0 1 0 0\n", "m", 2);
  EXPECT_EQ(m.coord(0), (Coord{1, 1, 0}));
  EXPECT_EQ(m.coord(1), (Coord{0, 1, 0}));
  EXPECT_EQ(config_error_of([&] { Mapping::from_text(s, 1, "1 1 0\n0 1 0 1\n", "m", 2); }),
            "m:2: t = 1 is out of range: t must be 0 in coprocessor/heater mode (1 task per node)");
}

struct BadText {
  const char* text;
  int tasks_per_node;
  const char* expected_prefix;
  const char* expected_detail;
};

class MappingTextError : public ::testing::TestWithParam<BadText> {};

TEST_P(MappingTextError, NamesFileLineAndProblem) {
  const BadText& bad = GetParam();
  const Shape s = Shape::parse("4x4x2");
  const std::string what =
      config_error_of([&] { Mapping::from_text(s, bad.tasks_per_node, bad.text, "job.map", 3); });
  EXPECT_THAT(what, AllOf(StartsWith(bad.expected_prefix), HasSubstr(bad.expected_detail)));
}

INSTANTIATE_TEST_SUITE_P(
    AllProblems, MappingTextError,
    ::testing::Values(
        BadText{"0 0 0\n1.5 0 0\n2 0 0\n", 1,
                "job.map:2: ", "malformed number \"1.5\" for x: expected a decimal integer"},
        BadText{"0 0x1 0\n", 1, "job.map:1: ", "\"0x1\" for y"},
        BadText{"\n\n0 0 +-1\n", 1, "job.map:3: ", "\"+-1\" for z"},
        BadText{"0 0 0 1a\n", 2, "job.map:1: ", "\"1a\" for t"},
        BadText{"0 0 0\n1 0 +1\n", 1, "job.map:2: ", "\"+1\" for z"},
        BadText{"0 0 0\n# c\n1 0 abc\n", 1, "job.map:3: ", "malformed number \"abc\" for z"},
        BadText{"0 0 99999999999\n", 1, "job.map:1: ", "z = 99999999999 is out of range 0..1"},
        BadText{"0 0 0\n1 0\n", 1, "job.map:2: ", "expected 'x y z' or 'x y z t', got 2 field(s)"},
        BadText{"0 0 0\n1 # 0 0\n", 1, "job.map:2: ", "expected 'x y z' or 'x y z t'"},
        BadText{"0 0 0 0 0\n", 2,
                "job.map:1: ", "too many fields (5); expected 'x y z' or 'x y z t'"},
        BadText{"4 0 0\n", 1, "job.map:1: ", "x = 4 is out of range 0..3 of shape 4x4x2"},
        BadText{"0 0 0\n0 -1 0\n", 1, "job.map:2: ", "y = -1 is out of range 0..3 of shape 4x4x2"},
        BadText{"0 0 2\n", 1, "job.map:1: ", "z = 2 is out of range 0..1 of shape 4x4x2"},
        BadText{"0 0 0 1\n", 1,
                "job.map:1: ", "t = 1 is out of range: t must be 0 in coprocessor/heater mode"},
        BadText{"0 0 0 2\n", 2,
                "job.map:1: ", "t = 2 is out of range: t must be 0 or 1 in virtual-node mode"},
        BadText{"0 0 0 -1\n", 2, "job.map:1: ", "t = -1 is out of range"},
        BadText{"0 0 0 0\n1 1 1\n", 2,
                "job.map:2: ", "missing t: virtual-node mode (2 tasks per node) needs 'x y z t'"},
        BadText{"# header\n1 2 1\n0 0 0\n\n1 2 1 # again\n", 1,
                "job.map:5: ", "location (1,2,1) t=0 is already used by rank 0 (line 2)"},
        BadText{"0 0 0 0\n0 0 0 1\n3 3 1 1\n0 0 0 1\n", 2,
                "job.map:4: ", "more task lines than the 3 tasks of the job"},
        BadText{"0 0 0\n1 0 0\n2 0 0\n\n# done\nrubbish\n", 1,
                "job.map:6: ", "more task lines than the 3 tasks"}));

TEST(MappingText, TooFewLinesNamesBothCounts) {
  const Shape s = Shape::parse("4x4x2");
  EXPECT_EQ(config_error_of([&] { Mapping::from_text(s, 1, "0 0 0\n1 0 0\n", "job.map", 3); }),
            "job.map: 2 task lines, expected 3");
  std::string seven;
  for (int x = 0; x < 4; ++x)
    seven += std::to_string(x) + " 0 0\n";
  for (int x = 0; x < 3; ++x)
    seven += std::to_string(x) + " 1 0\n";
  EXPECT_EQ(config_error_of([&] { Mapping::from_text(s, 1, seven, "m.txt", 8); }),
            "m.txt: 7 task lines, expected 8");
  EXPECT_EQ(config_error_of([&] { Mapping::from_text(s, 1, "# nothing\n\n", "e", 1); }),
            "e: 0 task lines, expected 1");
}

TEST(MappingText, RejectsBadModeAndTaskCount) {
  const Shape s = Shape::parse("2x1x1");
  EXPECT_THAT(config_error_of([&] { Mapping::from_text(s, 3, "0 0 0\n", "m", 1); }),
              HasSubstr("got 3"));
  EXPECT_THAT(config_error_of([&] { Mapping::from_text(s, 1, "0 0 0\n", "m", 3); }),
              HasSubstr("3 tasks do not fit"));
}

// --- files ------------------------------------------------------------------------------------

class MappingFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("bgl_mapping_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path write(const std::string& name, const std::string& text) {
    const auto path = dir_ / name;
    std::ofstream(path) << text;
    return path;
  }
  std::filesystem::path dir_;
};

TEST_F(MappingFile, ReadsFileAndUsesThePathInErrors) {
  const Shape s = Shape::parse("2x2x1");
  const auto good = write("good.map", "# two tasks\n1 1 0 1\n0 0 0 0\n");
  const Mapping m = Mapping::from_file(s, 2, good, 2);
  EXPECT_EQ(m.coord(0), (Coord{1, 1, 0}));
  EXPECT_EQ(m.location(0).t, 1);

  const auto bad = write("bad.map", "0 0 0 0\n0 0 0 0\n");
  EXPECT_THAT(config_error_of([&] { Mapping::from_file(s, 2, bad, 2); }),
              StartsWith(bad.string() + ":2: location (0,0,0) t=0 is already used by rank 0"));
}

TEST_F(MappingFile, ReportsUnreadableFiles) {
  const Shape s = Shape::parse("2x2x1");
  const auto missing = dir_ / "missing.map";
  EXPECT_EQ(config_error_of([&] { Mapping::from_file(s, 1, missing, 1); }),
            "cannot read mapping file " + missing.string() + ": No such file or directory");
  EXPECT_THAT(config_error_of([&] { Mapping::from_file(s, 1, dir_, 1); }),
              AllOf(StartsWith("cannot read mapping file " + dir_.string() + ": "),
                    HasSubstr("directory")));
}

// --- from_locations and to_text ---------------------------------------------------------------

TEST(MappingLocations, AcceptsAValidTable) {
  const Shape s = Shape::parse("2x2x2");
  const Mapping m = Mapping::from_locations(s, 2, {{7, 1}, {0, 0}, {7, 0}});
  EXPECT_EQ(m.size(), 3);
  EXPECT_EQ(m.rank_at(7, 1), 0u);
  EXPECT_EQ(m.rank_at(7, 0), 2u);
  expect_consistent(m);
}

TEST(MappingLocations, ValidatesRangeAndDistinctness) {
  const Shape s = Shape::parse("2x2x2");
  EXPECT_EQ(config_error_of([&] {
              Mapping::from_locations(s, 1, {{0, 0}, {8, 0}});
            }),
            "mapping: rank 1 is on node 8, outside shape 2x2x2 (8 nodes)");
  EXPECT_THAT(config_error_of([&] {
                Mapping::from_locations(s, 1, {{0, 1}});
              }),
              HasSubstr("rank 0 has t = 1; t must be 0"));
  EXPECT_THAT(config_error_of([&] {
                Mapping::from_locations(s, 2, {{0, 2}});
              }),
              HasSubstr("t must be 0 or 1"));
  EXPECT_EQ(config_error_of([&] {
              Mapping::from_locations(s, 2, {{3, 1}, {1, 0}, {3, 1}});
            }),
            "mapping: rank 2 has the same location (1,1,0) t=1 as rank 0");
  EXPECT_THAT(config_error_of([&] { Mapping::from_locations(s, 1, {}); }), HasSubstr("no tasks"));
  EXPECT_THAT(config_error_of([&] {
                Mapping::from_locations(s, 0, {{0, 0}});
              }),
              HasSubstr("tasks per node"));
}

TEST(MappingText, ToTextRoundTrips) {
  const Shape s = Shape::parse("4x3x2", "y");
  for (const Mapping& m :
       {Mapping::from_order(s, 2, "XYZT", 48), Mapping::from_order(s, 2, "TZXY", 17),
        Mapping::from_order(s, 1, "ZYX", 24), Mapping::from_order(s, 1, "YXZ", 5),
        Mapping::from_locations(s, 2, {{23, 1}, {0, 0}, {5, 1}})}) {
    const std::string text = m.to_text();
    EXPECT_THAT(text, StartsWith("#"));
    const Mapping back = Mapping::from_text(s, m.tasks_per_node(), text, "round", m.size());
    EXPECT_EQ(back.locations(), m.locations());
    EXPECT_EQ(back.to_text(), text);
  }
}

TEST(MappingText, ToTextWritesTOnlyInVirtualNodeMode) {
  const Shape s = Shape::parse("2x1x1");
  const std::string co = Mapping::from_order(s, 1, "XYZ", 2).to_text();
  EXPECT_THAT(co, HasSubstr("\n0 0 0\n1 0 0\n"));
  const std::string vn = Mapping::from_order(s, 2, "TXYZ", 3).to_text();
  EXPECT_THAT(vn, HasSubstr("\n0 0 0 0\n0 0 0 1\n1 0 0 0\n"));
}

}  // namespace
}  // namespace bgl::torus_emu
