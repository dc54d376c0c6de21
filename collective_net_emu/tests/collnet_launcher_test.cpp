// The collective network end to end: real processes started by bglrun (collnet_scenarios), on 1 to
// 64 tasks, with random delays, oversubscribed, in virtual-node mode, with tree and ring variants.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <signal.h>

#include <chrono>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "process_runner.hpp"

namespace bgl::test {
namespace {

using ::testing::HasSubstr;

const std::string kBglrun = BGLRUN_PATH;
const std::string kScenarios = SCENARIOS_PATH;

// Time limits are for a Release build; sanitized builds scale them (see CMakeLists.txt).
constexpr double kTimeScale = BGL_TEST_TIME_SCALE;

// Runs the scenario under bglrun with a job time limit a bit below the test's own.
ProcessResult collnet(const std::string& np, const std::string& shape,
                      std::vector<std::string> scenario, double timeout = 60,
                      std::vector<std::string> extra = {},
                      const std::vector<std::string>& env = {}) {
  timeout *= kTimeScale;
  std::vector<std::string> args{
      kBglrun, "-np", np, "--shape", shape, "--timeout", std::to_string(timeout)};
  args.insert(args.end(), extra.begin(), extra.end());
  args.push_back(kScenarios);
  args.insert(args.end(), scenario.begin(), scenario.end());
  return run_process(args, timeout + 15, env);
}

std::string fp_hash(const std::string& output) {
  std::smatch m;
  if (std::regex_search(output, m, std::regex("hash ([0-9a-f]{16})"))) return m[1];
  return "none";
}

struct Job {
  std::string np, shape;
};

TEST(CollnetJob, AllOperationsAndWidthsMatchTheReference) {
  for (const Job& j : std::vector<Job>{
           {"1", "1x1x1"}, {"2", "2x1x1"}, {"3", "3x1x1"}, {"8", "2x2x2"}, {"27", "3x3x3"}}) {
    const auto r = collnet(j.np, j.shape, {"ops", "17", "300"});
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_THAT(r.output, HasSubstr("ops: 111 reductions on " + j.np + " tasks: ok"));
  }
}

TEST(CollnetJob, SixtyFourTasksOnTwoCoresFinishInBoundedTime) {
  const auto r = collnet("64", "4x4x4", {"ops", "23", "200"}, 90);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("ops: 111 reductions on 64 tasks: ok"));
  EXPECT_LT(r.seconds, 60 * kTimeScale);
}

TEST(CollnetJob, PacketsStreamThroughABoundedRingWithDelayedTasks) {
  for (const Job& j : std::vector<Job>{{"2", "2x1x1"}, {"8", "2x2x2"}, {"27", "3x3x3"}}) {
    const auto r = collnet(j.np, j.shape, {"stream", "5"}, 60, {}, {"BGL_TREE_RING=8"});
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_THAT(r.output, HasSubstr("stream: 600 packets, ring 8"));
  }
}

TEST(CollnetJob, FloatingPointSumsAreBitIdenticalAcrossTasksAndArrivalOrders) {
  for (const Job& j : std::vector<Job>{{"8", "2x2x2"}, {"27", "3x3x3"}}) {
    std::vector<std::string> hashes;
    for (const char* delays : {"1", "2", "3"}) {
      const auto r = collnet(j.np, j.shape, {"fp", "42", delays, "700"});
      ASSERT_EQ(r.exit_code, 0) << r.output;
      hashes.push_back(fp_hash(r.output));
    }
    EXPECT_NE(hashes[0], "none");
    EXPECT_EQ(hashes[0], hashes[1]);
    EXPECT_EQ(hashes[0], hashes[2]);
  }
  // Another tree gives the same bits too: combining is exact.
  const auto a = collnet("8", "2x2x2", {"fp", "42", "9", "700"}, 60, {}, {"BGL_TREE=kary:1"});
  const auto b = collnet("8", "2x2x2", {"fp", "42", "1", "700"});
  ASSERT_EQ(a.exit_code, 0) << a.output;
  EXPECT_EQ(fp_hash(a.output), fp_hash(b.output));
}

TEST(CollnetJob, NaNInfinityAndOverflowComeBackAsAStatus) {
  for (const Job& j : std::vector<Job>{{"1", "1x1x1"}, {"5", "5x1x1"}}) {
    const auto r = collnet(j.np, j.shape, {"special"});
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_THAT(r.output, HasSubstr("special: NaN, infinities and overflow reported"));
  }
}

TEST(CollnetJob, OneMebibyteReductionsAndBroadcasts) {
  const auto r = collnet("8", "2x2x2", {"long", "1"}, 90);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output,
              HasSubstr("long: 1 MiB allreduce (u64, double) and broadcasts on 8 tasks: ok"));
}

