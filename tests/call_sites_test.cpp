// Collective call sites (bglrun --stats/--report/--trace): a task's fixed table
// (job_runtime::CallSites), the program's return address above the runtime, bglrun's merge of the
// tasks' files with function, file and line, its speed at 1,024 tasks and its handling of damaged
// files, and real jobs whose collectives run through collectives::Library and Communicator::run.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <time.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "../tools/bglrun/call_sites.hpp"
#include "bgl/job_runtime/call_sites.hpp"
#include "process_runner.hpp"

namespace bgl::test {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name)
      : path(fs::temp_directory_path() /
             ("bgl_call_sites." + std::to_string(getpid()) + "." + name)) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
};

// This thread's CPU time in seconds: what the code costs, whatever else runs on the shared
// machine (wall-clock bounds fail under load).
double cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

// The line of this file that holds `text`, 0 when none does.
int line_of(const std::string& file, const std::string& text) {
  std::istringstream in(read_file(file));
  int n = 0;
  for (std::string line; std::getline(in, line);) {
    ++n;
    if (line.find(text) != std::string::npos) return n;
  }
  return 0;
}

// Stands for a runtime entry (Communicator::run): its caller is the call site.
[[gnu::noinline]] std::uintptr_t runtime_entry() {
  const auto site = job_runtime::CallSites::program_caller(
      reinterpret_cast<std::uintptr_t>(__builtin_return_address(0)));
  asm volatile("" ::: "memory");  // not a tail call: this frame stays on the stack
  return site;
}

[[gnu::noinline]] std::uintptr_t a_call_site() {
  const auto site = runtime_entry();  // the call site under test
  asm volatile("" ::: "memory");
  return site;
}

TEST(CallSites, TheSiteIsTheCallerOfTheRuntimeEntry) {
  const auto site = a_call_site();
  const auto begin = reinterpret_cast<std::uintptr_t>(&a_call_site);
  EXPECT_GT(site, begin);
  EXPECT_LT(site, begin + 256);
}

TEST(CallSites, RowsMergeByKeyAndAFullTableCountsTheRest) {
  TempDir dir("table");
  job_runtime::CallSites sites(3, dir.path.string(), nullptr);
  const auto site = a_call_site();
  for (int i = 0; i < 5; ++i)
    sites.record({site, "bcast", "binomial", "< 12 KiB: binomial", 8, 100, 0}, sites.start());
  // Distinct sizes are distinct rows; beyond kCapacity rows calls are only counted.
  const int distinct = static_cast<int>(job_runtime::CallSites::kCapacity) + 40;
  for (int i = 0; i < distinct; ++i)
    sites.record({site, "allreduce", "tree", "whole partition", 8, 1000u + i, -1}, sites.start());
  const auto rows = sites.rows();
  ASSERT_EQ(rows.size(), job_runtime::CallSites::kCapacity);
  EXPECT_EQ(sites.overflow_calls(), 41u);  // 296 distinct allreduce rows, 255 found room
  const auto bcast = std::ranges::find_if(rows, [&](const auto& r) { return r.bytes == 100; });
  ASSERT_NE(bcast, rows.end());
  EXPECT_EQ(bcast->calls, 5u);
  EXPECT_EQ(sites.texts()[bcast->algorithm], "binomial");
  EXPECT_EQ(sites.texts()[bcast->rule], "< 12 KiB: binomial");
  EXPECT_LE(bcast->host_ns_min, bcast->host_ns_max);

  // Written and merged as bglrun does: the site resolves to this file's function and line.
  ASSERT_TRUE(sites.write());
  fs::rename(dir.path / "task.3.sites", dir.path / "task.0.sites");
  const auto merged = bglrun::merge_call_sites(dir.path, 1, 0);
  EXPECT_EQ(merged["overflow"]["calls"], 41);
  EXPECT_EQ(merged["overflow"]["tasks"], 1);
  ASSERT_EQ(merged["sites"].size(), job_runtime::CallSites::kCapacity);
  const auto row =
      std::ranges::find_if(merged["sites"], [](const json& r) { return r["op"] == "bcast"; });
  ASSERT_NE(row, merged["sites"].end());
  const int line = line_of(CALL_SITES_TEST_SOURCE, "const auto site = runtime_entry();");
  EXPECT_EQ((*row)["site"], "bgl::test::(anonymous namespace)::a_call_site (call_sites_test.cpp:" +
                                std::to_string(line) + ")")
      << row->dump();
  EXPECT_EQ((*row)["calls"], 5);
  EXPECT_EQ((*row)["tasks"], 1);
  EXPECT_FALSE(row->contains("virtual_seconds"));
}

