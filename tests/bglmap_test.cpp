// bglmap --optimize and --rate through the real tools: the communication matrix bglrun --stats
// records for a message-layer program, rated and optimised; malformed inputs get clear errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "process_runner.hpp"

namespace {

using bgl::test::ProcessResult;
using bgl::test::read_file;
using ::testing::HasSubstr;

const std::string kBglrun = BGLRUN_PATH;
const std::string kBglmap = BGLMAP_PATH;
const std::string kScenarios = ML_SCENARIOS_PATH;

class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "bglmap_test.XXXXXX").string();
    path_ = mkdtemp(pattern.data());
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string file(const std::string& name, const std::string& text = {}) const {
    const auto p = (path_ / name).string();
    if (!text.empty()) std::ofstream(p) << text;
    return p;
  }

 private:
  std::filesystem::path path_;
};

ProcessResult bglmap(std::vector<std::string> args) {
  args.insert(args.begin(), kBglmap);
  return bgl::test::run_process(args, 60);
}

// A periodic 7-point stencil on a 4x4x4 grid whose ranks are shuffled.
std::string permuted_stencil() {
  std::vector<int> rank_of(64);
  for (int i = 0; i < 64; ++i)
    rank_of[static_cast<std::size_t>(i)] = i;
  std::shuffle(rank_of.begin(), rank_of.end(), std::mt19937(7));
  std::string text = "# shuffled stencil\ntasks 64\n";
  const auto id = [&](int x, int y, int z) {
    return rank_of[static_cast<std::size_t>((x + 4) % 4 + 4 * ((y + 4) % 4 + 4 * ((z + 4) % 4)))];
  };
  for (int z = 0; z < 4; ++z)
    for (int y = 0; y < 4; ++y)
      for (int x = 0; x < 4; ++x)
        for (const auto& [dx, dy, dz] :
             {std::array{1, 0, 0}, std::array{-1, 0, 0}, std::array{0, 1, 0}, std::array{0, -1, 0},
              std::array{0, 0, 1}, std::array{0, 0, -1}})
          text += std::to_string(id(x, y, z)) + " " + std::to_string(id(x + dx, y + dy, z + dz)) +
                  " 1000\n";
  return text;
}

// The matrix of a real run: ml_scenarios stats sends 26 messages, 48,000 bytes, from each rank to
// the next. Mapped XYZ on 2x2x2 the ring's steps take 1,2,1,3,1,2,1,3 hops: 14 x 48,000
// hop-bytes; the optimiser finds a ring of single hops (8 x 48,000, the lower bound).
TEST(BglmapMatrix, RatesAndOptimisesTheMatrixBglrunRecorded) {
  TempDir dir;
  const auto stats = dir.file("stats.json");
  const auto run = bgl::test::run_bglrun(
      kBglrun, {"-np", "8", "--shape", "2x2x2", "--stats", stats, kScenarios, "stats"}, 60);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const auto rated = bglmap({"--matrix", stats, "--shape", "2x2x2", "--rate",
                             dir.file("xyz.map",
                                      "0 0 0\n1 0 0\n0 1 0\n1 1 0\n0 0 1\n1 0 1\n"
                                      "0 1 1\n1 1 1\n")});
  ASSERT_EQ(rated.exit_code, 0) << rated.output;
  EXPECT_THAT(rated.output, HasSubstr("8 pairs, 384,000 bytes"));
  EXPECT_THAT(rated.output, ::testing::ContainsRegex("672,000 +1.750 +\\+75.0% .* file .*xyz.map"));
  EXPECT_THAT(rated.output, ::testing::ContainsRegex("384,000 +1.000 .* lower bound"));

  const auto out = dir.file("opt.map");
  const auto opt = bglmap({"--matrix", stats, "--shape", "2x2x2", "--optimize", "-o", out});
  ASSERT_EQ(opt.exit_code, 0) << opt.output;
  EXPECT_THAT(opt.output, ::testing::ContainsRegex("672,000 .* start: order XYZT"));
  EXPECT_THAT(opt.output, ::testing::ContainsRegex("384,000 +1.000 +\\+0.0% .* optimised"));
  // The mapping file is one bglrun and bglmap accept, and rates as reported.
  const auto check = bglmap({"-np", "8", "--shape", "2x2x2", "--mapfile", out, "--check"});
  EXPECT_EQ(check.exit_code, 0) << check.output;
  const auto again = bglmap({"--matrix", stats, "--shape", "2x2x2", "--rate", out});
  EXPECT_THAT(again.output, ::testing::ContainsRegex("384,000 .* file .*opt.map"));
  const auto rerun = bgl::test::run_bglrun(
      kBglrun, {"-np", "8", "--shape", "2x2x2", "--mapfile", out, kScenarios, "stats"}, 60);
  EXPECT_EQ(rerun.exit_code, 0) << rerun.output;
}

