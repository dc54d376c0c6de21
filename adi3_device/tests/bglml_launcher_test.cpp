// libbglml without MPICH: its collective hooks driven by a C program the way the netmod drives
// them, in real jobs started by bglrun.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "process_runner.hpp"

namespace {

using bgl::test::ProcessResult;
using ::testing::HasSubstr;

ProcessResult bglrun(std::vector<std::string> args, double timeout) {
  return bgl::test::run_bglrun(BGLRUN_PATH, std::move(args), timeout);
}

void expect_ok(const ProcessResult& r) {
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_FALSE(r.timed_out) << r.output;
  EXPECT_THAT(r.output, Not(HasSubstr("CHECK FAILED")));
  EXPECT_THAT(r.output, HasSubstr("coll_hooks: ok"));
}

TEST(CollHooks, AsTheNetmodCallsThem) {
  expect_ok(bglrun({"-np", "8", "--shape", "2x2x2", COLL_HOOKS_TEST_PATH}, 120));
}

TEST(CollHooks, VirtualNodeModeAndAnOddJob) {
  expect_ok(bglrun({"-np", "6", "--shape", "3x1x1", "--mode", "vn", COLL_HOOKS_TEST_PATH}, 120));
}

// bglrun --trace: the MPI calls the netmod's hook reported, one span each on every task's
// timeline: named by the MPI function, in order, without the calls made inside another call or
// from another thread, with the arguments noted for their own kind of call, MPI_Init from the
// timeline's opening and MPI_Finalize until its close.
TEST(NmTrace, OutermostMpiCallsAreSpansWithTheirArguments) {
  namespace fs = std::filesystem;
  using nlohmann::json;
  const auto path =
      (fs::temp_directory_path() / ("bgl_nm_trace." + std::to_string(getpid()) + ".json")).string();
  const auto r = bglrun({"-np", "4", "--shape", "2x2x1", "--trace", path, NM_TRACE_TEST_PATH}, 60);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("nm_trace: ok"));
  const auto trace = json::parse(bgl::test::read_file(path));
  fs::remove(path);
  std::map<int, std::vector<json>> calls;
  for (const auto& e : trace.at("traceEvents"))
    if (e.at("ph") != "M" && e.at("cat") == "mpi") calls[e.at("pid").get<int>()].push_back(e);
  ASSERT_EQ(calls.size(), 4u) << trace.dump(1).substr(0, 2000);
  for (auto& [rank, list] : calls) {
    std::stable_sort(list.begin(), list.end(), [](const json& a, const json& b) {
      return a.at("ts").get<double>() < b.at("ts").get<double>();
    });
    std::vector<std::string> names;
    for (const auto& e : list) {
      EXPECT_EQ(e.at("ph"), "X") << e.dump();
      names.push_back(e.at("name"));
    }
    EXPECT_EQ(names, (std::vector<std::string>{"MPI_Init", "MPI_Comm_rank", "MPI_Comm_split",
                                               "MPI_Allreduce", "MPI_Send_c", "MPIX_Grequest_start",
                                               "MPI_Bcast", "MPI_Finalize"}))
        << "rank " << rank;
    ASSERT_EQ(list.size(), 8u);
    for (std::size_t i = 0; i + 1 < list.size(); ++i)
      EXPECT_LE(list[i]["ts"].get<double>() + list[i]["dur"].get<double>(),
                list[i + 1]["ts"].get<double>() + 1e-3)
          << "rank " << rank << ": " << list[i].dump();
    const json none = json::object();
    EXPECT_EQ(list[0].value("args", none), none);
    EXPECT_EQ(list[2].value("args", none), none);  // the notes of calls inside it do not count
    EXPECT_EQ(list[3].value("args", none), (json{{"bytes", 8}, {"comm_size", 4}}));
    EXPECT_EQ(list[4].value("args", none),
              (json{{"peer", (rank + 1) % 4}, {"bytes", 64}, {"comm_size", 4}}));
    EXPECT_EQ(list[6].value("args", none), (json{{"peer", 0}, {"bytes", 3000}, {"comm_size", 4}}));
    // MPI_Finalize holds the barrier; it ended when the timeline closed.
    EXPECT_GT(list[7]["dur"].get<double>(), 0.0);
  }
  // Without --trace there is no hook.
  const auto off = bglrun({"-np", "2", "--shape", "2x1x1", NM_TRACE_TEST_PATH}, 60);
  EXPECT_EQ(off.exit_code, 0) << off.output;
  EXPECT_THAT(off.output, HasSubstr("nm_trace: off"));
}

}  // namespace