// bglrun's merge at 1,024 tasks of 64 rows each, with damaged files among them: quick, and the
// damage is left out without losing the rest.
TEST(CallSites, MergeOfAThousandTwentyFourTasksIsQuick) {
  TempDir dir("merge");
  const auto site = a_call_site();
  for (int r = 0; r < 1024; ++r) {
    job_runtime::CallSites sites(static_cast<torus_emu::Rank>(r), dir.path.string(), nullptr);
    for (int k = 0; k < 64; ++k)
      sites.record({site, "allreduce", "tree", "whole partition", 1024, 8u << (k % 16), -1},
                   sites.start());
    // 64 rows: 16 sizes from this site, and 48 other sizes.
    for (int k = 0; k < 48; ++k)
      sites.record(
          {site, "bcast", "torus3", ">= 8 KiB on a full partition: torus3", 1024, 8192u + k, 0},
          sites.start());
    ASSERT_TRUE(sites.write());
  }
  // Damage: a truncated row, a row of the wrong type, a file that is not JSON.
  {
    std::ofstream(dir.path / "task.5.sites", std::ios::app) << "{\"module\":\"x\",\"off";
    std::ofstream(dir.path / "task.6.sites", std::ios::app)
        << R"({"module":"x","symbol":"","op":"bcast","algorithm":"a","rule":"r","offset":"x",)"
           R"("comm_size":1,"bytes":1,"root":0,"calls":1,"host_ns":1,"host_ns_min":1,)"
           R"("host_ns_max":1,"cycles":0})"
        << "\n";
    std::ofstream(dir.path / "task.7.sites") << "garbage\n";
  }
  const double start = cpu_seconds();
  const auto merged = bglrun::merge_call_sites(dir.path, 1024, 700e6);
  const double took = cpu_seconds() - start;
  std::printf("merge of 1,024 tasks x 64 rows: %.3f s of CPU\n", took);
  // 0.5-1 s in a release build (docs/PERFORMANCE.md); the bound is against quadratic work.
  EXPECT_LT(took, 10.0 * BGL_TEST_TIME_SCALE);
  EXPECT_EQ(merged["tasks_reporting"], 1023);  // task 7's file is not a table
  ASSERT_EQ(merged["sites"].size(), 64u);
  for (const auto& row : merged["sites"]) {
    EXPECT_EQ(row["tasks"], 1023) << row.dump();
    EXPECT_THAT(row["site"].get<std::string>(), HasSubstr("a_call_site (call_sites_test.cpp:"));
  }
  std::uint64_t calls = 0;
  for (const auto& row : merged["sites"])
    calls += row["calls"].get<std::uint64_t>();
  EXPECT_EQ(calls, 1023u * 112u);
}

// What a collective call pays when call sites are recorded: one unwind of the stack and one
// probe of the table (the collectives themselves take tens of microseconds at least).
TEST(CallSites, ACallCostsAFewMicrosecondsOfCpu) {
  TempDir dir("cost");
  job_runtime::CallSites sites(0, dir.path.string(), nullptr);
  constexpr int kCalls = 20000;
  const double start = cpu_seconds();
  for (int i = 0; i < kCalls; ++i)
    sites.record({a_call_site(), "allreduce", "tree", "whole partition", 8, 8u << (i % 8), -1},
                 sites.start());
  const double took = cpu_seconds() - start;
  std::printf("one recorded call: %.2f us of CPU\n", took / kCalls * 1e6);
  EXPECT_EQ(sites.rows().size(), 8u);
  EXPECT_LT(took / kCalls, 50e-6);
}

TEST(CallSites, NoDirectoryNoTable) {
  ::unsetenv("BGL_SITES_DIR");
  virtual_time::Clock clock;
  EXPECT_EQ(job_runtime::CallSites::from_environment(0, &clock), nullptr);
}

// Real jobs: coll_scenarios sites calls collectives through collectives::Library (the library's
// choice) and through Communicator::run (the caller's program) from functions of its own.
struct Job {
  ProcessResult result;
  json stats;
};

Job run_sites(const std::vector<std::string>& extra, const std::string& name) {
  TempDir dir(name);
  const auto stats = dir.path / "stats.json";
  std::vector<std::string> args{"-np", "8", "--shape", "2x2x2", "--stats", stats.string()};
  args.insert(args.end(), extra.begin(), extra.end());
  args.push_back(COLL_SCENARIOS_PATH);
  args.push_back("sites");
  if (name == "many") args.push_back("300");
  Job job{run_bglrun(BGLRUN_PATH, args, 120), {}};
  if (fs::exists(stats)) job.stats = json::parse(read_file(stats.string()));
  // The tasks' directory next to the statistics is gone after the job.
  for (const auto& e : fs::directory_iterator(dir.path))
    EXPECT_EQ(e.path().filename(), "stats.json") << "left behind: " << e.path();
  return job;
}

