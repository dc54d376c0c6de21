// bglrun --trace: the merged file is valid Chrome trace-event JSON, each task's events nest, spans
// matched by id pair up, and the events agree with the statistics of the same run (message counts
// per task, times within each task's clock or the job's host time); the cap and bad options.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "process_runner.hpp"

namespace bgl::test {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

std::string temp_path(const std::string& name) {
  return (fs::temp_directory_path() / ("bgl_trace_test." + std::to_string(getpid()) + "." + name))
      .string();
}

struct Checked {
  std::map<int, int> sends, receives, collectives, steps;  // per task
  std::map<int, double> last_end_us;                       // per task
  double first_ts_us = 1e300;
};

// Checks the format and the nesting; counts what each task recorded.
Checked check_trace(const json& trace) {
  Checked c;
  EXPECT_TRUE(trace.is_object());
  EXPECT_TRUE(trace.contains("otherData"));
  const auto& events = trace.at("traceEvents");
  EXPECT_TRUE(events.is_array());
  std::map<int, std::vector<std::pair<double, double>>> spans;  // per task: [start, end]
  std::map<std::tuple<int, std::string, std::string>, std::vector<double>> open;
  for (const auto& e : events) {
    const std::string ph = e.at("ph");
    const int pid = e.at("pid");
    EXPECT_TRUE(e.contains("name"));
    if (ph == "M") continue;
    const double ts = e.at("ts");
    EXPECT_GE(ts, 0.0);
    c.first_ts_us = std::min(c.first_ts_us, ts);
    const std::string cat = e.at("cat"), name = e.at("name");
    double end = ts;
    if (ph == "X") {
      const double dur = e.at("dur");
      EXPECT_GE(dur, 0.0);
      end = ts + dur;
      spans[pid].push_back({ts, end});
      if (cat == "collective") ++c.collectives[pid];
      if (cat == "step") ++c.steps[pid];
    } else if (ph == "b" || ph == "e") {
      const std::string id = e.at("id2").at("local");
      auto& stack = open[{pid, cat, id}];
      if (ph == "b") {
        stack.push_back(ts);
        if (cat == "message") ++c.sends[pid];
        if (cat == "step") ++c.steps[pid];
      } else {
        EXPECT_FALSE(stack.empty()) << "an end without a begin: " << e.dump();
        if (!stack.empty()) {
          EXPECT_LE(stack.back(), ts) << e.dump();
          stack.pop_back();
        }
      }
    } else if (ph == "i") {
      if (cat == "message") ++c.receives[pid];
    } else {
      ADD_FAILURE() << "unexpected phase " << e.dump();
    }
    c.last_end_us[pid] = std::max(c.last_end_us[pid], end);
  }
  for (const auto& [key, stack] : open)
    EXPECT_TRUE(stack.empty()) << "a begin without an end on task " << std::get<0>(key);
  // Complete events of one task nest: sorted by start (longer first), each one starting inside an
  // open span ends inside it too.
  for (auto& [pid, list] : spans) {
    std::sort(list.begin(), list.end(), [](const auto& a, const auto& b) {
      return a.first < b.first || (a.first == b.first && a.second > b.second);
    });
    std::vector<double> ends;
    for (const auto& [start, end] : list) {
      while (!ends.empty() && ends.back() <= start)
        ends.pop_back();
      if (!ends.empty()) {
        EXPECT_LE(end, ends.back() + 1e-3) << "task " << pid << " at " << start;
      }
      ends.push_back(end);
    }
  }
  return c;
}

TEST(Trace, MessagesAgreeWithTheStatisticsInVirtualTime) {
  const auto stats_path = temp_path("vt.json"), trace_path = temp_path("vt.trace.json");
  const auto r = run_bglrun(BGLRUN_PATH,
                            {"-np", "8", "--shape", "2x2x2", "--virtual-time", "--stats",
                             stats_path, "--trace", trace_path, ML_SCENARIOS_PATH, "stats"},
                            60);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("trace written to " + trace_path));
  const auto stats = json::parse(read_file(stats_path));
  const auto trace = json::parse(read_file(trace_path));
  fs::remove(stats_path);
  fs::remove(trace_path);
  EXPECT_EQ(trace["otherData"]["clock"], "virtual");
  EXPECT_EQ(trace["otherData"]["dropped"], 0);
  const auto c = check_trace(trace);
  for (const auto& t : stats["tasks"]) {
    const int rank = t["rank"];
    std::uint64_t sent = 0, received = 0;
    for (const auto& [name, p] : t["message_layer"]["protocols"].items()) {
      sent += p["messages_sent"].get<std::uint64_t>();
      received += p["messages_received"].get<std::uint64_t>();
    }
    EXPECT_GT(sent, 0u);
    EXPECT_EQ(c.sends.contains(rank) ? c.sends.at(rank) : 0, static_cast<int>(sent)) << rank;
    EXPECT_EQ(c.receives.contains(rank) ? c.receives.at(rank) : 0, static_cast<int>(received))
        << rank;
    // Nothing happens after the task's clock stopped; its last event is close to that time.
    const double clock_us = t["virtual_clock"]["seconds"].get<double>() * 1e6;
    EXPECT_LE(c.last_end_us.at(rank), clock_us + 1e-3) << rank;
    EXPECT_GT(c.last_end_us.at(rank), 0.5 * clock_us) << rank;
  }
}