TEST(CollnetJob, BroadcastFromSeveralRoots) {
  for (const Job& j : std::vector<Job>{{"3", "3x1x1"}, {"8", "2x2x2"}, {"27", "3x3x3"}}) {
    const auto r = collnet(j.np, j.shape, {"bcast", "3"}, 60, {}, {"BGL_TREE_RING=4"});
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_THAT(r.output, HasSubstr("bcast: 24 broadcasts on " + j.np + " tasks: ok"));
  }
}

TEST(CollnetJob, GlobalInterruptBarrierManyTimes) {
  const auto r8 = collnet("8", "2x2x2", {"barrier", "3000", "50"});
  EXPECT_EQ(r8.exit_code, 0) << r8.output;
  EXPECT_THAT(r8.output, HasSubstr("barrier: 3000 barriers on 8 tasks"));
  const auto r64 = collnet("64", "4x4x4", {"barrier", "300", "50"}, 90);
  EXPECT_EQ(r64.exit_code, 0) << r64.output;
  EXPECT_THAT(r64.output, HasSubstr("barrier: 300 barriers on 64 tasks"));
}

TEST(CollnetJob, BarrierScalesToFiveHundredTwelveTasksOnTwoCores) {
  // Most of the time is bglrun starting 512 processes; the barriers themselves sleep, not spin.
  const auto r = collnet("512", "8x8x8", {"barrier", "100", "0"}, 150);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("barrier: 100 barriers on 512 tasks"));
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.output, m, std::regex("([0-9.]+) us each")));
  EXPECT_LT(std::stod(m[1]), 100'000.0);  // ~10 ms on an idle 2-core machine
}

TEST(CollnetJob, WiresPointToPointAndTwoClasses) {
  const auto w = collnet("6", "3x2x1", {"wires"});
  EXPECT_EQ(w.exit_code, 0) << w.output;
  EXPECT_THAT(w.output, HasSubstr("wires: OR and AND on 6 tasks: ok"));
  const auto p = collnet("8", "2x2x2", {"p2p", "200"}, 60, {}, {"BGL_TREE_INBOX=4"});
  EXPECT_EQ(p.exit_code, 0) << p.output;
  EXPECT_THAT(p.output, HasSubstr("p2p: 200 packets from each of 7 tasks to the root: ok"));
  const auto c = collnet("8", "2x2x2", {"classes"});
  EXPECT_EQ(c.exit_code, 0) << c.output;
  EXPECT_THAT(c.output, HasSubstr("classes: two route classes on 8 tasks: ok"));
}

TEST(CollnetJob, VirtualNodeModeCombinesBothTasksOfANode) {
  const auto ops = collnet("16", "2x2x2", {"ops", "31", "200"}, 60, {"--mode", "vn"});
  EXPECT_EQ(ops.exit_code, 0) << ops.output;
  EXPECT_THAT(ops.output, HasSubstr("ops: 111 reductions on 16 tasks: ok"));
  const auto fp =
      collnet("16", "2x2x2", {"fp", "42", "4", "300"}, 60, {"--mode", "vn", "--mapping", "TXYZ"});
  EXPECT_EQ(fp.exit_code, 0) << fp.output;
  const auto bc = collnet("15", "2x2x2", {"bcast", "8"}, 60, {"--mode", "vn"});
  EXPECT_EQ(bc.exit_code, 0) << bc.output;
}

TEST(CollnetJob, CoprocessorModeGivesTheSameBits) {
  const auto ops = collnet("8", "2x2x2", {"ops", "5", "100"}, 60, {"--mode", "coprocessor"});
  EXPECT_EQ(ops.exit_code, 0) << ops.output;
  EXPECT_THAT(ops.output, HasSubstr("ops: 111 reductions on 8 tasks: ok"));
  const auto co = collnet("8", "2x2x2", {"fp", "42", "5", "700"}, 60, {"--mode", "coprocessor"});
  const auto heater = collnet("8", "2x2x2", {"fp", "42", "6", "700"});
  ASSERT_EQ(co.exit_code, 0) << co.output;
  EXPECT_EQ(fp_hash(co.output), fp_hash(heater.output));
}

