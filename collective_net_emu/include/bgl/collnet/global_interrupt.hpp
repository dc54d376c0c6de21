#pragma once
// The emulated global-interrupt network: partition-wide wires that read the OR (any task raised)
// and the AND (all tasks raised) of every task's input, and the hardware barrier made of them.
//
// A wire is a count of raised inputs in the segment. The barrier is a sense-reversing barrier on
// channel 0: barrier k raises (k even) or lowers (k odd) this task's input; the task whose change
// makes the AND rise (count reaches N) or the OR fall (count reaches 0) completes the barrier and
// wakes the sleepers. A task can only start barrier k + 1 after k completed, so nobody can miss a
// completion. Waiting spins briefly, yields, then sleeps on a futex (pkt::Backoff), so hundreds of
// tasks on two cores do not spin each other out.
#include <atomic>
#include <cstdint>

#include "bgl/collnet/layout.hpp"
#include "bgl/collnet/meanwhile.hpp"
#include "bgl/pkt/backoff.hpp"
#include "bgl/pkt/machine.hpp"

namespace bgl::collnet {

enum class WireLevel : std::uint8_t {
  any_raised,   // OR = 1
  none_raised,  // OR = 0
  all_raised,   // AND = 1
  not_all,      // AND = 0
};

class GlobalInterrupt {
 public:
  static constexpr int kBarrierChannel = 0;
  static constexpr int kChannels = layout::kWireChannels;  // 1..3 are free for wires

  // Throws ConfigError when the job has no collective network.
  GlobalInterrupt(const pkt::Machine& machine, torus::Rank rank, const pkt::WaitPolicy& policy);

  // All tasks of the job.
  void barrier() { wait(arrive()); }
  // Split phase: arrive() never blocks; the returned ticket completes when every task arrived.
  std::uint32_t arrive();
  bool test(std::uint32_t ticket) const;
  void wait(std::uint32_t ticket);

  // This task's input to wire `channel` (1..3).
  void set_wire(int channel, bool raised);
  bool wire_any(int channel) const;
  bool wire_all(int channel) const;
  // Blocks until the wire shows `level`. Levels are not latched: a wire that rises and falls again
  // while this task sleeps may go unnoticed, as with the hardware's level-sensitive wires.
  void wait_wire(int channel, WireLevel level);

  std::uint32_t barriers_started() const { return arrivals_; }
  std::uint64_t sleeps() const { return sleeps_; }
  // Work to keep doing while waiting (meanwhile.hpp).
  void set_meanwhile(Meanwhile m) { meanwhile_ = m; }

 private:
  layout::WireState& wire(int channel) const;
  bool shows(int channel, WireLevel level) const;

  layout::WireState* wires_;
  std::uint32_t ntasks_;
  pkt::WaitPolicy policy_;
  std::uint32_t arrivals_ = 0;
  std::uint32_t raised_mask_ = 0;  // this task's wire inputs
  std::uint64_t sleeps_ = 0;
  Meanwhile meanwhile_;
};

}  // namespace bgl::collnet