TEST(CallSites, StatisticsNameEachSiteWithAlgorithmRuleAndTime) {
  const auto job = run_sites({"--virtual-time"}, "vt");
  ASSERT_EQ(job.result.exit_code, 0) << job.result.output;
  ASSERT_TRUE(job.stats.contains("collective_sites")) << job.result.output;
  const auto& cs = job.stats["collective_sites"];
  EXPECT_EQ(cs["tasks_reporting"], 8);
  EXPECT_EQ(cs["virtual_time"], true);
  EXPECT_EQ(cs["overflow"]["calls"], 0);
  const std::string source = COLL_SCENARIOS_SOURCE;
  struct Want {
    const char* call;
    const char* function;
    const char* op;
    const char* algorithm;
    const char* rule;
    std::uint64_t bytes;
    int root;
    std::uint64_t calls;
  };
  double slowest_total = 0;
  for (const Want& w :
       {Want{"library.run(group, Params::allreduce", "sites_through_library", "allreduce", "tree",
             "whole partition, supported type/op: collective network", 8, -1, 40},
        Want{"library.run(group, Params::bcast", "sites_through_library", "bcast", "tree",
             "whole partition: collective network", 1000, 0, 24},
        Want{"comm.run(prog, x, {{}, data});", "sites_direct", "bcast", "binomial",
             "the caller's program", 512, 1, 32}}) {
    const int line = line_of(source, w.call);
    ASSERT_GT(line, 0) << w.call;
    const auto& sites = cs["sites"];
    const auto it = std::ranges::find_if(
        sites, [&](const json& s) { return s["line"] == line && s["op"] == w.op; });
    ASSERT_NE(it, sites.end()) << "no row for line " << line << ": " << sites.dump(1);
    const auto& s = *it;
    EXPECT_THAT(s["function"].get<std::string>(), HasSubstr(w.function));
    EXPECT_EQ(fs::path(s["file"].get<std::string>()), fs::path(source).lexically_normal());
    EXPECT_EQ(s["site"], "(anonymous namespace)::" + std::string(w.function) +
                             " (coll_scenarios.cpp:" + std::to_string(line) + ")");
    EXPECT_EQ(s["algorithm"], w.algorithm);
    EXPECT_EQ(s["rule"], w.rule);
    EXPECT_EQ(s["comm_size"], 8);
    EXPECT_EQ(s["bytes"], w.bytes);
    EXPECT_EQ(s.contains("root") ? s["root"].get<int>() : -1, w.root);
    EXPECT_EQ(s["tasks"], 8);
    EXPECT_EQ(s["calls"], w.calls);
    // Times agree with the statistics: no task spent more at a row than the job took, on the
    // host or on its BG/L clock.
    const double host = s["host_seconds"], slowest = s["host_seconds_slowest_task"];
    EXPECT_GT(host, 0.0);
    EXPECT_LE(slowest, host);
    EXPECT_LE(slowest, job.stats["job"]["host_seconds"].get<double>());
    slowest_total += slowest;
    EXPECT_GT(s["virtual_seconds"].get<double>(), 0.0);
    EXPECT_LE(s["virtual_seconds_slowest_task"].get<double>(),
              job.stats["virtual_time"]["predicted_seconds"].get<double>());
    EXPECT_LE(s["host_call_seconds_min"].get<double>(), s["host_call_seconds_max"].get<double>());
  }
  EXPECT_LE(slowest_total, job.stats["job"]["host_seconds"].get<double>());
  // The terminal summary names the busiest sites.
  EXPECT_THAT(job.result.output, HasSubstr("collective call sites"));
  EXPECT_THAT(job.result.output, HasSubstr("sites_through_library (coll_scenarios.cpp:"));
}

TEST(CallSites, AFullTableIsCountedAndSaid) {
  const auto job = run_sites({}, "many");
  ASSERT_EQ(job.result.exit_code, 0) << job.result.output;
  const auto& cs = job.stats["collective_sites"];
  // 3 rows of sites_through_library and sites_direct, then 300 sizes: 47 calls a task find no row.
  EXPECT_EQ(cs["overflow"]["tasks"], 8);
  EXPECT_EQ(cs["overflow"]["calls"], 8 * 47);
  EXPECT_EQ(cs["sites"].size(), job_runtime::CallSites::kCapacity);
  EXPECT_EQ(cs["virtual_time"], false);
  EXPECT_FALSE(cs["sites"][0].contains("virtual_seconds"));
  EXPECT_THAT(job.result.output,
              HasSubstr("collective call sites: 8 task(s) (first: rank 0) filled their table of "
                        "256 rows; 376 later calls"));
}

TEST(CallSites, TheTraceCarriesThemToo) {
  TempDir dir("trace");
  const auto trace = dir.path / "run.trace.json";
  const auto r = run_bglrun(
      BGLRUN_PATH,
      {"-np", "8", "--shape", "2x2x2", "--trace", trace.string(), COLL_SCENARIOS_PATH, "sites"},
      120);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto t = json::parse(read_file(trace.string()));
  const auto& cs = t["otherData"]["collective_sites"];
  EXPECT_EQ(cs["tasks_reporting"], 8);
  EXPECT_GE(cs["sites"].size(), 3u);
}

}  // namespace
}  // namespace bgl::test