TEST(CollnetJob, TreeShapesAndPartialPartitions) {
  for (const char* tree : {"kary:1", "kary:8", "torus:1", "torus:2"}) {
    const auto r =
        collnet("12", "3x2x2", {"ops", "3", "50"}, 60, {}, {std::string("BGL_TREE=") + tree});
    EXPECT_EQ(r.exit_code, 0) << tree << "\n" << r.output;
  }
  // 5 tasks on an 8-node mesh: only the occupied nodes form the tree.
  const auto partial = collnet("5", "2x2x2", {"ops", "4", "50"}, 60, {"--mesh", "xyz"});
  EXPECT_EQ(partial.exit_code, 0) << partial.output;
}

TEST(CollnetJob, BadTreeVariablesAreReportedByTheLauncher) {
  const auto r = run_process({kBglrun, "-np", "2", "true"}, 20, {"BGL_TREE=binary"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("BGL_TREE='binary'"));
  const auto ring = run_process({kBglrun, "-np", "2", "true"}, 20, {"BGL_TREE_RING=100"});
  EXPECT_EQ(ring.exit_code, 2);
  EXPECT_THAT(ring.output, HasSubstr("BGL_TREE_RING='100': expected a power of two"));
}

// ---------------------------------------------------------------------------------------------
// Several emulated hosts on loopback (one bglrun per host, libfabric between them): the same
// scenarios, the same results.

std::vector<std::string> hosts(int n) {
  return {"--hosts", std::to_string(n)};
}

TEST(CollnetMultiHost, EveryOperationAndWidthOnTwoAndThreeHosts) {
  const auto two = collnet("8", "2x2x2", {"ops", "17", "300"}, 90, hosts(2));
  EXPECT_EQ(two.exit_code, 0) << two.output;
  EXPECT_THAT(two.output, HasSubstr("ops: 111 reductions on 8 tasks: ok"));
  // 5 tasks on 8 nodes over 3 hosts: host 2 runs no task and takes no part.
  const auto three = collnet("5", "2x2x2", {"ops", "4", "50"}, 90, hosts(3));
  EXPECT_EQ(three.exit_code, 0) << three.output;
  EXPECT_THAT(three.output, HasSubstr("ops: 111 reductions on 5 tasks: ok"));
}

TEST(CollnetMultiHost, FloatingPointSumsAreBitIdenticalToOneHost) {
  const auto one = collnet("8", "2x2x2", {"fp", "42", "1", "700"});
  ASSERT_EQ(one.exit_code, 0) << one.output;
  const std::string expected = fp_hash(one.output);
  ASSERT_NE(expected, "none");
  const auto two = collnet("8", "2x2x2", {"fp", "42", "2", "700"}, 90, hosts(2));
  ASSERT_EQ(two.exit_code, 0) << two.output;
  EXPECT_EQ(fp_hash(two.output), expected);
  const auto four = collnet("8", "2x2x2", {"fp", "42", "3", "700"}, 90, hosts(4));
  ASSERT_EQ(four.exit_code, 0) << four.output;
  EXPECT_EQ(fp_hash(four.output), expected);
  const auto kary =
      collnet("8", "2x2x2", {"fp", "42", "4", "700"}, 90, hosts(2), {"BGL_TREE=kary:1"});
  ASSERT_EQ(kary.exit_code, 0) << kary.output;
  EXPECT_EQ(fp_hash(kary.output), expected);
}

TEST(CollnetMultiHost, StreamingThroughASmallRingAndTwoCreditsIsBackpressureNotLoss) {
  // An 8-deep ring and 2 store credits per pair of hosts: tasks and agents must both wait.
  const auto r = collnet("8", "2x2x2", {"stream", "5"}, 90, hosts(2),
                         {"BGL_TREE_RING=8", "BGL_OFI_CREDITS=2", "BGL_OFI_BATCH=1"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("stream: 600 packets, ring 8"));
  const auto l = collnet("8", "2x2x2", {"long", "1"}, 90, hosts(2));
  EXPECT_EQ(l.exit_code, 0) << l.output;
  EXPECT_THAT(l.output,
              HasSubstr("long: 1 MiB allreduce (u64, double) and broadcasts on 8 tasks: ok"));
}

TEST(CollnetMultiHost, BroadcastsBarriersWiresAndPointToPoint) {
  const auto b = collnet("8", "2x2x2", {"bcast", "3"}, 90, hosts(2), {"BGL_TREE_RING=4"});
  EXPECT_EQ(b.exit_code, 0) << b.output;
  EXPECT_THAT(b.output, HasSubstr("bcast: 24 broadcasts on 8 tasks: ok"));
  const auto gi = collnet("8", "2x2x2", {"barrier", "1000", "50"}, 90, hosts(2));
  EXPECT_EQ(gi.exit_code, 0) << gi.output;
  EXPECT_THAT(gi.output, HasSubstr("barrier: 1000 barriers on 8 tasks"));
  const auto w = collnet("6", "3x2x1", {"wires"}, 90, hosts(3));
  EXPECT_EQ(w.exit_code, 0) << w.output;
  EXPECT_THAT(w.output, HasSubstr("wires: OR and AND on 6 tasks: ok"));
  const auto p = collnet("8", "2x2x2", {"p2p", "200"}, 90, hosts(2), {"BGL_TREE_INBOX=4"});
  EXPECT_EQ(p.exit_code, 0) << p.output;
  EXPECT_THAT(p.output, HasSubstr("p2p: 200 packets from each of 7 tasks to the root: ok"));
  const auto c = collnet("8", "2x2x2", {"classes"}, 90, hosts(2));
  EXPECT_EQ(c.exit_code, 0) << c.output;
  EXPECT_THAT(c.output, HasSubstr("classes: two route classes on 8 tasks: ok"));
}

TEST(CollnetMultiHost, VirtualNodeModeAndSpecialValues) {
  const auto vn =
      collnet("16", "2x2x2", {"ops", "31", "200"}, 90, {"--mode", "vn", "--hosts", "2"});
  EXPECT_EQ(vn.exit_code, 0) << vn.output;
  EXPECT_THAT(vn.output, HasSubstr("ops: 111 reductions on 16 tasks: ok"));
  const auto sp = collnet("5", "5x1x1", {"special"}, 90, hosts(2));
  EXPECT_EQ(sp.exit_code, 0) << sp.output;
  EXPECT_THAT(sp.output, HasSubstr("special: NaN, infinities and overflow reported"));
}

TEST(CollnetMultiHost, AHostThatDisappearsDuringCollectivesEndsTheJobWithAClearError) {
  const std::string log =
      ::testing::TempDir() + "/collnet-hostdeath.log." + std::to_string(getpid());
  setenv("BGL_OFI_TIMEOUT_MS", "4000", 1);
  const int launcher = spawn_process(
      {kBglrun, "--hosts", "2", "-np", "8", "--shape", "2x2x2", kScenarios, "endless"}, log);
  unsetenv("BGL_OFI_TIMEOUT_MS");
  const auto pids = wait_for_pids(log, 8, 60 * kTimeScale);
  ASSERT_EQ(pids.size(), 8u) << read_file(log);
  // Let the tasks stream allreduces and barriers for a moment, then kill host 1 (ranks 4..7) as a
  // crashed machine would die, in the middle of a collective.
  usleep(300'000);
  const int host1 = parent_of(pids[4]);
  ASSERT_GT(host1, 1);
  ASSERT_EQ(parent_of(pids[7]), host1);
  const auto start = std::chrono::steady_clock::now();
  ASSERT_EQ(kill(host1, SIGKILL), 0);
  const int code = wait_process(launcher, 30 * kTimeScale);
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::string out = read_file(log);
  EXPECT_NE(code, 0) << out;
  EXPECT_NE(code, -1) << "the job did not end after its host died:\n" << out;
  EXPECT_LT(took, 25.0 * kTimeScale);
  // Silence (heartbeats) or, when the kernel resets the connection first, a failed send.
  EXPECT_THAT(out,
              ::testing::ContainsRegex("host 1 \\(host1, 127.0.0.1\\) has not been heard from|"
                                       "lost the connection to host 1 \\(host1, 127.0.0.1\\)"));
  for (int pid : pids)
    EXPECT_FALSE(process_alive(pid)) << "task pid " << pid << " survived";
}

}  // namespace
}  // namespace bgl::test
