// The message layer across processes: ml_scenarios and c_api_test run as tasks under bglrun, in
// every launch mode, between nearest neighbours, the farthest nodes of a partition and the two
// tasks of one node, with every protocol forced (BGL_ML_PROTOCOL) and the automatic mixes.
// Tests whose name contains "Heavy" (1 GiB, 64 MiB, the big stress run) are labelled "heavy".
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "process_runner.hpp"

namespace bgl::test {
namespace {

using ::testing::HasSubstr;

const std::string kBglrun = BGLRUN_PATH;
const std::string kScenarios = ML_SCENARIOS_PATH;
const std::string kCApi = ML_C_API_PATH;

std::string temp_path(const std::string& name) {
  static int counter = 0;
  return ::testing::TempDir() + "/ml_" + name + "." + std::to_string(getpid()) + "." +
         std::to_string(counter++);
}

// A mapping file for bglrun --mapfile (removed with the test).
class MapFile {
 public:
  explicit MapFile(const std::string& text) : path_(temp_path("map")) {
    std::ofstream(path_) << text;
  }
  MapFile(const MapFile&) = delete;
  MapFile& operator=(const MapFile&) = delete;
  ~MapFile() { std::filesystem::remove(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Runs bglrun with a job timeout (--timeout) below the test's own limit.
ProcessResult bglrun(std::vector<std::string> args, double timeout,
                     const std::vector<std::string>& env = {}) {
  args.insert(args.begin(), {kBglrun, "--timeout", std::to_string(static_cast<int>(timeout))});
  return run_process(args, timeout + 15, env);
}

// The protocols named in the lines of `output` that start with `prefix`, e.g.
// "pingpong: rank 1 received: one_packet=196 eager=1540".
std::set<std::string> protocols_in(const std::string& output, const std::string& prefix) {
  std::set<std::string> names;
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(prefix, 0) != 0) continue;
    const std::regex word("([a-z_]+)=([0-9]+)");
    for (auto it = std::sregex_iterator(line.begin(), line.end(), word);
         it != std::sregex_iterator(); ++it)
      names.insert((*it)[1]);
  }
  return names;
}

// ---------------------------------------------------------------------------------------------
// Where the two tasks of a pair run

struct Pair {
  const char* name;
  const char* mode;
  const char* shape;
  const char* mapping;
  int hops;
};

const Pair kPairs[] = {
    {"HeaterNeighbours", "heater", "4x4x2", "0 0 0\n1 0 0\n", 1},
    {"HeaterFarthest", "heater", "4x4x2", "0 0 0\n2 2 1\n", 5},
    {"CoprocessorNeighbours", "coprocessor", "8x2x1", "0 0 0\n0 1 0\n", 1},
    {"CoprocessorFarthest", "coprocessor", "8x2x1", "0 0 0\n4 1 0\n", 5},
    {"VnSameNode", "vn", "2x2x1", "0 0 0 0\n0 0 0 1\n", 0},
    {"VnFarthest", "vn", "4x4x2", "0 0 0 0\n2 2 1 1\n", 5},
};

void PrintTo(const Pair& p, std::ostream* os) {
  *os << p.name;
}

std::vector<std::string> pair_args(const Pair& p, const MapFile& map) {
  return {"-np", "2", "--shape", p.shape, "--mode", p.mode, "--mapfile", map.path()};
}

// How protocols are chosen, and which a pingpong must then have used.
struct Choice {
  const char* name;
  std::vector<std::string> env;
  std::set<std::string> expected;          // between tasks of different nodes
  std::set<std::string> expected_sibling;  // between the two tasks of one node
};

const Choice kChoices[] = {
    {"Auto", {}, {"one_packet", "eager", "rendezvous"}, {"one_packet", "virtual_node"}},
    {"AutoAdaptiveEager",
     {"BGL_ML_ADAPTIVE_EAGER=1", "BGL_ML_EAGER_LIMIT=4096"},
     {"one_packet", "adaptive_eager", "rendezvous"},
     {"one_packet", "virtual_node"}},
    {"OnePacket", {"BGL_ML_PROTOCOL=one_packet"}, {"one_packet"}, {"one_packet"}},
    {"Eager", {"BGL_ML_PROTOCOL=eager"}, {"eager"}, {"eager"}},
    {"Rendezvous", {"BGL_ML_PROTOCOL=rendezvous"}, {"rendezvous"}, {"rendezvous"}},
    {"AdaptiveEager", {"BGL_ML_PROTOCOL=adaptive_eager"}, {"adaptive_eager"}, {"adaptive_eager"}},
    {"VirtualNode", {"BGL_ML_PROTOCOL=virtual_node"}, {}, {"virtual_node"}},
};

// ---------------------------------------------------------------------------------------------
// Every protocol x boundary size x alignment pair, both ways, per launch mode and placement

void PrintTo(const Choice& c, std::ostream* os) {
  *os << c.name;
}

using PingPongParam = std::tuple<Pair, Choice>;

// Between the tasks of a node, a virtual-node message within the eager limit goes eager while
// every shared cell of the node is held, which depends on timing: where the layer chooses the
// protocols, eager may be among those used besides the expected ones.
std::set<std::string> sibling_view(std::set<std::string> got,
                                   const std::set<std::string>& expected) {
  if (expected.count("one_packet") && expected.count("virtual_node") && !expected.count("eager"))
    got.erase("eager");
  return got;
}

class MlPingPong : public ::testing::TestWithParam<PingPongParam> {};

TEST_P(MlPingPong, EveryBoundarySizeAndAlignmentBothWays) {
  const auto& [pair, choice] = GetParam();
  const MapFile map(pair.mapping);
  auto args = pair_args(pair, map);
  args.insert(args.end(), {kScenarios, "pingpong", "boundary"});
  const auto r = bglrun(args, 120, choice.env);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("distance " + std::to_string(pair.hops) + " hops"));
  EXPECT_THAT(r.output, HasSubstr(std::string(pair.mode) + " mode"));
  EXPECT_THAT(r.output, HasSubstr("messages each way: ok"));
  const auto& expected = pair.hops == 0 ? choice.expected_sibling : choice.expected;
  EXPECT_EQ(sibling_view(protocols_in(r.output, "pingpong: rank 1 received:"), expected), expected)
      << r.output;
  EXPECT_EQ(sibling_view(protocols_in(r.output, "pingpong: rank 0 received echoes:"), expected),
            expected)
      << r.output;
}

std::vector<PingPongParam> pingpong_params() {
  std::vector<PingPongParam> v;
  for (const auto& pair : kPairs)
    for (const auto& choice : kChoices)
      // The virtual-node protocol exists between the two tasks of a node only.
      if (!choice.expected.empty() || pair.hops == 0) v.emplace_back(pair, choice);
  return v;
}

INSTANTIATE_TEST_SUITE_P(, MlPingPong, ::testing::ValuesIn(pingpong_params()),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param).name) + "_" +
                                  std::get<1>(info.param).name;
                         });

