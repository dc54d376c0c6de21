#pragma once
// Whole-partition collectives on the emulated collective and global-interrupt networks, for the
// collectives library and the MPICH device (BG/L: MPI_COMM_WORLD only). Every task of the job
// calls the same operations in the same order with the same sizes. Long messages stream packet by
// packet through the ring window, so packet k combines while later packets are still injected.
//
// Integer and bitwise operations are exact. Sums of doubles take the two phases of fp.hpp and are
// bit-identical on every task and in every run, whatever the arrival order (a sum of at most 64
// doubles on one host has its phase 2 injected for every task by one of them: one wake-up per
// task instead of two, the same packets and times; see short_sum); the returned Status
// says when NaN, infinities or an overflow were involved (fall back if that matters). MAX/MIN of
// doubles take one phase. Buffers may alias (in-place operation).
#include <array>
#include <concepts>
#include <cstdint>
#include <span>
#include <vector>

#include "bgl/collective_net_emu/fp.hpp"
#include "bgl/collective_net_emu/global_interrupt.hpp"
#include "bgl/collective_net_emu/tree_endpoint.hpp"

namespace bgl::collective_net_emu {

template <class T>
concept LaneInteger = std::same_as<T, std::int32_t> || std::same_as<T, std::uint32_t> ||
    std::same_as<T, std::int64_t> || std::same_as<T, std::uint64_t>;

template <LaneInteger T>
constexpr Lane lane_of() {
  if constexpr (std::same_as<T, std::int32_t>)
    return Lane::i32;
  else if constexpr (std::same_as<T, std::uint32_t>)
    return Lane::u32;
  else if constexpr (std::same_as<T, std::int64_t>)
    return Lane::i64;
  else
    return Lane::u64;
}

class CollectiveNetwork {
 public:
  // One object per task and route class.
  CollectiveNetwork(const job_runtime::Job& job, torus_emu::Rank rank,
                    const job_runtime::WaitPolicy& policy, RouteClass route = RouteClass::combine0);

  // out = in combined over all tasks (in.size() == out.size(); any length).
  Status allreduce(Op op, std::span<const std::byte> in, std::span<std::byte> out);
  template <LaneInteger T>
  Status allreduce(AluOp alu, std::span<const T> in, std::span<T> out) {
    return allreduce(Op{alu, lane_of<T>()}, std::as_bytes(in), std::as_writable_bytes(out));
  }
  // The combined value reaches every task's router anyway; only `root` keeps it (out is ignored
  // elsewhere and may be empty).
  Status reduce(torus_emu::Rank root, Op op, std::span<const std::byte> in,
                std::span<std::byte> out);
  // buffer from `root` to every task.
  void broadcast(torus_emu::Rank root, std::span<std::byte> buffer);

  Status allreduce_sum(std::span<const double> in, std::span<double> out);
  Status allreduce_max(std::span<const double> in, std::span<double> out);
  Status allreduce_min(std::span<const double> in, std::span<double> out);

  // The global-interrupt barrier.
  void barrier() { interrupt_.barrier(); }

  // Work to keep doing while any operation waits (meanwhile.hpp).
  void set_meanwhile(Meanwhile m) {
    tree_.set_meanwhile(m);
    interrupt_.set_meanwhile(m);
  }

  // Virtual time: both networks time this task's operations with `clock` (a no-op without it).
  void set_clock(virtual_time::Clock& clock, virtual_time::Horizon horizon = {}) {
    tree_.set_clock(clock, horizon);
    interrupt_.set_clock(clock, horizon);
  }

  TreeEndpoint& tree() { return tree_; }
  GlobalInterrupt& interrupt() { return interrupt_; }
  RouteClass route() const { return route_; }
  // The next sequence number this object will use on its route class.
  Seq next_seq() const { return next_seq_; }

 private:
  template <class Inject, class Receive>
  void stream(std::size_t packets, Inject&& inject, Receive&& receive);
  Status extremum(std::span<const double> in, std::span<double> out, bool max);
  Status short_sum(std::span<const double> in, std::span<double> out);
  // Receives `seq` (waiting for it), reading it with read(ConstPacketSpan).
  template <class Read>
  Status receive_one(Seq seq, Read&& read);

  RouteClass route_;
  Seq next_seq_ = 0;
  TreeEndpoint tree_;
  GlobalInterrupt interrupt_;
  // The FP sum's phase-1 lookahead in groups of 64 elements (one phase-1 and four phase-2
  // packets each), so that the schedule can fill the ring, and its exponent maxima.
  std::size_t lookahead_;
  std::vector<std::uint32_t> emax_;
};

}  // namespace bgl::collective_net_emu
