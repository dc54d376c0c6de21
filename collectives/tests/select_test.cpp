// The library's selection: BGL_COLL_<OP> overrides, and the table of MPICH 4.0.2's own choices
// that the benchmarks compare against.
#include <gtest/gtest.h>

#include <cstdlib>

#include "bgl/collectives/select.hpp"
#include "bgl/torus_emu/error.hpp"

namespace bgl::collectives {
namespace {

// MPICH 4.0.2, src/maint/tuning/coll/mpir/generic.json (intra-communicator, no node hierarchy).
TEST(MpichDefault, FollowsMpichsThresholds) {
  EXPECT_EQ(mpich_default(Params::bcast(64, 0, 12288)).algorithm, "binomial");
  EXPECT_EQ(mpich_default(Params::bcast(64, 0, 32768)).algorithm, "scatter_rd_allgather");
  EXPECT_EQ(mpich_default(Params::bcast(48, 0, 32768)).algorithm, "scatter_allgather");
  EXPECT_EQ(mpich_default(Params::bcast(64, 0, 1 << 20)).algorithm, "scatter_allgather");
  EXPECT_EQ(mpich_default(Params::bcast(4, 0, 1 << 20)).algorithm, "binomial");
  EXPECT_EQ(mpich_default(Params::allreduce(64, 1, DataType::i64, ReduceOp::sum)).algorithm,
            "recursive_doubling");
  EXPECT_EQ(mpich_default(Params::allreduce(64, 32, DataType::i64, ReduceOp::sum)).algorithm,
            "recursive_doubling");  // count < pof2(64)
  EXPECT_EQ(mpich_default(Params::allreduce(64, 64, DataType::i64, ReduceOp::sum)).algorithm,
            "rabenseifner");
  EXPECT_EQ(mpich_default(Params::alltoall(8, 256)).algorithm, "bruck");
  EXPECT_EQ(mpich_default(Params::alltoall(4, 256)).algorithm, "post_all");
  EXPECT_EQ(mpich_default(Params::alltoall(64, 32768)).algorithm, "post_all");
  EXPECT_EQ(mpich_default(Params::alltoall(64, 32769)).algorithm, "pairwise");
  EXPECT_EQ(mpich_default(Params::allgather(std::vector<std::uint64_t>(64, 4096))).algorithm,
            "recursive_doubling");
  EXPECT_EQ(mpich_default(Params::allgather(std::vector<std::uint64_t>(64, 8192))).algorithm,
            "ring");  // 512 KiB in total
  EXPECT_EQ(mpich_default(Params::allgather(std::vector<std::uint64_t>(12, 1024))).algorithm,
            "bruck");
  EXPECT_EQ(mpich_default(Params::barrier(64)).algorithm, "dissemination");
  const MpichChoice big_reduce =
      mpich_default(Params::reduce(64, 0, 1 << 16, DataType::i64, ReduceOp::sum));
  EXPECT_TRUE(big_reduce.algorithm.empty());
  EXPECT_EQ(big_reduce.mpich_name, "reduce_scatter_gather");
}

TEST(MpichDefault, NamesRegisteredApplicableAlgorithms) {
  for (int p : {2, 5, 8, 12, 16, 64})
    for (std::uint64_t n : {8u, 256u, 4096u, 65536u, 1u << 20}) {
      for (const Params& x : {Params::bcast(p, 0, n), Params::alltoall(p, n),
                              Params::allreduce(p, n / 8, DataType::i64, ReduceOp::sum),
                              Params::allgather(std::vector<std::uint64_t>(p, n))}) {
        const MpichChoice c = mpich_default(x);
        if (c.algorithm.empty()) continue;
        const Algorithm* a = find_algorithm(x.op, c.algorithm);
        ASSERT_NE(a, nullptr) << c.algorithm;
        EXPECT_EQ(a->applicable(x), "") << c.algorithm << " p=" << p << " n=" << n;
      }
    }
}

TEST(Select, OverrideNamesTheValidAlgorithms) {
  ::setenv("BGL_COLL_ALLTOALL", "no_such", 1);
  try {
    select_algorithm(Params::alltoall(8, 64));
    ADD_FAILURE() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("bruck"), std::string::npos) << e.what();
  }
  ::setenv("BGL_COLL_ALLTOALL", "bruck", 1);
  EXPECT_EQ(select_algorithm(Params::alltoall(8, 64)).algorithm->name, "bruck");
  ::unsetenv("BGL_COLL_ALLTOALL");
}

TEST(DefaultSelection, AlltoallOfTinyBlocksOnManyRanksIsBruck) {
  ::unsetenv("BGL_COLL_ALLTOALL");
  EXPECT_EQ(select_algorithm(Params::alltoall(64, 8)).algorithm->name, "post_all");
  EXPECT_EQ(select_algorithm(Params::alltoall(128, 8)).algorithm->name, "bruck");
  EXPECT_EQ(select_algorithm(Params::alltoall(512, 64)).algorithm->name, "bruck");
  EXPECT_EQ(select_algorithm(Params::alltoall(512, 65)).algorithm->name, "post_all");
}

// A small allgather of the whole partition is one collective-network operation; a larger one, or
// one on part of the partition, takes the torus algorithms' log p steps or the ring.
TEST(DefaultSelection, SmallWholePartitionAllgatherIsTheTree) {
  ::unsetenv("BGL_COLL_ALLGATHER");
  const auto name = [](int p, std::uint64_t block, bool whole) {
    Params x = Params::allgather(std::vector<std::uint64_t>(static_cast<std::size_t>(p), block));
    x.topology.whole_partition = whole;
    return std::string(select_algorithm(x).algorithm->name);
  };
  EXPECT_EQ(name(64, 8, true), "tree");
  EXPECT_EQ(name(64, 1024, true), "tree");  // 64 KiB gathered
  EXPECT_EQ(name(64, 1025, true), "recursive_doubling");
  EXPECT_EQ(name(64, 2048, true), "ring");
  EXPECT_EQ(name(8, 8192, true), "tree");
  EXPECT_EQ(name(8, 8193, true), "recursive_doubling");
  EXPECT_EQ(name(64, 8, false), "recursive_doubling");
}

// Bruck's program moves runs of blocks and depends only on the steps that touched the same
// slots: its steps and dependencies grow as p log p (p^2 dependencies made a 512-rank call cost
// seconds of CPU in the executor).
TEST(DefaultSelection, BrucksProgramGrowsAsPLogP) {
  for (int p : {128, 512, 1024}) {
    const Params x = Params::alltoall(p, 8);
    const Program prog = find_algorithm(Collective::alltoall, "bruck")->generate(x, p / 3);
    std::size_t deps = 0;
    for (StepId id = 0; id < prog.size(); ++id)
      deps += prog.step(id).deps.size();
    int log_p = 0;
    while ((1 << log_p) < p)
      ++log_p;
    EXPECT_LE(prog.size(), static_cast<std::size_t>(3 * p + 2 * log_p)) << "p = " << p;
    EXPECT_LE(deps, static_cast<std::size_t>(4 * p * log_p)) << "p = " << p;
  }
}

}  // namespace
}  // namespace bgl::collectives