// 64 MiB each way with each protocol that can carry it, unexpected at the receiver when odd.
class MlHeavySixtyFourMiB : public ::testing::TestWithParam<std::tuple<Pair, Choice>> {};

TEST_P(MlHeavySixtyFourMiB, OneMessageEachWay) {
  const auto& [pair, choice] = GetParam();
  const MapFile map(pair.mapping);
  auto args = pair_args(pair, map);
  args.insert(args.end(), {kScenarios, "pingpong", "huge"});
  const auto r = bglrun(args, 300, choice.env);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("pingpong: 1 messages each way: ok"));
  const auto& expected = pair.hops == 0 ? choice.expected_sibling : choice.expected;
  for (const auto& p : protocols_in(r.output, "pingpong: rank 1 received:"))
    EXPECT_TRUE(expected.count(p)) << p;
}

INSTANTIATE_TEST_SUITE_P(
    , MlHeavySixtyFourMiB,
    ::testing::Values(PingPongParam{kPairs[1], kChoices[3]}, PingPongParam{kPairs[1], kChoices[4]},
                      PingPongParam{kPairs[1], kChoices[5]}, PingPongParam{kPairs[3], kChoices[0]},
                      PingPongParam{kPairs[4], kChoices[6]}),
    [](const auto& info) {
      return std::string(std::get<0>(info.param).name) + "_" + std::get<1>(info.param).name;
    });

