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
#include <map>
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
const std::string kVt = VT_SCENARIOS_PATH;

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
// Virtual time across hosts: the same prediction, and the same clock for every task, whether the
// partition is on one host or several (docs/VIRTUAL_TIME.md, "Several hosts")

struct Clocks {
  std::uint64_t predicted = 0;
  int slowest = -1;
  std::map<int, std::uint64_t> exchanged;  // each task's clock before the closing barrier
};

Clocks clocks_of(const ProcessResult& r) {
  Clocks c;
  const std::regex predicted(R"(predicted BG/L time [0-9.]+ us \(([0-9]+) cycles at 700 MHz, )"
                             R"(slowest task: rank ([0-9]+)\))");
  std::smatch m;
  if (std::regex_search(r.output, m, predicted)) {
    c.predicted = std::stoull(m[1]);
    c.slowest = std::stoi(m[2]);
  }
  const std::regex task("vt rank ([0-9]+) exchanged ([0-9]+)");
  for (auto it = std::sregex_iterator(r.output.begin(), r.output.end(), task);
       it != std::sregex_iterator(); ++it)
    c.exchanged[std::stoi((*it)[1])] = std::stoull((*it)[2]);
  return c;
}

// Runs `program` on `hosts` hosts (0: one host through the libfabric agent, BGL_TRANSPORT=ofi).
Clocks timed_run(int hosts, std::vector<std::string> job, std::vector<std::string> program) {
  std::vector<std::string> args{"--virtual-time", "--vt-cpu-factor", "0"};
  if (hosts > 0) args.insert(args.end(), {"--hosts", std::to_string(hosts)});
  args.insert(args.end(), job.begin(), job.end());
  args.insert(args.end(), program.begin(), program.end());
  const auto r = bglrun(
      args, 120,
      hosts == 0 ? std::vector<std::string>{"BGL_TRANSPORT=ofi"} : std::vector<std::string>{});
  EXPECT_EQ(r.exit_code, 0) << hosts << " hosts: " << r.output;
  EXPECT_THAT(r.output, Not(HasSubstr("rejected a record")));
  return clocks_of(r);
}

void expect_same_clocks(const Clocks& one, const Clocks& other, std::size_t tasks,
                        const std::string& what) {
  ASSERT_GT(one.predicted, 0u) << what;
  EXPECT_EQ(other.predicted, one.predicted) << what;
  EXPECT_EQ(other.slowest, one.slowest) << what;
  EXPECT_EQ(one.exchanged.size(), tasks) << what;
  EXPECT_EQ(other.exchanged, one.exchanged) << what;
}

TEST(VirtualTimeHosts, PacketsCarryTheirClocksAcrossHosts) {
  // A ring of deterministically routed packets on 2x2x2: from 1 to 4 hosts, the route's links
  // split between the sender's and the receiver's calendars; every task's clock is the cycle of
  // one host's, and so is the prediction.
  const std::vector<std::string> job{"-np", "8", "--shape", "2x2x2"};
  const std::vector<std::string> ring{kVt, "ring", "20", "4"};
  const auto one = timed_run(1, job, ring);
  expect_same_clocks(one, timed_run(0, job, ring), 8, "BGL_TRANSPORT=ofi");
  expect_same_clocks(one, timed_run(2, job, ring), 8, "2 hosts");
  expect_same_clocks(one, timed_run(4, job, ring), 8, "4 hosts");
}

TEST(VirtualTimeHosts, AdaptiveRoutesAndDepositBitLinesAreTimedByTheirSender) {
  // Their stamps are final when they leave the sending host: the same prediction as one host's.
  // The receivers read only once every packet waits in their FIFOs, so that they take them in
  // virtual-time order however late the agents deliver some of them.
  const std::vector<std::string> lines_job{"-np", "16", "--shape", "8x2x1", "--fifo-packets",
                                           "512"};
  const std::vector<std::string> lines{kScenarios, "deposit", "200", "settled"};
  const auto one_lines = timed_run(1, lines_job, lines);
  ASSERT_GT(one_lines.predicted, 0u);
  EXPECT_EQ(timed_run(4, lines_job, lines).predicted, one_lines.predicted);
  const std::vector<std::string> adaptive_job{"-np", "8", "--shape", "2x2x2", "--fifo-packets",
                                              "512"};
  const std::vector<std::string> adaptive{kScenarios, "adaptive", "500", "settled"};
  const auto one_adaptive = timed_run(1, adaptive_job, adaptive);
  ASSERT_GT(one_adaptive.predicted, 0u);
  EXPECT_EQ(timed_run(2, adaptive_job, adaptive).predicted, one_adaptive.predicted);
}

