// Virtual time end to end, through the launcher and real processes: the predicted BG/L time of a
// job does not depend on how busy the host is or which core runs it, a mapping that scatters
// neighbours over the torus is predicted slower, and nothing changes without the flag.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "process_runner.hpp"

namespace bgl::test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

const std::string kBglrun = BGLRUN_PATH;
const std::string kHalo = HALO_EXCHANGE_PATH;

std::string temp_path(const std::string& what) {
  return ::testing::TempDir() + "vt_" + what + "_" + std::to_string(::getpid());
}

struct Prediction {
  double cycles = 0;
  std::string output;
};

// Runs the halo exchange with virtual time and returns the predicted time from the statistics.
Prediction predict(std::vector<std::string> extra, std::vector<std::string> prefix = {}) {
  const std::string stats = temp_path("stats.json");
  std::vector<std::string> args{"-np",     "32", "--shape", "4x4x2", "--virtual-time",
                                "--stats", stats};
  args.insert(args.end(), extra.begin(), extra.end());
  args.insert(args.end(), {kHalo, "--bytes", "2048", "--iterations", "10"});
  ProcessResult r;
  if (prefix.empty()) {
    r = run_bglrun(kBglrun, args, 180);
  } else {
    prefix.push_back(kBglrun);
    prefix.insert(prefix.end(), args.begin(), args.end());
    r = run_process(prefix, 200);
  }
  EXPECT_EQ(r.exit_code, 0) << r.output;
  std::ifstream in(stats);
  const auto j = nlohmann::json::parse(in, nullptr, false);
  std::remove(stats.c_str());
  if (j.is_discarded() || !j.contains("virtual_time")) {
    ADD_FAILURE() << "no virtual_time section in the statistics:\n" << r.output;
    return {0, r.output};
  }
  return {j["virtual_time"]["predicted_cycles"].get<double>(), r.output};
}

TEST(VirtualTime, PredictionIgnoresHostLoadAndCore) {
  const Prediction quiet = predict({});
  ASSERT_GT(quiet.cycles, 0);
  EXPECT_THAT(quiet.output, HasSubstr("predicted BG/L time"));
  EXPECT_THAT(quiet.output, HasSubstr("model parameters: built-in defaults"));
  // Started on the other core (bglrun confines a virtual-time job to one core of those it may use).
  const Prediction other_core = predict({}, {"taskset", "-c", "1"});
  // With two busy loops competing for both cores.
  const int hog1 =
      spawn_process({"timeout", "120", "sh", "-c", "while :; do :; done"}, "/dev/null");
  const int hog2 =
      spawn_process({"timeout", "120", "sh", "-c", "while :; do :; done"}, "/dev/null");
  const Prediction loaded = predict({});
  wait_process(hog1, 0);
  wait_process(hog2, 0);
  EXPECT_NEAR(other_core.cycles / quiet.cycles, 1.0, 0.01);
  EXPECT_NEAR(loaded.cycles / quiet.cycles, 1.0, 0.01);
}

TEST(VirtualTime, ScatteredMappingIsPredictedSlower) {
  // The same ranks on a random permutation of the nodes: logical neighbours are now several hops
  // apart and share links.
  std::vector<int> nodes(32);
  std::iota(nodes.begin(), nodes.end(), 0);
  std::shuffle(nodes.begin(), nodes.end(), std::mt19937(7));
  const std::string map = temp_path("scattered.map");
  {
    std::ofstream out(map);
    for (const int n : nodes)
      out << n % 4 << ' ' << n / 4 % 4 << ' ' << n / 16 << '\n';
  }
  const Prediction natural = predict({});
  const Prediction scattered = predict({"--mapfile", map});
  std::remove(map.c_str());
  ASSERT_GT(natural.cycles, 0);
  EXPECT_GT(scattered.cycles, 1.2 * natural.cycles)
      << "natural " << natural.cycles << " cycles, scattered " << scattered.cycles;
}

TEST(VirtualTime, OffUnlessAsked) {
  const std::string stats = temp_path("off.json");
  const auto r = run_bglrun(
      kBglrun, {"-np", "8", "--shape", "2x2x2", "--stats", stats, kHalo, "--iterations", "2"}, 60);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, Not(HasSubstr("predicted BG/L time")));
  EXPECT_THAT(r.output, HasSubstr("(host)"));
  std::ifstream in(stats);
  const auto j = nlohmann::json::parse(in, nullptr, false);
  std::remove(stats.c_str());
  ASSERT_FALSE(j.is_discarded());
  EXPECT_FALSE(j.contains("virtual_time"));
}

TEST(VirtualTime, ParametersFileIsNamedAndErrorsAreClear) {
  const std::string params = temp_path("params.txt");
  {
    std::ofstream out(params);
    out << "# slower links\nlink_bytes_per_cycle = 0.125\n";
  }
  const auto r = run_bglrun(kBglrun,
                            {"-np", "8", "--shape", "2x2x2", "--virtual-time", "--vt-params",
                             params, kHalo, "--iterations", "2"},
                            60);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("model parameters: file " + params));
  {
    std::ofstream out(params);
    out << "hop_cycles = 63\nno_such_thing = 1\n";
  }
  const auto bad = run_bglrun(
      kBglrun, {"-np", "8", "--shape", "2x2x2", "--virtual-time", "--vt-params", params, kHalo},
      60);
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_THAT(bad.output, HasSubstr(":2: unknown parameter 'no_such_thing'"));
  std::remove(params.c_str());
  const auto list = run_process({kBglrun, "--vt-params-list"}, 20);
  EXPECT_EQ(list.exit_code, 0);
  EXPECT_THAT(list.output, HasSubstr("hop_cycles"));
  EXPECT_THAT(list.output, HasSubstr("measured"));
}

}  // namespace
}  // namespace bgl::test
