// The verifier catches each class of defect it promises to catch, with a message naming the rank
// and step.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "bgl/collectives/verifier.hpp"

namespace bgl::collectives {
namespace {

using ::testing::HasSubstr;

Schedule empty(int p) {
  Schedule s;
  s.algorithm = "handmade";
  for (int r = 0; r < p; ++r)
    s.programs.emplace_back(r);
  return s;
}

// A correct 2-rank broadcast as a starting point for each broken variant.
TEST(Verifier, AcceptsCorrectBroadcast) {
  const Params x = Params::bcast(2, 0, 16);
  Schedule s = empty(2);
  s.programs[0].send(1, recv_buf(0, 16), 0);
  s.programs[1].recv(0, recv_buf(0, 16), 0);
  const VerifyResult r = verify(s, x);
  EXPECT_TRUE(r.ok) << r.summary();
  EXPECT_EQ(r.rounds, 1);
  ASSERT_EQ(r.transfers.size(), 1u);
  EXPECT_EQ(r.transfers[0].bytes, 16u);
}

TEST(Verifier, ReportsMissingData) {
  const Params x = Params::bcast(3, 0, 8);
  Schedule s = empty(3);
  s.programs[0].send(1, recv_buf(0, 8), 0);
  s.programs[1].recv(0, recv_buf(0, 8), 0);
  const VerifyResult r = verify(s, x);
  ASSERT_FALSE(r.ok);
  EXPECT_THAT(r.summary(), HasSubstr("rank 2 ends with recv[0] = undefined"));
}

TEST(Verifier, ReportsWrongPlacement) {
  const Params x = Params::bcast(2, 0, 8);
  Schedule s = empty(2);
  s.programs[0].send(1, recv_buf(4, 4), 0);
  s.programs[0].send(1, recv_buf(0, 4), 1);
  s.programs[1].recv(0, recv_buf(0, 4), 0);
  s.programs[1].recv(0, recv_buf(4, 4), 1);
  const VerifyResult r = verify(s, x);
  ASSERT_FALSE(r.ok);
  EXPECT_THAT(r.summary(), HasSubstr("expected byte 0 of rank 0"));
}

TEST(Verifier, ReportsDeadlock) {
  // Both ranks receive before they send.
  const Params x = Params::allgather({4, 4});
  Schedule s = empty(2);
  for (int r = 0; r < 2; ++r) {
    Program& p = s.programs[static_cast<std::size_t>(r)];
    const StepId c = p.copy(recv_buf(4 * r, 4), send_buf(0, 4));
    const StepId g = p.recv(1 - r, recv_buf(4 * (1 - r), 4), 0);
    p.send(1 - r, send_buf(0, 4), 0, {g, c});
  }
  const VerifyResult r = verify(s, x);
  ASSERT_FALSE(r.ok);
  EXPECT_THAT(r.summary(), HasSubstr("deadlock"));
}

TEST(Verifier, ReportsOverrun) {
  const Params x = Params::bcast(2, 0, 8);
  Schedule s = empty(2);
  s.programs[0].send(1, recv_buf(0, 8), 0);
  s.programs[1].recv(0, recv_buf(4, 8), 0);
  const VerifyResult r = verify(s, x);
  ASSERT_FALSE(r.ok);
  EXPECT_THAT(r.summary(), HasSubstr("overruns the 8-byte recv buffer"));
  EXPECT_THAT(r.summary(), HasSubstr("rank 1 step 0"));
}

TEST(Verifier, ReportsScratchOverrunAndSendBufferWrite) {
  const Params x = Params::allreduce(2, 2, DataType::i32, ReduceOp::sum);
  Schedule s = empty(2);
  s.programs[0].scratch_bytes = 4;
  s.programs[0].copy(scratch_buf(0, 8), send_buf(0, 8));
  s.programs[1].copy(send_buf(0, 8), recv_buf(0, 8));
  const VerifyResult r = verify(s, x);
  ASSERT_FALSE(r.ok);
  EXPECT_THAT(r.summary(), HasSubstr("overruns the 4-byte scratch buffer"));
  EXPECT_THAT(r.summary(), HasSubstr("writes the user's send buffer"));
}

TEST(Verifier, ReportsUnmatchedAndSizeMismatch) {
  const Params x = Params::bcast(3, 0, 8);
  Schedule s = empty(3);
  s.programs[0].send(1, recv_buf(0, 8), 0);
  s.programs[1].recv(0, recv_buf(0, 4), 0);
  s.programs[2].recv(0, recv_buf(0, 8), 9);
  const VerifyResult r = verify(s, x);
  ASSERT_FALSE(r.ok);
  EXPECT_THAT(r.summary(), HasSubstr("sends 8 bytes but rank 1 step 0"));
  EXPECT_THAT(r.summary(), HasSubstr("no matching send at rank 0"));
}

TEST(Verifier, ReportsDoubleCountedContribution) {
  // Rank 1 adds rank 0's data twice.
  const Params x = Params::allreduce(2, 1, DataType::i32, ReduceOp::sum);
  Schedule s = empty(2);
  Program& a = s.programs[0];
  a.send(1, send_buf(0, 4), 0);
  a.send(1, send_buf(0, 4), 1);
  Program& b = s.programs[1];
  b.scratch_bytes = 8;
  const StepId c = b.copy(recv_buf(0, 4), send_buf(0, 4));
  const StepId r0 = b.recv(0, scratch_buf(0, 4), 0);
  const StepId r1 = b.recv(0, scratch_buf(4, 4), 1);
  const StepId s0 = b.reduce(recv_buf(0, 4), scratch_buf(0, 4), {c, r0});
  b.reduce(recv_buf(0, 4), scratch_buf(4, 4), {s0, r1});
  const VerifyResult r = verify(s, x);
  ASSERT_FALSE(r.ok);
  EXPECT_THAT(r.summary(), HasSubstr("counts a rank's contribution twice"));
}

TEST(Verifier, ReportsRace) {
  Schedule t = empty(2);
  const Params y = Params::allgather({4, 4});
  for (int q = 0; q < 2; ++q) {
    Program& p = t.programs[static_cast<std::size_t>(q)];
    p.copy(recv_buf(4 * q, 4), send_buf(0, 4));
    p.recv(1 - q, recv_buf(4 * q, 4), 0);  // overwrites its own block: races with the copy
    p.send(1 - q, send_buf(0, 4), 0);
  }
  const VerifyResult w = verify(t, y);
  ASSERT_FALSE(w.ok);
  EXPECT_THAT(w.summary(), HasSubstr("with no dependency path"));
}

TEST(Verifier, ReportsUndefinedRead) {
  const Params x = Params::bcast(2, 0, 8);
  Schedule s = empty(2);
  s.programs[0].send(1, recv_buf(0, 8), 0);
  s.programs[1].scratch_bytes = 8;
  const StepId g = s.programs[1].recv(0, recv_buf(0, 8), 0);
  s.programs[1].copy(recv_buf(0, 8), scratch_buf(0, 8), {g});
  const VerifyResult r = verify(s, x);
  ASSERT_FALSE(r.ok);
  EXPECT_THAT(r.summary(), HasSubstr("reads undefined byte scratch[0] of rank 1"));
}

TEST(Verifier, ForwardDependencyRejected) {
  const Params x = Params::barrier(1);
  Schedule s = empty(1);
  Step st;
  st.kind = StepKind::gi_barrier;
  st.deps = {0};
  s.programs[0].add(st);
  const VerifyResult r = verify(s, x);
  ASSERT_FALSE(r.ok);
  EXPECT_THAT(r.summary(), HasSubstr("not an earlier step"));
}

TEST(Verifier, HardwareStepsNeedTheWholePartition) {
  Params x = Params::barrier(2);
  Schedule s = empty(2);
  s.programs[0].gi_barrier();
  s.programs[1].gi_barrier();
  EXPECT_FALSE(verify(s, x).ok);
  x.topology.whole_partition = true;
  const VerifyResult r = verify(s, x);
  EXPECT_TRUE(r.ok) << r.summary();
}

TEST(Verifier, BarrierMustHearFromEveryone) {
  // Rank 0 tells rank 1 it arrived, but rank 0 leaves without hearing from rank 1.
  const Params x = Params::barrier(2);
  Schedule s = empty(2);
  s.programs[0].send(1, recv_buf(0, 0), 0);
  s.programs[1].recv(0, recv_buf(0, 0), 0);
  const VerifyResult r = verify(s, x);
  ASSERT_FALSE(r.ok);
  EXPECT_THAT(r.summary(), HasSubstr("rank 0 finishes without having heard"));
}

TEST(Verifier, TreeAllreduceCombinesEveryone) {
  Params x = Params::allreduce(4, 2, DataType::i64, ReduceOp::sum);
  x.topology.whole_partition = true;
  Schedule s = empty(4);
  for (auto& p : s.programs)
    p.tree_allreduce(send_buf(0, 16), recv_buf(0, 16));
  const VerifyResult r = verify(s, x);
  EXPECT_TRUE(r.ok) << r.summary();
  // A rank using a different size is caught before running.
  s.programs[2] = Program(2);
  s.programs[2].tree_allreduce(send_buf(0, 8), recv_buf(0, 8));
  EXPECT_THAT(verify(s, x).summary(), HasSubstr("differs from rank 0's"));
}

// Every rank's block lands at its place in everyone's result, uneven blocks too; a step that does
// not take exactly this rank's block into the whole result is refused before running.
TEST(Verifier, TreeAllgatherPlacesEveryBlock) {
  Params x = Params::allgather({3, 0, 5, 8});
  x.topology.whole_partition = true;
  Schedule s = empty(4);
  for (int r = 0; r < 4; ++r)
    s.programs[static_cast<std::size_t>(r)].tree_allgather(send_buf(0, x.send_bytes(r)),
                                                           recv_buf(0, x.recv_bytes(r)));
  const VerifyResult r = verify(s, x);
  EXPECT_TRUE(r.ok) << r.summary();
  s.programs[2] = Program(2);
  s.programs[2].tree_allgather(send_buf(0, 4), recv_buf(0, 16));
  EXPECT_THAT(verify(s, x).summary(), HasSubstr("takes this rank's block (5 bytes)"));
  const Params reduce = Params::allreduce(4, 2, DataType::i64, ReduceOp::sum);
  Schedule t = empty(4);
  for (auto& p : t.programs)
    p.tree_allgather(send_buf(0, 16), recv_buf(0, 16));
  Params whole = reduce;
  whole.topology.whole_partition = true;
  EXPECT_FALSE(verify(t, whole).ok) << "an allgather step in an allreduce schedule";
}

TEST(Verifier, LineSendDeliversToEveryReceiver) {
  const Params x = Params::bcast(4, 0, 8);
  Schedule s = empty(4);
  s.programs[0].line_send(torus_emu::Direction::x_plus, {1, 2, 3}, recv_buf(0, 8), 0);
  for (int r = 1; r < 4; ++r)
    s.programs[static_cast<std::size_t>(r)].recv(0, recv_buf(0, 8), 0);
  const VerifyResult r = verify(s, x);
  EXPECT_TRUE(r.ok) << r.summary();
  ASSERT_EQ(r.transfers.size(), 1u);
  EXPECT_EQ(r.transfers[0].receivers, (std::vector<int>{1, 2, 3}));
}

}  // namespace
}  // namespace bgl::collectives
