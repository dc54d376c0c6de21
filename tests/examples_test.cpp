// The shipped examples run at every size the launcher accepts: torus_demo (every task greets every
// other task) at a small size with its output checked, and at 512 tasks, twice what a reception
// FIFO holds, where sending everything before receiving used to deadlock.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <sstream>
#include <string>

#include "process_runner.hpp"

namespace bgl::test {
namespace {

using ::testing::HasSubstr;

const std::string kBglrun = BGLRUN_PATH;
const std::string kTorusDemo = TORUS_DEMO_PATH;

// Runs torus_demo on `shape` with `tasks` tasks and checks what every rank reports: a greeting from
// every other rank, and the deposit-bit packet on the nodes of rank 0's +x line.
void expect_torus_demo(int tasks, const std::string& shape, int x_extent, double timeout) {
  const auto r =
      run_bglrun(kBglrun, {"-np", std::to_string(tasks), "--shape", shape, kTorusDemo}, timeout);
  ASSERT_FALSE(r.timed_out) << "torus_demo hung at " << tasks << " tasks";
  ASSERT_EQ(r.exit_code, 0) << r.output.substr(0, 4000);
  std::istringstream lines(r.output);
  std::string line;
  const std::regex report(R"(^rank (\d+) at .* received (\d+) packets:$)");
  std::map<int, int> received;
  int greetings = 0, deposits = 0;
  while (std::getline(lines, line)) {
    std::smatch m;
    if (std::regex_match(line, m, report)) received[std::stoi(m[1])] = std::stoi(m[2]);
    greetings += line.find("\"hello from rank ") != std::string::npos;
    deposits += line.find("\"deposit-bit broadcast along +x\"") != std::string::npos;
  }
  ASSERT_EQ(received.size(), static_cast<std::size_t>(tasks)) << "every rank reports";
  for (const auto& [rank, n] : received)
    EXPECT_TRUE(n == tasks - 1 || n == tasks) << "rank " << rank << " received " << n;
  EXPECT_EQ(greetings, tasks * (tasks - 1));
  EXPECT_EQ(deposits, x_extent - 1) << "one copy on every other node of rank 0's +x line";
}

TEST(Examples, TorusDemoEightTasks) {
  expect_torus_demo(8, "2x2x2", 2, 60);
}

// 256 tasks and more: more greetings arrive at a task than its reception FIFO holds.
TEST(Examples, HeavyTorusDemo512Tasks) {
  expect_torus_demo(512, "8x8x8", 8, 240);
}

}  // namespace
}  // namespace bgl::test