TEST(MlHeavy, OneGiBRendezvousWithChecksum) {
  const MapFile map("0 0 0\n1 0 0\n");
  const auto r = bglrun({"-np", "2", "--shape", "2x1x1", "--mapfile", map.path(), "--fifo-packets",
                         "1024", kScenarios, "big", "1073741824"},
                        400, {"ML_TEST_STALL_SECONDS=60"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("received 1073741824 bytes (rendezvous), checksum"));
  EXPECT_THAT(r.output, HasSubstr("sent 1073741824 bytes (rendezvous)"));
  EXPECT_THAT(r.output, HasSubstr("receiver confirmed"));
  std::cout << r.output;
}

// ---------------------------------------------------------------------------------------------
// Non-overtaking for every mix of protocols, all tasks to all tasks

TEST(MlOrdering, EverySequenceOfThreeProtocolsHeater) {
  const auto r = bglrun({"-np", "8", "--shape", "2x2x2", kScenarios, "mix", "all"}, 120);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("mix all: 8 tasks: ok"));
  EXPECT_EQ(protocols_in(r.output, "mix: rank 5 sent"),
            (std::set<std::string>{"one_packet", "eager", "rendezvous", "adaptive_eager"}));
}

TEST(MlOrdering, EverySequenceOfThreeProtocolsCoprocessor) {
  const auto r = bglrun(
      {"-np", "8", "--shape", "4x2x1", "--mode", "coprocessor", kScenarios, "mix", "all"}, 120);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("mix all: 8 tasks: ok"));
}

TEST(MlOrdering, EverySequenceOfFourOrFiveProtocolsVirtualNode) {
  const auto r =
      bglrun({"-np", "8", "--shape", "2x2x1", "--mode", "vn", kScenarios, "mix", "all"}, 120);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("mix all: 8 tasks: ok"));
  EXPECT_EQ(protocols_in(r.output, "mix: rank 0 sent"),
            (std::set<std::string>{"one_packet", "eager", "rendezvous", "adaptive_eager",
                                   "virtual_node"}));
}

TEST(MlOrdering, AutomaticChoiceWithAdaptiveEager) {
  const auto r = bglrun({"-np", "8", "--shape", "2x2x2", kScenarios, "mix", "auto"}, 120,
                        {"BGL_ML_ADAPTIVE_EAGER=1", "BGL_ML_EAGER_LIMIT=2000"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("mix auto: 8 tasks: ok"));
  EXPECT_EQ(protocols_in(r.output, "mix: rank 2 sent"),
            (std::set<std::string>{"one_packet", "adaptive_eager", "rendezvous"}));
}

// ---------------------------------------------------------------------------------------------
// Random stress: many tasks, random sizes, destinations, protocols, alignments, lists, truncation

TEST(MlStress, ThirtyTwoTasksHeater) {
  const auto r =
      bglrun({"-np", "32", "--shape", "4x4x2", kScenarios, "stress", "11", "60", "100000"}, 150);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("stress: 32 tasks, 60 messages each, seed 11: ok"));
}

TEST(MlStress, SixteenTasksCoprocessor) {
  const auto r = bglrun({"-np", "16", "--shape", "4x2x2", "--mode", "coprocessor", kScenarios,
                         "stress", "12", "80", "100000"},
                        150);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("stress: 16 tasks, 80 messages each, seed 12: ok"));
}

TEST(MlStress, SixteenTasksVirtualNode) {
  const auto r = bglrun(
      {"-np", "16", "--shape", "2x2x2", "--mode", "vn", kScenarios, "stress", "13", "80", "100000"},
      150);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("stress: 16 tasks, 80 messages each, seed 13: ok"));
}

TEST(MlHeavy, StressSixtyFourTasksUpToOneMiB) {
  const auto r =
      bglrun({"-np", "64", "--shape", "4x4x4", kScenarios, "stress", "14", "120", "1048576"}, 400);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("stress: 64 tasks, 120 messages each, seed 14: ok"));
}

// ---------------------------------------------------------------------------------------------
// Unexpected messages and backpressure

// "pool max X of Y bytes, W waits": X <= Y and W > 0.
void expect_backpressure(const ProcessResult& r, std::size_t pool) {
  const std::regex line("pool max ([0-9]+) of ([0-9]+) bytes, ([0-9]+) waits: ok");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.output, m, line)) << r.output;
  EXPECT_LE(std::stoull(m[1]), pool);
  EXPECT_EQ(std::stoull(m[2]), pool);
  EXPECT_GT(std::stoull(m[3]), 0u) << "the pool never ran full: no backpressure was tested";
}