TEST(Trace, CollectiveStepsNestInTheirCollectivesInHostTime) {
  const auto stats_path = temp_path("coll.json"), trace_path = temp_path("coll.trace.json");
  const auto r = run_bglrun(BGLRUN_PATH,
                            {"-np", "8", "--shape", "2x2x2", "--stats", stats_path, "--trace",
                             trace_path, COLL_SCENARIOS_PATH, "world", "bcast,allreduce"},
                            120);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto stats = json::parse(read_file(stats_path));
  const auto trace = json::parse(read_file(trace_path));
  fs::remove(stats_path);
  fs::remove(trace_path);
  EXPECT_EQ(trace["otherData"]["clock"], "host");
  const auto c = check_trace(trace);
  const double host_us = stats["job"]["host_seconds"].get<double>() * 1e6;
  for (int rank = 0; rank < 8; ++rank) {
    EXPECT_GT(c.collectives.contains(rank) ? c.collectives.at(rank) : 0, 10) << rank;
    EXPECT_GT(c.steps.contains(rank) ? c.steps.at(rank) : 0, 10) << rank;
    EXPECT_LE(c.last_end_us.at(rank), host_us) << rank;
  }
  // Every step lies inside one of its task's collective spans.
  std::map<int, std::vector<std::pair<double, double>>> calls;
  for (const auto& e : trace["traceEvents"])
    if (e["ph"] == "X" && e["cat"] == "collective")
      calls[e["pid"].get<int>()].push_back(
          {e["ts"], e["ts"].get<double>() + e["dur"].get<double>()});
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "M" || e["cat"] != "step") continue;
    const double ts = e["ts"];
    const auto& list = calls[e["pid"].get<int>()];
    EXPECT_TRUE(std::any_of(list.begin(), list.end(), [&](const auto& s) {
      return s.first <= ts + 1e-3 && ts <= s.second + 1e-3;
    })) << e.dump();
  }
}

TEST(Trace, TheCapIsNamedAndTheFileStaysValid) {
  const auto trace_path = temp_path("cap.trace.json");
  const auto r = run_bglrun(BGLRUN_PATH,
                            {"-np", "8", "--shape", "2x2x2", "--trace", trace_path,
                             "--trace-events", "80", ML_SCENARIOS_PATH, "stats"},
                            60);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("reached the cap of 10 events per task (--trace-events 80 for 8 "
                                  "tasks)"));
  const auto trace = json::parse(read_file(trace_path));
  fs::remove(trace_path);
  EXPECT_GT(trace["otherData"]["dropped"].get<int>(), 0);
  EXPECT_LE(trace["otherData"]["events"].get<int>(), 80);
  check_trace(trace);
}

TEST(Trace, BadOptionsAreNamedBeforeTheJob) {
  const auto marker = temp_path("ran");
  auto r = run_bglrun(
      BGLRUN_PATH,
      {"-np", "1", "--trace", temp_path("x.json"), "--trace-time", "wall", "touch", marker}, 20);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output,
              HasSubstr("--trace-time (BGL_TRACE_TIME)='wall': expected host or virtual"));
  r = run_bglrun(
      BGLRUN_PATH,
      {"-np", "1", "--trace", temp_path("x.json"), "--trace-time", "virtual", "touch", marker}, 20);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("--trace-time virtual needs virtual time"));
  r = run_bglrun(BGLRUN_PATH, {"-np", "1", "--trace", "/no/such/dir/t.json", "touch", marker}, 20);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("cannot write the trace to /no/such/dir/t.json"));
  r = run_bglrun(
      BGLRUN_PATH,
      {"-np", "1", "--trace", temp_path("x.json"), "--trace-events", "0", "touch", marker}, 20);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("--trace-events"));
  EXPECT_FALSE(fs::exists(marker));
}

TEST(Trace, ATaskWithoutTheRuntimeIsNamed) {
  const auto trace_path = temp_path("none.trace.json");
  const auto r = run_bglrun(BGLRUN_PATH, {"-np", "2", "--trace", trace_path, "true"}, 20);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("2 task(s) left no events (ranks 0, 1)"));
  const auto trace = json::parse(read_file(trace_path));
  fs::remove(trace_path);
  EXPECT_EQ(trace["otherData"]["tasks_without_events"], 2);
  // No leftovers of the tasks' directory next to the trace.
  for (const auto& f : fs::directory_iterator(fs::path(trace_path).parent_path()))
    EXPECT_THAT(f.path().filename().string(), ::testing::Not(HasSubstr("none.trace.json.tasks")));
}

}  // namespace
}  // namespace bgl::test
