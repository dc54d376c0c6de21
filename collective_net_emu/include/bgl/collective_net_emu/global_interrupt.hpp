#pragma once
// The emulated global-interrupt network: partition-wide wires that read the OR (any task raised)
// and the AND (all tasks raised) of every task's input, and the hardware barrier made of them.
//
// A wire is a count of raised inputs in the segment. The barrier is a sense-reversing barrier on
// channel 0: barrier k raises (k even) or lowers (k odd) this task's input; the task whose change
// makes the AND rise (count reaches N) or the OR fall (count reaches 0) completes the barrier and
// wakes the sleepers. A task can only start barrier k + 1 after k completed, so nobody can miss a
// completion. Waiting spins briefly, yields, then sleeps on a futex (job_runtime::Backoff), so
// hundreds of tasks on two cores do not spin each other out.
//
// Several hosts: the counts above are per host (the host's own tasks), and each host publishes its
// share in a 64-bit word per wire and host that is forwarded to every other host's replica (remote
// stores): for the barrier the number of the last barrier all its tasks arrived at (barrier k is
// complete when every host's word shows k), for wires 1..3 an update counter (high 32 bits) and
// the host's raised count (low 32 bits), so that the newest value wins however forwards from
// different tasks of a host arrive.
#include <atomic>
#include <cstdint>
#include <optional>
#include <vector>

#include "bgl/collective_net_emu/layout.hpp"
#include "bgl/collective_net_emu/meanwhile.hpp"
#include "bgl/job_runtime/backoff.hpp"
#include "bgl/job_runtime/job.hpp"
#include "bgl/virtual_time/clock.hpp"
#include "bgl/virtual_time/horizon.hpp"

namespace bgl::collective_net_emu {

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
  GlobalInterrupt(const job_runtime::Job& job, torus_emu::Rank rank,
                  const job_runtime::WaitPolicy& policy);

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
  // Virtual time (a job run with it on): arrivals are stamped with this clock, and wait() sets it
  // to the barrier's release, gi_barrier_cycles after the last arrival. With `horizon`
  // (conservative synchronisation) the release is published there.
  void set_clock(virtual_time::Clock& clock, virtual_time::Horizon horizon = {});

 private:
  layout::WireState& wire(int channel) const;
  bool shows(int channel, WireLevel level) const;
  std::uint32_t raised_count(int channel) const;

  std::atomic<std::uint64_t>& host_word(int channel, std::uint32_t host) const {
    return host_words_[static_cast<std::uint32_t>(channel) * hosts_ + host];
  }
  // Several hosts: forwards this host's word of `channel` to the other hosts; with `vt`, first
  // stores it as the host's latest barrier arrival of that parity (host_vt).
  void forward(int channel, std::uint64_t value,
               std::optional<virtual_time::Tick> vt = std::nullopt) const;
  std::uint64_t* host_vt(std::uint32_t host, std::uint32_t ticket) const {
    return host_vt_ + host * 2 + ticket % 2;
  }

  const job_runtime::Job* job_;
  torus_emu::Rank rank_;
  layout::WireState* wires_;
  std::uint32_t ntasks_;
  // Several hosts.
  std::byte* region_ = nullptr;
  std::atomic<std::uint64_t>* host_words_ = nullptr;
  std::uint64_t* host_vt_ = nullptr;
  std::uint32_t hosts_ = 1, host_ = 0, local_tasks_ = 0;
  std::uint8_t region_index_ = 0;
  std::vector<std::uint32_t> task_hosts_;
  job_runtime::WaitPolicy policy_;
  std::uint32_t arrivals_ = 0;
  std::uint32_t raised_mask_ = 0;  // this task's wire inputs
  virtual_time::Clock* clock_ = nullptr;
  virtual_time::Horizon horizon_;
  std::uint64_t sleeps_ = 0;
  Meanwhile meanwhile_;
};

}  // namespace bgl::collective_net_emu
