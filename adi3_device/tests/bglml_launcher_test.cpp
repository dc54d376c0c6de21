// libbglml without MPICH: its collective hooks driven by a C program the way the netmod drives
// them, in real jobs started by bglrun.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

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

}  // namespace
