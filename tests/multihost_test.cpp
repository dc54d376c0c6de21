// The libfabric backend end to end: jobs whose packets go through the hosts' libfabric agents,
// on one host (BGL_TRANSPORT=ofi), on several emulated hosts over loopback (one bglrun per host,
// started by Hydra's mpiexec), and on hosts in two network namespaces joined by a veth pair; packet
// semantics across hosts (order, adaptive reordering, deposit-bit lines, backpressure), the
// message layer over it, failures (a failing rank, a host that disappears) and bad placements.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <sstream>

#include "process_runner.hpp"

namespace bgl::test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

const std::string kBglrun = BGLRUN_PATH;
const std::string kScenarios = SCENARIOS_PATH;
const std::string kMl = ML_SCENARIOS_PATH;
const std::string kCollnet = COLLNET_SCENARIOS_PATH;
const std::string kColl = COLL_SCENARIOS_PATH;

// Tests of a dead host shorten the silence that means "gone" (default 10 s); the others keep the
// default, so that a loaded machine (sanitizers, parallel builds) cannot fake a dead host.
const char* const kFastTimeout = "4000";

ProcessResult bglrun(std::vector<std::string> args, double timeout = 90,
                     const std::vector<std::string>& env = {}) {
  args.insert(args.begin(), kBglrun);
  return run_process(args, timeout, env);
}

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "/" + name + "." + std::to_string(getpid());
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

// ---------------------------------------------------------------------------------------------
// One host, every packet between nodes through the libfabric agent