TEST(VirtualTimeHosts, VirtualNodeModeClocksTravelAcrossHosts) {
  // TXYZ: each node's two tasks are neighbours in the ring (the scratchpad FIFO), odd ranks send
  // to the next node, some of them on the other host.
  const std::vector<std::string> job{"-np",    "16", "--shape",   "2x2x2",
                                     "--mode", "vn", "--mapping", "TXYZ"};
  const std::vector<std::string> ring{kVt, "ring", "20", "4"};
  expect_same_clocks(timed_run(1, job, ring), timed_run(2, job, ring), 16, "2 hosts, vn");
}

TEST(VirtualTimeHosts, BarriersAndTheTreeReleaseOnEveryHostsLatestClock) {
  // Global-interrupt barrier, 4 KiB tree allreduce and the job barrier, each with a different
  // latest task every round: their release times use all hosts' clocks (and the tree's timing
  // the whole partition's tree, not the hosts' own), on 2 and 4 hosts and in virtual-node mode.
  const std::vector<std::string> job{"-np", "8", "--shape", "2x2x2"};
  const std::vector<std::string> collectives{kVt, "collectives", "10"};
  const auto one = timed_run(1, job, collectives);
  expect_same_clocks(one, timed_run(2, job, collectives), 8, "2 hosts");
  expect_same_clocks(one, timed_run(4, job, collectives), 8, "4 hosts");
  const std::vector<std::string> vn{"-np", "16", "--shape", "2x2x2", "--mode", "vn"};
  expect_same_clocks(timed_run(1, vn, collectives), timed_run(2, vn, collectives), 16,
                     "2 hosts, vn");
}

TEST(VirtualTimeHosts, MessageLayerProtocolsCarryTheirClocksAcrossHosts) {
  // Ping-pong between rank r on host 0 and r + 4 on host 1: one-packet, eager and rendezvous
  // (scout, acknowledgement, adaptively routed data, completion), every task's clock one host's.
  // One message in flight per pair, so that host order cannot choose what a task does next
  // (docs/VIRTUAL_TIME.md, "What is not the same").
  const std::vector<std::string> job{"-np", "8", "--shape", "2x2x2"};
  for (const char* bytes : {"100", "2048", "65536"}) {
    const std::vector<std::string> ml{kVt, "ml", "10", bytes};
    expect_same_clocks(timed_run(1, job, ml), timed_run(2, job, ml), 8,
                       std::string(bytes) + " bytes");
  }
}

TEST(VirtualTimeHosts, HostZerosStatisticsAreTheWholeJobsClocks) {
  const auto one_path = temp_path("vt-one.json"), two_path = temp_path("vt-two.json");
  const std::vector<std::string> job{"--virtual-time", "-np", "8", "--shape", "2x2x2"};
  auto one_args = job, two_args = job;
  one_args.insert(one_args.end(), {"--stats", one_path, kVt, "ring", "10", "4"});
  two_args.insert(two_args.begin(), {"--hosts", "2"});
  two_args.insert(two_args.end(), {"--stats", two_path, kVt, "ring", "10", "4"});
  const auto one = bglrun(one_args, 120), two = bglrun(two_args, 120);
  ASSERT_EQ(one.exit_code, 0) << one.output;
  ASSERT_EQ(two.exit_code, 0) << two.output;
  std::ifstream one_file(one_path), two_file(two_path);
  const auto a = nlohmann::json::parse(one_file), b = nlohmann::json::parse(two_file);
  for (std::size_t r = 0; r < 8; ++r)
    EXPECT_EQ(a["tasks"][r]["virtual_clock"], b["tasks"][r]["virtual_clock"]) << "rank " << r;
  const auto& va = a["virtual_time"];
  const auto& vb = b["virtual_time"];
  EXPECT_EQ(va["predicted_cycles"], vb["predicted_cycles"]);
  EXPECT_EQ(va["slowest_rank"], vb["slowest_rank"]);
  // Every link crossing was reserved in exactly one host's calendar: the merged rows are one
  // host's, utilisations included.
  EXPECT_EQ(va["links"], vb["links"]);
  EXPECT_GT(vb["links"].size(), 0u);
  std::remove(one_path.c_str());
  std::remove(two_path.c_str());
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