TEST(BglmapMatrix, RecoversAShuffledStencilFromAPlainMatrixFile) {
  TempDir dir;
  const auto matrix = dir.file("stencil.txt", permuted_stencil());
  const auto out = dir.file("opt.map");
  const auto r = bglmap(
      {"--matrix", matrix, "--shape", "4x4x4", "--optimize", "-o", out, "--search-seconds", "20"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // 384 pairs of 1,000 bytes, all neighbours: 384,000 hop-bytes, 1,000 bytes per busiest link.
  EXPECT_THAT(r.output, ::testing::ContainsRegex("384,000 +1.000 +\\+0.0% +1,000 .* optimised"));
  EXPECT_EQ(bglmap({"-np", "64", "--shape", "4x4x4", "--mapfile", out, "--check"}).exit_code, 0);
  // Another shape: 64 tasks on a 4x4x2 partition in virtual-node mode.
  const auto vn = bglmap({"--matrix", matrix, "--shape", "4x4x2", "--mode", "vn", "--optimize"});
  ASSERT_EQ(vn.exit_code, 0) << vn.output;
  EXPECT_THAT(vn.output, HasSubstr("64 tasks on 4x4x2"));
}

// The predicted time: one 2,048-byte message over one hop is 10,607 cycles at the built-in
// parameters (virtual_time's MatrixPrediction tests derive it), 15.2 us; a parameter file with
// twice the link bandwidth shortens it; the optimised mapping of the recorded ring is predicted
// faster than its start.
TEST(BglmapMatrix, PredictsTheTimeFromTheTimingModel) {
  TempDir dir;
  const auto one = dir.file("one.txt", "tasks 2\n0 1 2048 1\n");
  const auto map = dir.file("two.map", "0 0 0\n1 0 0\n");
  const auto r = bglmap({"--matrix", one, "--shape", "2x1x1", "--rate", map});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, ::testing::ContainsRegex(" 15\\.2  file .*two.map"));
  EXPECT_THAT(r.output, HasSubstr("predicted 15.2 us = max(busiest link 13.5 us, busiest task 5.0 "
                                  "us: rank 1) + latency 1.6 us (1 rounds); limited by the links"));
  EXPECT_THAT(r.output, HasSubstr("from the timing model's built-in parameters"));
  const auto params = dir.file("fast.params", "# twice BG/L's link\nlink_bytes_per_cycle = 0.5\n");
  const auto fast =
      bglmap({"--matrix", one, "--shape", "2x1x1", "--rate", map, "--vt-params", params});
  ASSERT_EQ(fast.exit_code, 0) << fast.output;
  EXPECT_THAT(fast.output, HasSubstr("predicted 7.6 us"));
  EXPECT_THAT(fast.output, HasSubstr("timing model's parameters " + params));
  // BGL_VT_PARAMS is read as bglrun reads it (which wants BGL_VIRTUAL_TIME with it)
  const auto env =
      bgl::test::run_process({kBglmap, "--matrix", one, "--shape", "2x1x1", "--rate", map}, 60,
                             {"BGL_VIRTUAL_TIME=1", "BGL_VT_PARAMS=" + params});
  EXPECT_THAT(env.output, HasSubstr("predicted 7.6 us"));

  const auto stats = dir.file("stats.json");
  const auto run = bgl::test::run_bglrun(
      kBglrun, {"-np", "8", "--shape", "2x2x2", "--stats", stats, kScenarios, "stats"}, 60);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const auto opt =
      bglmap({"--matrix", stats, "--shape", "2x2x2", "--optimize", "-o", dir.file("opt.map")});
  ASSERT_EQ(opt.exit_code, 0) << opt.output;
  double start = 0, best = 0;
  ASSERT_EQ(
      std::sscanf(opt.output.c_str() + opt.output.find("  predicted "), "  predicted %lf", &start),
      1)
      << opt.output;
  // the optimised mapping's line comes second
  ASSERT_EQ(
      std::sscanf(opt.output.c_str() + opt.output.rfind("  predicted "), "  predicted %lf", &best),
      1);
  EXPECT_GT(start, 0) << opt.output;
  EXPECT_LT(best, start) << opt.output;
  EXPECT_THAT(read_file(dir.file("opt.map")),
              ::testing::ContainsRegex("predicted [0-9.]+ us \\(start"));
}

struct BadCase {
  std::string text;
  std::vector<std::string> args;  // after --matrix FILE
  std::string error;
};

TEST(BglmapMatrix, MalformedInputsGetClearErrors) {
  TempDir dir;
  const std::vector<BadCase> cases = {
      {"tasks 4\n0 1 100\n0 1\n", {"--optimize"}, "m.txt:3: 2 fields"},
      {"tasks 4\n0 1 100 5 6\n", {"--optimize"}, "m.txt:2: 5 fields"},
      {"tasks 4\n0 1 100 0\n",
       {"--optimize"},
       "m.txt:2: a pair with bytes needs at least one message"},
      {"tasks 4\n0 1 100 x\n", {"--optimize"}, "m.txt:2: message count \"x\""},
      {"tasks 4\n0 9 100\n", {"--optimize"}, "m.txt:2: destination rank 9 is out of range 0..3"},
      {"0 1 100\n", {"--optimize"}, "m.txt:1: the first line must be \"tasks N\""},
      {"tasks 4\n0 1 lots\n", {"--optimize"}, "m.txt:2: byte count \"lots\""},
      {"tasks 4\n0 1 100\n", {"-np", "8", "--optimize"}, "has 4 tasks, but -np is 8"},
      {"tasks 64\n0 1 100\n",
       {"--shape", "2x2x2", "--optimize"},
       "64 tasks do not fit shape 2x2x2"},
      {"tasks 4\n0 1 100\n", {"--shape", "2x2x1", "--mode", "sideways", "--optimize"}, "sideways"},
      {"tasks 4\n0 1 100\n", {"--shape", "2x2x1"}, "--matrix is read by --optimize or --rate"},
      {"{\"job\": {}, \"tasks\": []}", {"--optimize"}, "m.txt: no communication matrix (/traffic)"},
      {"{\"job\": {}, \"tasks\": [], \"traffic\": {\"recorded\": true, \"tasks\": 4, \"rows\": "
       "[{\"source\": 0, \"to\": [[1, \"x\", 1]]}]}}",
       {"--optimize"},
       "m.txt: /traffic/rows/0/to/0/1: expected a non-negative integer, found string"},
      {"{\"job\": {}, \"tasks\": [], \"traffic\": {\"recorded\": false, \"reason\": \"more than "
       "2048 tasks\"}}",
       {"--optimize"},
       "did not record its communication matrix (more than 2048 tasks)"},
      {"{\"job\": {}, \"tasks\": [", {"--optimize"}, "m.txt: truncated JSON"},
      // fields of the wrong type and numbers beyond a double (input_fuzz found them uncaught)
      {"{\"job\": {}, \"tasks\": [], \"traffic\": {\"recorded\": \"yes\"}}",
       {"--optimize"},
       "m.txt: /traffic/recorded: expected true or false, found string"},
      {"{\"job\": {}, \"tasks\": [], \"traffic\": {\"recorded\": false, \"reason\": 7}}",
       {"--optimize"},
       "m.txt: /traffic/reason: expected a string, found number"},
      {"{\"job\": {\"shape\": 5}, \"tasks\": [], \"traffic\": {\"recorded\": true, \"tasks\": 2, "
       "\"rows\": []}}",
       {"--optimize"},
       "m.txt: /job/shape: expected a string, found number"},
      {"{\"job\": {}, \"tasks\": [1e999]}",
       {"--optimize"},
       "m.txt: malformed JSON: number overflow"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.text);
    std::vector<std::string> args = {"--matrix", dir.file("m.txt", c.text)};
    args.insert(args.end(), c.args.begin(), c.args.end());
    const auto r = bglmap(args);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_THAT(r.output, HasSubstr(c.error));
  }
  const auto matrix = dir.file("ok.txt", "tasks 4\n0 1 100\n");
  const auto wrong_map = dir.file("three.map", "0 0 0\n1 0 0\n0 1 0\n");
  EXPECT_THAT(bglmap({"--matrix", matrix, "--shape", "2x2x1", "--rate", wrong_map}).output,
              HasSubstr("three.map: 3 task lines, expected 4"));
  EXPECT_THAT(bglmap({"--shape", "2x2x1", "-np", "4", "--optimize"}).output,
              HasSubstr("--optimize needs a communication matrix: --matrix FILE"));
  EXPECT_THAT(bglmap({"--matrix", matrix, "--optimize", "--rate", wrong_map}).output,
              HasSubstr("--optimize and --rate exclude each other"));
  EXPECT_THAT(bglmap({"--matrix", matrix, "--optimize", "--search-seconds", "0"}).output,
              HasSubstr("--search-seconds must be more than 0"));
  EXPECT_THAT(bglmap({"--matrix", dir.file("missing.txt"), "--optimize"}).output,
              HasSubstr("cannot read communication matrix file"));
  const auto bad_params = dir.file("bad.params", "link_bytes_per_cycle = 0.25\nwarp = 9\n");
  const auto bad = bglmap({"--matrix", matrix, "--optimize", "--vt-params", bad_params});
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_THAT(bad.output, HasSubstr("bad.params:2"));
  EXPECT_THAT(bglmap({"-np", "4", "--vt-params", bad_params}).output,
              HasSubstr("--vt-params is for the predicted time of --optimize or --rate"));
}

}  // namespace
