#pragma once
// A task's (or a coprocessor's) BG/L clock, in cycles. Time moves only by what the model charges:
// software costs of the emulated stack, packet reads and writes, the program's own computation
// (host CPU time times a factor), and waiting for something that arrives later in virtual time.
#include <cstdint>

namespace bgl::virtual_time {

using Tick = std::uint64_t;  // BG/L processor cycles

// What travels with a packet: when it arrives, and when the message it belongs to was started
// (the sender's clock then), from which the receiver measures the message's end-to-end latency.
struct Stamp {
  Tick arrival = 0;
  Tick origin = 0;
};

class Clock {
 public:
  Tick now() const { return now_; }

  // Software of the emulated stack (protocols, packet reads and writes, MPI calls).
  void charge(Tick cycles) {
    now_ += cycles;
    software_ += cycles;
  }
  // Something that completes at `t` (a packet's arrival, a barrier's release): the clock waits
  // for it if it is later.
  void arrive(Tick t) {
    if (t > now_) {
      waiting_ += t - now_;
      now_ = t;
    }
  }
  // The program's own work between calls into the stack.
  void compute(Tick cycles) {
    now_ += cycles;
    computing_ += cycles;
  }

  Tick software() const { return software_; }
  Tick waiting() const { return waiting_; }
  Tick computing() const { return computing_; }

 private:
  Tick now_ = 0;
  Tick software_ = 0;
  Tick waiting_ = 0;
  Tick computing_ = 0;
};

// Converts the host CPU time a thread spends outside the emulated stack into computation on its
// clock. enter() at every entry into the stack, leave() at every exit; nesting is counted, so
// only the outermost pair measures.
class ComputeMeter {
 public:
  ComputeMeter() = default;
  // cycles_per_host_ns = cpu_factor * cpu_hz / 1e9; 0 disables the meter (no system calls).
  explicit ComputeMeter(double cycles_per_host_ns) : rate_(cycles_per_host_ns) {}
  bool active() const { return rate_ > 0; }
  void enter(Clock& clock);
  void leave();

 private:
  double rate_ = 0;
  int depth_ = 0;
  std::int64_t mark_ns_ = -1;  // thread CPU time at the last leave(); -1 before the first
  double carry_ = 0;           // fraction of a cycle not yet charged
};

}  // namespace bgl::virtual_time