TEST(OfiOneHost, PairOrderHoldsAndNothingIsLost) {
  const auto r = bglrun({"-np", "8", "--shape", "2x2x2", kScenarios, "order", "300"}, 90,
                        {"BGL_TRANSPORT=ofi"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("transport ofi"));
}

TEST(OfiOneHost, AdaptiveRoutingStillReorders) {
  const auto r = bglrun({"-np", "8", "--shape", "2x2x2", kScenarios, "adaptive", "2000"}, 90,
                        {"BGL_TRANSPORT=ofi"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("deterministic: 2000 packets, 0 out of order"));
}

TEST(OfiOneHost, ForcedSharedMemoryCannotSpanHosts) {
  const auto r =
      bglrun({"--hosts", "2", "-np", "8", kScenarios, "order", "1"}, 30, {"BGL_TRANSPORT=shm"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("BGL_TRANSPORT=shm, but the placement"));
  EXPECT_THAT(r.output, HasSubstr("spans 2 hosts"));
}

// ---------------------------------------------------------------------------------------------
// Several emulated hosts on loopback

TEST(MultiHost, PlacementIsReportedAndPairOrderHolds) {
  const auto r =
      bglrun({"--hosts", "2", "-np", "8", "--shape", "2x2x2", kScenarios, "order", "300"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output,
              HasSubstr("host 0 host0 (127.0.0.1): 4 nodes, ids 0..3 = (0,0,0)..(1,1,0)"));
  EXPECT_THAT(r.output,
              HasSubstr("host 1 host1 (127.0.0.1): 4 nodes, ids 4..7 = (0,0,1)..(1,1,1)"));
}

TEST(MultiHost, AdaptiveRoutingReordersAcrossHostsAndLosesNothing) {
  // Rank 0 on host 0, the last rank on host 1.
  const auto r =
      bglrun({"--hosts", "2", "-np", "8", "--shape", "2x2x2", kScenarios, "adaptive", "2000"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("deterministic: 2000 packets, 0 out of order"));
  const std::regex adaptive("adaptive: 2000 packets, ([0-9]+) out of order");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.output, m, adaptive)) << r.output;
  EXPECT_GT(std::stoi(m[1]), 0);
}

TEST(MultiHost, StatisticsAreOneJobsWithEveryHostsTasksAndLinks) {
  // Host 0 merges the other host's part: every task with its counters, every link with the
  // packets of both hosts' tasks, as the same job on one host (the traffic is deterministic).
  const auto one_path = temp_path("one-host.json"), two_path = temp_path("two-hosts.json");
  const std::vector<std::string> job{"-np", "8", "--shape", "2x2x2"};
  auto one_args = job, two_args = job;
  one_args.insert(one_args.end(), {"--stats", one_path, kScenarios, "order", "300"});
  two_args.insert(two_args.begin(), {"--hosts", "2"});
  two_args.insert(two_args.end(), {"--stats", two_path, kScenarios, "order", "300"});
  const auto one = bglrun(one_args);
  const auto two = bglrun(two_args);
  ASSERT_EQ(one.exit_code, 0) << one.output;
  ASSERT_EQ(two.exit_code, 0) << two.output;
  std::ifstream one_file(one_path), two_file(two_path);
  const auto a = nlohmann::json::parse(one_file), b = nlohmann::json::parse(two_file);
  ASSERT_EQ(b["tasks"].size(), 8u);
  for (std::size_t r = 0; r < 8; ++r) {
    ASSERT_TRUE(b["tasks"][r].value("published", false)) << "rank " << r << ": " << b["tasks"][r];
    EXPECT_EQ(a["tasks"][r]["counters"]["packets_injected"],
              b["tasks"][r]["counters"]["packets_injected"])
        << "rank " << r;
    EXPECT_EQ(a["tasks"][r]["counters"]["packets_received"],
              b["tasks"][r]["counters"]["packets_received"])
        << "rank " << r;
  }
  EXPECT_EQ(a["links"], b["links"]);
  EXPECT_FALSE(b["job"].contains("hosts_missing"));
  std::remove(one_path.c_str());
  std::remove(two_path.c_str());
}

TEST(MultiHost, DepositBitLinesSpanFourHosts) {
  // 8x2x1 on four hosts: the x lines from (0,0,0) cross hosts 0 and 1 (nodes 0..3 and 4..7).
  const auto r =
      bglrun({"--hosts", "4", "-np", "16", "--shape", "8x2x1", kScenarios, "deposit", "2000"}, 120);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("rank 7: 4000 deposit-bit copies"));
  EXPECT_THAT(r.output, HasSubstr("rank 1: 2000 deposit-bit copies"));
  EXPECT_THAT(r.output, HasSubstr("rank 8: 0 deposit-bit copies"));
}

TEST(MultiHost, FewCreditsAndTinyFifosAreBackpressureNotLoss) {
  // Seven producers (three on the other host) flood rank 0's FIFO of 4 packets with 2 credits per
  // pair of hosts: the senders must wait, nothing may be lost or duplicated.
  const auto r = bglrun({"--hosts", "2", "-np", "8", "--shape", "2x2x2", "--fifo-packets", "4",
                         "--log-level", "info", kScenarios, "flood", "3000"},
                        120, {"BGL_OFI_CREDITS=2", "BGL_OFI_BATCH=1"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("rank 0: 21000 packets from 7 producers"));
  const std::regex stalls("([0-9]+) credit stalls");
  bool stalled = false;
  for (auto it = std::sregex_iterator(r.output.begin(), r.output.end(), stalls);
       it != std::sregex_iterator(); ++it)
    stalled |= std::stoull((*it)[1]) > 0;
  EXPECT_TRUE(stalled) << "no host ever ran out of credits:\n" << r.output;
  EXPECT_THAT(r.output, HasSubstr(" 0 rejected"));
}

TEST(MultiHost, AFailingRankStopsEveryHostAndIsNamed) {
  const auto r =
      bglrun({"--hosts", "2", "-np", "8", "--shape", "2x2x2", kScenarios, "fail", "5", "9"}, 60);
  EXPECT_EQ(r.exit_code, 9) << r.output;
  EXPECT_THAT(r.output, HasSubstr("rank 5 on node (1,0,1) t=0"));
  EXPECT_THAT(r.output, HasSubstr("exited with code 9"));
  EXPECT_THAT(r.output, HasSubstr("host 1 (host1, 127.0.0.1) stopped its tasks with status 9"));
}

TEST(MultiHost, AHostThatDisappearsEndsTheJobWithAClearError) {
  const std::string log = temp_path("hostdeath.log");
  setenv("BGL_OFI_TIMEOUT_MS", kFastTimeout, 1);
  const int launcher = spawn_process(
      {kBglrun, "--hosts", "2", "-np", "8", "--shape", "2x2x2", kScenarios, "hang"}, log);
  unsetenv("BGL_OFI_TIMEOUT_MS");
  const auto pids = wait_for_pids(log, 8, 60);
  ASSERT_EQ(pids.size(), 8u) << read_file(log);
  // Host 1 runs ranks 4..7; its bglrun is their parent. Kill it as a crashed machine would die.
  const int host1 = parent_of(pids[4]);
  ASSERT_GT(host1, 1);
  ASSERT_EQ(parent_of(pids[5]), host1);
  const auto start = std::chrono::steady_clock::now();
  ASSERT_EQ(kill(host1, SIGKILL), 0);
  const int code = wait_process(launcher, 30);
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::string out = read_file(log);
  EXPECT_NE(code, 0) << out;
  EXPECT_NE(code, -1) << "the job did not end after its host died:\n" << out;
  EXPECT_LT(took, 25.0);
  // Silence (heartbeats) or, when the kernel resets the connection first, a failed send (seen
  // once in ~10 runs on a loaded machine).
  EXPECT_THAT(out, ::testing::ContainsRegex(
                       "host 1 \\(host1, 127.0.0.1\\) has not been heard from.*it disappeared or "
                       "the network to it failed|lost the connection to host 1 \\(host1, "
                       "127.0.0.1\\).*that host disappeared"));
  for (int pid : pids)
    EXPECT_FALSE(process_alive(pid)) << "task pid " << pid << " survived";
}

TEST(MultiHost, MessageLayerSuiteOverTwoHosts) {
  const auto mix = bglrun({"--hosts", "2", "-np", "8", "--shape", "2x2x2", kMl, "mix", "all"}, 120);
  EXPECT_EQ(mix.exit_code, 0) << mix.output;
  EXPECT_THAT(mix.output, HasSubstr("mix all: 8 tasks: ok"));
  const auto stress = bglrun(
      {"--hosts", "2", "-np", "8", "--shape", "2x2x2", kMl, "stress", "11", "40", "100000"}, 150);
  EXPECT_EQ(stress.exit_code, 0) << stress.output;
  EXPECT_THAT(stress.output, HasSubstr("seed 11: ok"));
  const auto ping =
      bglrun({"--hosts", "2", "-np", "4", "--shape", "2x2x1", kMl, "pingpong", "boundary"}, 150);
  EXPECT_EQ(ping.exit_code, 0) << ping.output;
  EXPECT_THAT(ping.output, HasSubstr("messages each way: ok"));
  const auto bp =
      bglrun({"--hosts", "2", "-np", "4", "--shape", "2x2x1", kMl, "backpressure", "150"}, 150);
  EXPECT_EQ(bp.exit_code, 0) << bp.output;
}

TEST(MultiHost, BadHostFilesAreRejectedBeforeAnythingStarts) {
  const std::string file = temp_path("hosts.txt");
  write_file(file, "a 127.0.0.1 nodes=4\nb 127.0.0.1 cores=3\n");
  auto r = bglrun({"--hostfile", file, "-np", "8", kScenarios, "order", "1"}, 30);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr(file + ":2: unexpected 'cores=3'"));
  write_file(file, "a nodes=4\nb nodes=3\n");
  r = bglrun({"--hostfile", file, "-np", "8", kScenarios, "order", "1"}, 30);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("nodes= add up to 7, but shape 2x2x2 has 8 nodes"));
  r = bglrun({"--hosts", "9", "-np", "8", kScenarios, "order", "1"}, 30);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("9 hosts for 8 nodes"));
}

