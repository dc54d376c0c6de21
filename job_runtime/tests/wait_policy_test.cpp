#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>

#include "bgl/job_runtime/backoff.hpp"

namespace bgl::job_runtime {
namespace {

using namespace std::chrono_literals;

// The defaults by tasks per core, with the variables that override them unset.
class WaitPolicyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* v : {"BGL_SPIN", "BGL_YIELD", "BGL_SLEEP_US"})
      unsetenv(v);
  }
  const int cores = static_cast<int>(usable_cores());
};

TEST_F(WaitPolicyTest, AtMostOneTaskACoreSpinsYieldsAndRechecksEvery10Ms) {
  const auto p = WaitPolicy::for_job(cores);
  EXPECT_EQ(p.spin_rounds, 500);
  EXPECT_EQ(p.yield_rounds, 200);
  EXPECT_EQ(p.max_sleep, 10ms);
  EXPECT_FALSE(p.yield_on_empty_poll);
}

TEST_F(WaitPolicyTest, UpToEightTasksACoreYieldBeforeSleeping) {
  for (const int per_core : {2, 4, kYieldingTasksPerCore}) {
    const auto p = WaitPolicy::for_job(per_core * cores);
    EXPECT_EQ(p.spin_rounds, 0) << per_core;
    EXPECT_EQ(p.yield_rounds, 200) << per_core;
    EXPECT_TRUE(p.yield_on_empty_poll) << per_core;
  }
}

TEST_F(WaitPolicyTest, AboveEightTasksACoreSleepAtOnce) {
  for (const int per_core : {kYieldingTasksPerCore + 1, 32, 512}) {
    const auto p = WaitPolicy::for_job(per_core * cores);
    EXPECT_EQ(p.spin_rounds, 0) << per_core;
    EXPECT_EQ(p.yield_rounds, 0) << per_core;
  }
}

// Each sleeper's re-check is a context switch on a shared core: the period grows with the tasks
// per core, up to the longest that the deadlock detection's window allows.
TEST_F(WaitPolicyTest, RecheckPeriodGrowsWithTasksPerCoreUpToItsBound) {
  EXPECT_EQ(WaitPolicy::for_job(2 * cores).max_sleep, 20ms);
  EXPECT_EQ(WaitPolicy::for_job(8 * cores).max_sleep, 80ms);
  EXPECT_EQ(WaitPolicy::for_job(8 * cores + 1).max_sleep, 90ms);  // rounded up
  EXPECT_EQ(WaitPolicy::for_job(512 * cores).max_sleep, kLongestRecheck);
  EXPECT_LE(kLongestRecheck, 1s);  // several re-checks within the default 3 s window
}

TEST_F(WaitPolicyTest, VirtualTimeJobsKeepSpinningAndYielding) {
  const auto p = WaitPolicy::for_job(64 * cores, true);
  EXPECT_EQ(p.spin_rounds, 64);
  EXPECT_EQ(p.yield_rounds, 4);
  EXPECT_EQ(p.max_sleep, kLongestRecheck);
}

TEST_F(WaitPolicyTest, VariablesOverrideTheDefaults) {
  setenv("BGL_SPIN", "7", 1);
  setenv("BGL_YIELD", "3", 1);
  setenv("BGL_SLEEP_US", "1500", 1);
  const auto p = WaitPolicy::for_job(512 * cores);
  EXPECT_EQ(p.spin_rounds, 7);
  EXPECT_EQ(p.yield_rounds, 3);
  EXPECT_EQ(p.max_sleep, 1500us);
  unsetenv("BGL_SPIN");
  unsetenv("BGL_YIELD");
  unsetenv("BGL_SLEEP_US");
}

}  // namespace
}  // namespace bgl::job_runtime
