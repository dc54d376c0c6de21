// Real multi-process runs of every algorithm through the executor and the message layer, started
// by bglrun; each task compares its results with a locally computed reference.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "process_runner.hpp"

namespace {

using bgl::test::ProcessResult;
using ::testing::ContainsRegex;
using ::testing::HasSubstr;

ProcessResult bglrun(std::vector<std::string> args, double timeout) {
  return bgl::test::run_bglrun(BGLRUN_PATH, std::move(args), timeout);
}

void expect_ok(const ProcessResult& r) {
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_FALSE(r.timed_out) << r.output;
  EXPECT_THAT(r.output, Not(HasSubstr("CHECK FAILED")));
}

TEST(CollWorld, EveryAlgorithmOn4x2x1) {
  const auto r = bglrun({"-np", "8", "--shape", "4x2x1", COLL_SCENARIOS_PATH, "world"}, 150);
  expect_ok(r);
  EXPECT_THAT(r.output, HasSubstr("coll: world bcast binomial ok"));
  EXPECT_THAT(r.output, HasSubstr("coll: world alltoall post_all ok"));
  // MPICH's defaults that the library gained for comparisons.
  EXPECT_THAT(r.output, HasSubstr("coll: world alltoall bruck ok"));
  EXPECT_THAT(r.output, HasSubstr("coll: world bcast scatter_rd_allgather ok"));
  EXPECT_THAT(r.output, HasSubstr("coll: world allreduce rabenseifner ok"));
  // BG/L's algorithms: collective network, global interrupt, deposit-bit routes, injection.
  EXPECT_THAT(r.output, HasSubstr("coll: world bcast tree ok"));
  EXPECT_THAT(r.output, HasSubstr("coll: world allreduce tree ok"));
  EXPECT_THAT(r.output, HasSubstr("coll: world reduce tree ok"));
  EXPECT_THAT(r.output, HasSubstr("coll: world allgather tree ok"));
  EXPECT_THAT(r.output, HasSubstr("coll: world barrier gi ok"));
  EXPECT_THAT(r.output, HasSubstr("coll: world bcast torus3 ok"));
  EXPECT_THAT(r.output, HasSubstr("coll: world alltoall controlled ok"));
  // The root's X line reaches three nodes: real deposit-bit multicasts, not unicasts.
  EXPECT_THAT(r.output, ContainsRegex("torus3 deposit-bit copies [1-9][0-9]*"));
}

TEST(CollWorld, OddSizeOn3x2x1) {
  const auto r = bglrun({"-np", "6", "--shape", "3x2x1", COLL_SCENARIOS_PATH, "world"}, 150);
  expect_ok(r);
  EXPECT_THAT(r.output, HasSubstr("coll: world allgather bruck ok"));
  EXPECT_THAT(r.output, HasSubstr("coll: world allgather tree ok"));
  EXPECT_THAT(r.output, HasSubstr("coll: world bcast torus3 ok"));
  EXPECT_THAT(r.output, ContainsRegex("torus3 deposit-bit copies [1-9][0-9]*"));
}

TEST(CollLines, DepositBitMulticastAndFallback) {
  const auto r = bglrun({"-np", "8", "--shape", "4x2x1", COLL_SCENARIOS_PATH, "lines"}, 120);
  expect_ok(r);
  EXPECT_THAT(r.output, HasSubstr("coll: lines ok (30 runs)"));
}

TEST(CollLibrary, CallsOfTheSameTotalButOtherBlocksGetTheirOwnProgram) {
  const auto r = bglrun({"-np", "6", "--shape", "3x2x1", COLL_SCENARIOS_PATH, "library"}, 120);
  expect_ok(r);
  EXPECT_THAT(r.output, HasSubstr("coll: library ok"));
}

TEST(CollSplit, TwoConcurrentCommunicators) {
  const auto r = bglrun({"-np", "10", "--shape", "5x2x1", COLL_SCENARIOS_PATH, "split"}, 150);
  expect_ok(r);
  EXPECT_THAT(r.output, HasSubstr("coll: split allreduce recursive_doubling ok"));
  // Not the whole partition: no collective-network algorithm may run.
  EXPECT_THAT(r.output, Not(HasSubstr(" tree ok")));
  EXPECT_THAT(r.output, Not(HasSubstr(" gi ok")));
}

TEST(CollWorld, TwoHostsUseTheTreeAndTheGlobalInterruptToo) {
  // The job split over two emulated hosts (libfabric on loopback): the collective-network and
  // global-interrupt algorithms must give the same results as on one host.
  const auto r = bglrun({"--hosts", "2", "-np", "8", "--shape", "4x2x1", COLL_SCENARIOS_PATH,
                         "world", "bcast,reduce,allreduce,allgather,barrier"},
                        150);
  expect_ok(r);
  EXPECT_THAT(r.output, HasSubstr("coll: world bcast tree ok"));
  EXPECT_THAT(r.output, HasSubstr("coll: world allreduce tree ok"));
  EXPECT_THAT(r.output, HasSubstr("coll: world reduce tree ok"));
  EXPECT_THAT(r.output, HasSubstr("coll: world allgather tree ok"));
  EXPECT_THAT(r.output, HasSubstr("coll: world barrier gi ok"));
}

TEST(CollWorld, VirtualNodeMode) {
  const auto r = bglrun({"-np", "8", "--shape", "2x2x1", "--mode", "vn", COLL_SCENARIOS_PATH,
                         "world", "bcast,allreduce,allgather,alltoall"},
                        150);
  expect_ok(r);
  EXPECT_THAT(r.output, HasSubstr("coll: world allgather tree ok"));
}

}  // namespace
