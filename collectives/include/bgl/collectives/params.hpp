#pragma once
// What a generator is asked to schedule.
//
// Buffer conventions (byte offsets; every rank knows all counts, as in MPI's v-collectives):
//   bcast           recv holds `bytes()` bytes on every rank; the root's are the input.
//   reduce          send: bytes() input on every rank; recv: the result, on the root only.
//   allreduce       send: bytes() input; recv: the result, everywhere.
//   reduce_scatter  send: sum(counts) input; recv: counts[rank] bytes, block `rank` of the result.
//   allgather       send: counts[rank] bytes; recv: all blocks, block i at displ(i) = sum
//   counts[<i]. alltoall        counts has p*p entries, counts[i*p + j] = bytes from i to j
//   (alltoallv), or one
//                   entry (the same block size for every pair). send: rank's blocks for j = 0..p-1
//                   in order; recv: the blocks from i = 0..p-1 in order.
//   barrier         no data; counts is empty.
// For the reductions `bytes()` is a multiple of size_of(dtype).
#include <cstdint>
#include <string>
#include <vector>

#include "bgl/collectives/types.hpp"
#include "bgl/torus_emu/mapping.hpp"

namespace bgl::collectives {

// Where the communicator's ranks live on the machine. Optional: generators that do not use the
// topology ignore it, topology-aware ones report themselves not applicable without it.
struct Topology {
  const torus_emu::Mapping* mapping = nullptr;  // the job's rank -> (x, y, z, t) mapping
  std::vector<int> world_ranks;                 // communicator rank -> job rank; empty = identity
  // The communicator spans every task of the partition (only then may tree and global-interrupt
  // steps be used: the collective network's classes are partition-wide).
  bool whole_partition = false;

  int world_rank(int rank) const {
    return world_ranks.empty() ? rank : world_ranks[static_cast<std::size_t>(rank)];
  }
  torus_emu::NodeId node(int rank) const {
    return mapping->location(static_cast<torus_emu::Rank>(world_rank(rank))).node;
  }
};

struct Params {
  Collective op = Collective::bcast;
  int p = 1;                          // communicator size
  int root = 0;                       // bcast, reduce
  std::vector<std::uint64_t> counts;  // bytes, see above
  DataType dtype = DataType::u8;      // reductions: element type
  ReduceOp reduce_op = ReduceOp::sum;
  Topology topology;
  // Segment size for pipelined algorithms (bytes; 0 = the algorithm's default).
  std::uint64_t segment = 0;
  // Predicted process arrival times in seconds (any origin), one per rank, for arrival-aware
  // algorithms; empty = everyone arrives together. Every rank must pass
  // identical values (e.g. from clv::ArrivalPredictor's sealed vector).
  std::vector<double> arrival;

  // bcast/reduce/allreduce: counts[0]; reduce_scatter: sum(counts); barrier: 0.
  std::uint64_t bytes() const;
  // allgather/reduce_scatter: byte offset of block i in the gathered/full buffer.
  std::uint64_t displ(int i) const;
  // alltoall: bytes rank i sends to rank j, and the offsets in i's send and j's recv buffer.
  std::uint64_t a2a_count(int i, int j) const;
  std::uint64_t a2a_send_displ(int i, int j) const;
  std::uint64_t a2a_recv_displ(int i, int j) const;
  // Size of rank r's send and recv buffers under the conventions above.
  std::uint64_t send_bytes(int r) const;
  std::uint64_t recv_bytes(int r) const;

  // Empty if the parameters are consistent, else what is wrong ("allgather: counts has 3 entries,
  // expected p = 4").
  std::string validate() const;

  // Convenience constructors.
  static Params bcast(int p, int root, std::uint64_t bytes);
  static Params reduce(int p, int root, std::uint64_t count, DataType t, ReduceOp op);
  static Params allreduce(int p, std::uint64_t count, DataType t, ReduceOp op);
  static Params allgather(std::vector<std::uint64_t> counts);
  static Params alltoall(int p, std::uint64_t block);
  static Params reduce_scatter(std::vector<std::uint64_t> counts, DataType t, ReduceOp op);
  static Params barrier(int p);
};

}  // namespace bgl::collectives
