#pragma once
// Coprocessor mode's second processor: a thread that
// runs work units the main task hands it. Permanent units run whenever the coprocessor is idle
// (the communication unit that receives rendezvous data is one); transient units run once:
// costart() starts one, cojoin() waits for it and returns its result. The two processors
// coordinate only through the scratchpad: the unit table and the queue below.
//
// Errors: a transient unit that throws completes with kUnitFailed and error() says why; a permanent
// unit that throws is taken out of the rotation (the others and the transient units keep running)
// and permanent_error() says why.
#include <array>
#include <atomic>
#include <boost/lockfree/spsc_queue.hpp>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "bgl/job_runtime/backoff.hpp"
#include "bgl/job_runtime/doorbell.hpp"

namespace bgl::message_layer {

class Coprocessor {
 public:
  using Unit = int (*)(void* arg);   // a transient unit's result: 0 for success, else an error
  using Poll = bool (*)(void* arg);  // a permanent unit: true if it did some work
  static constexpr int kUnitFailed = -1000;  // cojoin() result when the unit threw
  static constexpr std::uint32_t kMaxTransient = 256;
  static constexpr std::size_t kMaxPermanent = 8;

  struct Ticket {
    std::uint32_t id = 0;
  };

  // The coprocessor sleeps on `bell` when idle (ring it to wake it: packets for its FIFO group do).
  Coprocessor(job_runtime::Doorbell& bell, const job_runtime::WaitPolicy& policy);
  ~Coprocessor();  // stops after the units in progress; transient units never started are dropped
  Coprocessor(const Coprocessor&) = delete;
  Coprocessor& operator=(const Coprocessor&) = delete;

  // `pending` (may be null) tells cheaply whether `poll` has work, so the coprocessor does not
  // sleep through it. Call before the coprocessor's work matters; at most kMaxPermanent (else
  // std::runtime_error). Returns the unit's index for permanent_failed()/permanent_error().
  std::size_t add_permanent(Poll poll, Poll pending, void* arg);
  // True once the permanent unit threw (from poll or pending); it is not called again.
  bool permanent_failed(std::size_t index) const;
  // What it threw; empty while it has not failed.
  std::string permanent_error(std::size_t index) const;

  // Throws std::runtime_error when kMaxTransient units are outstanding (not yet joined).
  Ticket costart(Unit unit, void* arg);
  // Waits (spin, yield, sleep) until the unit ran; returns its result, or kUnitFailed if it threw
  // (error() then says why). Each ticket is joined exactly once.
  int cojoin(Ticket ticket);
  const std::string& error(Ticket ticket) const;

  std::uint64_t units_run() const { return units_run_.load(std::memory_order_relaxed); }

 private:
  enum State : std::uint32_t { kFree, kQueued, kDone };
  struct Slot {
    Unit unit = nullptr;
    void* arg = nullptr;
    int result = 0;
    std::string error;
    std::atomic<std::uint32_t> state{kFree};
  };
  struct Permanent {
    Poll poll = nullptr;
    Poll pending = nullptr;
    void* arg = nullptr;
    std::string error;                // written by the coprocessor before `failed` is set
    std::atomic<bool> failed{false};  // set by the coprocessor only
  };

  void run();
  bool run_transients();
  bool run_permanent(Permanent& p);
  bool permanent_pending(Permanent& p);
  bool has_work();
  void fail(Permanent& p, const char* what);

  job_runtime::Doorbell& bell_;
  const job_runtime::WaitPolicy& policy_;
  std::vector<Slot> slots_;
  std::vector<std::uint32_t> free_;  // main thread only
  boost::lockfree::spsc_queue<std::uint32_t, boost::lockfree::capacity<kMaxTransient>> queue_;
  std::array<Permanent, kMaxPermanent> permanent_{};
  std::atomic<std::size_t> permanent_count_{0};
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> units_run_{0};
  std::thread thread_;  // last: starts after everything above exists
};

}  // namespace bgl::message_layer