TEST(MlBackpressure, TinyPoolManyUnexpectedMessagesAcceptedSlowlyHeater) {
  const auto r = bglrun({"-np", "4", "--shape", "2x2x1", kScenarios, "backpressure", "150"}, 120,
                        {"BGL_ML_POOL_BYTES=4096"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("backpressure: 450 unexpected messages"));
  expect_backpressure(r, 4096);
}

TEST(MlBackpressure, TinyPoolManyUnexpectedMessagesAcceptedSlowlyCoprocessor) {
  const auto r = bglrun(
      {"-np", "4", "--shape", "2x2x1", "--mode", "coprocessor", kScenarios, "backpressure", "150"},
      120, {"BGL_ML_POOL_BYTES=4096"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("backpressure: 450 unexpected messages"));
  expect_backpressure(r, 4096);
}

TEST(MlBackpressure, TinyPoolManyUnexpectedMessagesAcceptedSlowlyVirtualNode) {
  const auto r =
      bglrun({"-np", "8", "--shape", "2x2x1", "--mode", "vn", kScenarios, "backpressure", "60"},
             120, {"BGL_ML_POOL_BYTES=5000"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("backpressure: 420 unexpected messages"));
  expect_backpressure(r, 2500);  // each of a node's two tasks has half its pool
}

TEST(MlUnexpected, RendezvousSenderWaitsUntilTheReceiverAccepts) {
  for (const Pair& pair : kPairs) {
    const MapFile map(pair.mapping);
    auto args = pair_args(pair, map);
    args.insert(args.end(), {kScenarios, "unexpected_rzv"});
    const auto r = bglrun(args, 60);
    ASSERT_EQ(r.exit_code, 0) << pair.name << "\n" << r.output;
    EXPECT_THAT(r.output, HasSubstr("unexpected_rzv: sender waited for accept(): ok"));
  }
}

// ---------------------------------------------------------------------------------------------
// Statistics in bglrun's --stats report

struct StatsCase {
  const char* name;
  const char* mode;
  const char* shape;  // 4 tasks; in VN mode none of them sends to its node's other task
};

void PrintTo(const StatsCase& c, std::ostream* os) {
  *os << c.name;
}

class MlStatistics : public ::testing::TestWithParam<StatsCase> {};

TEST_P(MlStatistics, PerProtocolCountsMatchWhatWasSent) {
  const StatsCase& c = GetParam();
  const bool co_mode = std::string(c.mode) == "coprocessor";
  const std::string stats = temp_path("stats.json");
  const auto r = bglrun(
      {"-np", "4", "--shape", c.shape, "--mode", c.mode, "--stats", stats, kScenarios, "stats"},
      60);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(read_file(stats));
  std::filesystem::remove(stats);
  ASSERT_EQ(j.at("tasks").size(), 4u);
  // Per task: to the next rank one_packet 3 x 100 B, eager 5 x 1000 B, rendezvous 7 x 5000 B,
  // adaptive eager 11 x 700 B (8-byte headers); the same from the previous rank.
  struct Expect {
    const char* name;
    std::uint64_t messages, bytes, packets;
  };
  const Expect expect[] = {{"one_packet", 3, 300, 3},
                           {"eager", 5, 5000, 5 * (1 + 4)},
                           {"rendezvous", 7, 35000, 7 * (1 + 22)},
                           {"adaptive_eager", 11, 7700, 11 * (1 + 2)}};
  for (const auto& t : j.at("tasks")) {
    SCOPED_TRACE("rank " + std::to_string(t.at("rank").get<int>()));
    ASSERT_TRUE(t.contains("message_layer")) << t.dump();
    const auto& ml = t.at("message_layer");
    std::uint64_t packets = 0;
    // Coprocessor mode: the communication unit receives the rendezvous data of aligned buffers,
    // and the main task counts only the packets it received itself.
    const std::uint64_t on_coprocessor = ml.at("coprocessor_packets").get<std::uint64_t>();
    if (co_mode) {
      EXPECT_EQ(ml.at("coprocessor_messages"), 7u) << "the receive buffers are aligned";
      EXPECT_EQ(on_coprocessor, 7u * 22);
    } else {
      EXPECT_EQ(ml.at("coprocessor_messages"), 0u);
      EXPECT_EQ(on_coprocessor, 0u);
    }
    EXPECT_EQ(ml.at("coherence_operations"), ml.at("coprocessor_messages"));
    for (const auto& e : expect) {
      const auto& p = ml.at("protocols").at(e.name);
      const bool rzv = std::string(e.name) == "rendezvous";
      EXPECT_EQ(p.at("messages_sent"), e.messages) << e.name;
      EXPECT_EQ(p.at("messages_received"), e.messages) << e.name;
      EXPECT_EQ(p.at("bytes_sent"), e.bytes) << e.name;
      EXPECT_EQ(p.at("bytes_received"), e.bytes) << e.name;
      EXPECT_EQ(p.at("packets_sent"), e.packets) << e.name;
      EXPECT_EQ(p.at("packets_received").get<std::uint64_t>() + (rzv ? on_coprocessor : 0),
                e.packets)
          << e.name;
      packets += e.packets;
    }
    for (const auto& [name, p] : ml.at("protocols").items()) {
      if (name == "one_packet" || name == "eager" || name == "rendezvous" ||
          name == "adaptive_eager")
        continue;
      EXPECT_EQ(p.at("messages_sent"), 0u) << name;
    }
    // Acks and fins for 7 rendezvous, tokens for 11 adaptive-eager messages.
    EXPECT_EQ(ml.at("control_packets_sent"), 7u * 2 + 11);
    EXPECT_EQ(ml.at("unexpected_messages"), 0u);
    EXPECT_EQ(ml.at("unexpected_depth"), 0u);
    // The packet layer injected exactly the message layer's packets.
    EXPECT_EQ(t.at("counters").at("packets_injected"), packets + 7 * 2 + 11);
    for (const char* key : {"pool_bytes_max", "pool_waits", "table_waits", "held_packets",
                            "held_packets_max", "hold_full_waits", "unexpected_depth_max"})
      EXPECT_EQ(ml.at(key), 0u) << key;
  }
  // Per link (from the torus routes) and per reception FIFO (high-water marks), job-wide: every
  // task's packets crossed links and were received from some FIFO.
  std::uint64_t injected = 0, link_packets = 0, fifo_received = 0;
  for (const auto& t : j.at("tasks"))
    injected += t.at("counters").at("packets_injected").get<std::uint64_t>();
  for (const auto& l : j.at("links")) {
    EXPECT_GT(l.at("bytes").get<std::uint64_t>(), l.at("packets").get<std::uint64_t>());
    link_packets += l.at("packets").get<std::uint64_t>();
  }
  // High-water marks are sampled (every 32nd packet of a FIFO, kHighWaterSampling in
  // packet_layer/src/reception_fifo.cpp): they never exceed the FIFO's capacity, and a FIFO that
  // took at least 32 packets has one.
  constexpr std::uint64_t kHighWaterSampling = 32;
  const auto capacity = j.at("job").at("fifo_packets").get<std::uint64_t>();
  for (const auto& f : j.at("fifos")) {
    const auto high_water = f.at("high_water").get<std::uint64_t>();
    const auto received = f.at("received").get<std::uint64_t>();
    EXPECT_LE(high_water, capacity) << f.dump();
    if (received >= kHighWaterSampling) {
      EXPECT_GE(high_water, 1u) << f.dump();
    }
    fifo_received += received;
  }
  EXPECT_GE(link_packets, injected) << "every packet between nodes crosses at least one link";
  // (A task may stop before taking the last adaptive-eager token sent back to it.)
  EXPECT_LE(fifo_received, injected);
  EXPECT_GE(fifo_received + 4, injected);
  // The communication matrix: each rank sent its 26 messages (48,000 bytes) to the next rank and
  // nothing to anyone else.
  const auto& traffic = j.at("traffic");
  ASSERT_TRUE(traffic.at("recorded").get<bool>()) << traffic.dump();
  EXPECT_EQ(traffic.at("tasks"), 4);
  EXPECT_EQ(traffic.at("pairs"), 4u);
  EXPECT_EQ(traffic.at("bytes"), 4u * 48000);
  EXPECT_EQ(traffic.at("messages"), 4u * 26);
  ASSERT_EQ(traffic.at("rows").size(), 4u) << traffic.dump();
  for (int r = 0; r < 4; ++r) {
    const auto& row = traffic.at("rows").at(static_cast<std::size_t>(r));
    EXPECT_EQ(row.at("source"), r);
    EXPECT_EQ(row.at("to"),
              nlohmann::json::parse("[[" + std::to_string((r + 1) % 4) + ", 48000, 26]]"))
        << row.dump();
  }
}

INSTANTIATE_TEST_SUITE_P(, MlStatistics,
                         ::testing::Values(StatsCase{"Heater", "heater", "2x2x1"},
                                           StatsCase{"Coprocessor", "coprocessor", "2x2x1"},
                                           StatsCase{"VirtualNode", "vn", "2x1x1"}),
                         [](const auto& info) { return std::string(info.param.name); });

// ---------------------------------------------------------------------------------------------
// Errors and start-up

TEST(MlErrors, BadInputIsInvalidArgumentWithAClearMessage) {
  const auto r = bglrun({"-np", "3", "--shape", "3x1x1", kScenarios, "errors"}, 60);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("errors: rank 0: message to rank 3 of a 3-task job"));
  EXPECT_THAT(r.output, HasSubstr("errors: rank 2: user header of 129 bytes exceeds 128"));
  EXPECT_THAT(r.output, HasSubstr("one-packet protocol forced for 1000 bytes; at most 228 fit"));
  EXPECT_THAT(r.output, HasSubstr("accept() of a message that is not waiting for a buffer"));
  EXPECT_THAT(r.output, HasSubstr("errors: ok"));
}

TEST(MlErrors, SessionOutsideBglrunSaysHowToStartIt) {
  const auto r = run_process({kScenarios, "pingpong"}, 30);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("must be started by bglrun"));
}

TEST(MlErrors, BadProtocolVariableStopsEveryTask) {
  const auto r = bglrun({"-np", "2", kScenarios, "pingpong"}, 60, {"BGL_ML_PROTOCOL=fastest"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("BGL_ML_PROTOCOL='fastest'"));
}

TEST(MlErrors, FailedCheckNamesTheRank) {
  // Forcing one-packet for a message too big is caught by the task and reported (exit 2 names it).
  const auto r =
      bglrun({"-np", "2", kScenarios, "big", "5000"}, 60, {"BGL_ML_PROTOCOL=one_packet"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output,
              HasSubstr("ml_scenarios: rank 0: one-packet protocol forced for 5000 bytes"));
  EXPECT_THAT(r.output, HasSubstr("rank 0 on node (0,0,0)"));
}

// ---------------------------------------------------------------------------------------------
// The C ABI

struct CCase {
  const char* name;
  const char* mode;
  const char* shape;
  const char* mapping;
};

const CCase kCCases[] = {
    {"Heater", "heater", "4x4x2", "0 0 0\n2 2 1\n"},
    {"Coprocessor", "coprocessor", "8x2x1", "0 0 0\n4 1 0\n"},
    {"VirtualNode", "vn", "2x2x1", "0 0 0 0\n1 1 0 0\n"},
};

void PrintTo(const CCase& c, std::ostream* os) {
  *os << c.name;
}

class MlCApi : public ::testing::TestWithParam<CCase> {};

TEST_P(MlCApi, NullBootstrapPingPongEveryProtocol) {
  const CCase& c = GetParam();
  const MapFile map(c.mapping);
  const auto r = bglrun(
      {"-np", "2", "--shape", c.shape, "--mode", c.mode, "--mapfile", map.path(), kCApi, "null"},
      90);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("c_api: 32 messages each way, null bootstrap"));
}

INSTANTIATE_TEST_SUITE_P(, MlCApi, ::testing::ValuesIn(kCCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(MlCApiHost, HostBootstrapWithFileCallbacks) {
  const std::string dir = temp_path("pm");
  std::filesystem::create_directories(dir);
  const std::string stats = temp_path("stats.json");
  const auto r = bglrun({"-np", "4", "--shape", "2x2x1", "--stats", stats, kCApi, "host", dir}, 90);
  std::filesystem::remove_all(dir);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("c_api: 32 messages each way, host bootstrap"));
  // The communication matrix through the C ABI with a host bootstrap (the MPI device's path):
  // rank 0 and rank 3 exchange a handshake word and ping-pong 32 messages each way, every answer
  // as long as its question: 33 messages each way, the same bytes.
  const auto j = nlohmann::json::parse(read_file(stats));
  std::filesystem::remove(stats);
  const auto& traffic = j.at("traffic");
  ASSERT_EQ(traffic.at("rows").size(), 2u) << traffic.dump();
  const auto& to3 = traffic.at("rows").at(0);
  const auto& to0 = traffic.at("rows").at(1);
  EXPECT_EQ(to3.at("source"), 0);
  EXPECT_EQ(to0.at("source"), 3);
  ASSERT_EQ(to3.at("to").size(), 1u) << traffic.dump();
  ASSERT_EQ(to0.at("to").size(), 1u) << traffic.dump();
  EXPECT_EQ(to3.at("to").at(0).at(0), 3);
  EXPECT_EQ(to0.at("to").at(0).at(0), 0);
  EXPECT_EQ(to3.at("to").at(0).at(2), 33u);
  EXPECT_EQ(to0.at("to").at(0).at(2), 33u);
  EXPECT_GT(to3.at("to").at(0).at(1).get<std::uint64_t>(), 0u);
  EXPECT_EQ(to3.at("to").at(0).at(1), to0.at("to").at(0).at(1));
}

// The C ABI used to offer no way to learn that a task's own packets had left: done() means
// "the buffer may be reused" (the data may still be queued in the task's injection FIFO when the
// destination's reception FIFO is full), and neither bgl_msg_barrier() nor bgl_msg_finalize()
// moved queued packets on, so a C sender that waited for done() and entered the barrier
// stranded the end of its message. Now the barrier flushes and keeps advancing, finalize
// flushes, and bgl_msg_idle() tells. Reception FIFOs of two packets make the case certain.
TEST(MlCApiRegressions, SenderThatSawDoneThenEntersTheBarrierDeliversItsMessage) {
  const auto r =
      bglrun({"-np", "2", "--shape", "2x1x1", "--fifo-packets", "2", kCApi, "strand"}, 60);
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

TEST(MlCApiHost, HostBootstrapThatDisagreesWithTheJobIsAConfigurationError) {
  for (const char* how : {"host_bad_size", "host_bad_rank"}) {
    const auto r = bglrun({"-np", "2", "--shape", "2x1x1", kCApi, how}, 60);
    ASSERT_EQ(r.exit_code, 0) << how << "\n" << r.output;
  }
  const auto size = bglrun({"-np", "2", "--shape", "2x1x1", kCApi, "host_bad_size"}, 60);
  EXPECT_THAT(
      size.output,
      HasSubstr("the process manager started 3 processes but the emulated job has 2 tasks"));
  const auto rank = bglrun({"-np", "2", "--shape", "2x1x1", kCApi, "host_bad_rank"}, 60);
  EXPECT_THAT(rank.output, HasSubstr("rank 3 is outside the job's 2 tasks"));
}

// A process could not start a second session after bgl_msg_finalize():
// job_runtime::Segment::attach took ownership of the descriptor inherited from bglrun
// (BGL_SEGMENT_FD) and closed it on release, so the next attach failed with "Bad file descriptor"
// (fixed: attach duplicates it). A deadlock in the message layer (receives nobody matches, a
// barrier that cannot complete) is reported by the launcher in seconds, in every node mode.
TEST(MlLauncher, DeadlockIsReportedInEveryMode) {
  for (const char* mode : {"heater", "coprocessor", "vn"}) {
    const auto r = bglrun({"-np", "8", "--mode", mode, kScenarios, "deadlock"}, 120);
    EXPECT_EQ(r.exit_code, 125) << mode << "\n" << r.output;
    EXPECT_THAT(r.output, HasSubstr("ranks 0-6 wait for packets")) << mode;
    EXPECT_THAT(r.output, HasSubstr("rank 7 waits for the job barrier")) << mode;
    EXPECT_LT(r.seconds, 30) << mode << "\n" << r.output;
  }
}

TEST(MlCApiRegressions, SecondSessionAfterFinalize) {
  const auto r = bglrun({"-np", "2", "--shape", "2x1x1", kCApi, "reinit"}, 60);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("second session: ok"));
}

TEST(MlCApiHost, ProgramWithoutBglrunGetsAConfigurationError) {
  const auto r = run_process({kCApi, "null"}, 30);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("must be started by bglrun"));
}

}  // namespace
}  // namespace bgl::test