// ---------------------------------------------------------------------------------------------
// Two network namespaces joined by a veth pair: each emulated host's bglrun enters its namespace,
// so every packet between hosts crosses the veth link.

class TwoNamespaces : public ::testing::Test {
 protected:
  void SetUp() override {
    pair_.emplace("", "10.213.0", temp_path("netns-hosts.txt"));
    ASSERT_EQ(pair_->error(), "");
    created_ = true;
    hostfile_ = pair_->hostfile();
  }
  const std::string& ns(int host) const { return pair_->ns(host); }

  std::optional<NamespacePair> pair_;
  std::string hostfile_;
  bool created_ = false;
};

TEST_F(TwoNamespaces, PacketAndMessageLayerSuitesPassAcrossTheVeth) {
  ASSERT_TRUE(created_);
  const auto order = bglrun({"--hostfile", hostfile_, "-np", "8", "--shape", "2x2x2", "--log-level",
                             "info", kScenarios, "order", "300"});
  EXPECT_EQ(order.exit_code, 0) << order.output;
  EXPECT_THAT(order.output, HasSubstr("hostA (10.213.0.1): 4 nodes"));
  EXPECT_THAT(order.output, HasSubstr("netns " + ns(0)));
  EXPECT_THAT(order.output, HasSubstr("entered network namespace " + ns(1)));
  EXPECT_THAT(order.output, HasSubstr("fi_sockaddr_in://10.213.0.2"));  // bound to the veth
  const auto adaptive = bglrun(
      {"--hostfile", hostfile_, "-np", "8", "--shape", "2x2x2", kScenarios, "adaptive", "1000"});
  EXPECT_EQ(adaptive.exit_code, 0) << adaptive.output;
  const auto mix =
      bglrun({"--hostfile", hostfile_, "-np", "8", "--shape", "2x2x2", kMl, "mix", "all"}, 120);
  EXPECT_EQ(mix.exit_code, 0) << mix.output;
  EXPECT_THAT(mix.output, HasSubstr("mix all: 8 tasks: ok"));
  const auto stress = bglrun({"--hostfile", hostfile_, "-np", "8", "--shape", "2x2x2", kMl,
                              "stress", "12", "40", "100000"},
                             150);
  EXPECT_EQ(stress.exit_code, 0) << stress.output;
  const auto ping = bglrun(
      {"--hostfile", hostfile_, "-np", "4", "--shape", "2x2x1", kMl, "pingpong", "boundary"}, 150);
  EXPECT_EQ(ping.exit_code, 0) << ping.output;
}

TEST_F(TwoNamespaces, CollectiveNetworkAndGlobalInterruptAcrossTheVeth) {
  ASSERT_TRUE(created_);
  const auto ops = bglrun(
      {"--hostfile", hostfile_, "-np", "8", "--shape", "2x2x2", kCollnet, "ops", "17", "100"}, 120);
  EXPECT_EQ(ops.exit_code, 0) << ops.output;
  EXPECT_THAT(ops.output, HasSubstr("ops: 111 reductions on 8 tasks: ok"));
  // The same floating-point bits as on one host.
  const auto hash = [](const std::string& out) {
    std::smatch m;
    return std::regex_search(out, m, std::regex("hash ([0-9a-f]{16})")) ? m[1].str() : "none";
  };
  const auto one = bglrun({"-np", "8", "--shape", "2x2x2", kCollnet, "fp", "42", "1", "700"});
  const auto two = bglrun(
      {"--hostfile", hostfile_, "-np", "8", "--shape", "2x2x2", kCollnet, "fp", "42", "2", "700"});
  EXPECT_EQ(two.exit_code, 0) << two.output;
  EXPECT_NE(hash(one.output), "none") << one.output;
  EXPECT_EQ(hash(two.output), hash(one.output));
  const auto stream =
      bglrun({"--hostfile", hostfile_, "-np", "8", "--shape", "2x2x2", kCollnet, "stream", "5"},
             120, {"BGL_TREE_RING=8"});
  EXPECT_EQ(stream.exit_code, 0) << stream.output;
  EXPECT_THAT(stream.output, HasSubstr("stream: 600 packets, ring 8"));
  const auto gi = bglrun(
      {"--hostfile", hostfile_, "-np", "8", "--shape", "2x2x2", kCollnet, "barrier", "300", "0"});
  EXPECT_EQ(gi.exit_code, 0) << gi.output;
  EXPECT_THAT(gi.output, HasSubstr("barrier: 300 barriers on 8 tasks"));
  const auto coll = bglrun({"--hostfile", hostfile_, "-np", "8", "--shape", "4x2x1", kColl, "world",
                            "allreduce,barrier"},
                           150);
  EXPECT_EQ(coll.exit_code, 0) << coll.output;
  EXPECT_THAT(coll.output, HasSubstr("coll: world allreduce tree ok"));
  EXPECT_THAT(coll.output, HasSubstr("coll: world barrier gi ok"));
}

TEST_F(TwoNamespaces, CuttingTheLinkEndsTheJobWithAClearError) {
  ASSERT_TRUE(created_);
  const std::string log = temp_path("netns-cut.log");
  setenv("BGL_OFI_TIMEOUT_MS", kFastTimeout, 1);
  const int launcher = spawn_process(
      {kBglrun, "--hostfile", hostfile_, "-np", "8", "--shape", "2x2x2", kScenarios, "hang"}, log);
  unsetenv("BGL_OFI_TIMEOUT_MS");
  ASSERT_EQ(wait_for_pids(log, 8, 60).size(), 8u) << read_file(log);
  const auto cut = run_process(
      {"/bin/sh", "-c", "ip -n " + ns(1) + " link set " + pair_->link(1) + " down"}, 20);
  ASSERT_EQ(cut.exit_code, 0) << cut.output;
  const int code = wait_process(launcher, 30);
  const std::string out = read_file(log);
  EXPECT_NE(code, 0) << out;
  EXPECT_NE(code, -1) << "the job did not end after the link was cut:\n" << out;
  EXPECT_THAT(out, HasSubstr("has not been heard from"));
}

}  // namespace
}  // namespace bgl::test
