#pragma once
// The launcher's watch over a live job's segment: stray writes (a task's buffer overrun, a foreign
// process) into the control structures would otherwise hang the job with no report. check() finds
// what no run of the protocols can produce and names it: a part of the job description or another
// part nobody writes after start-up (compared with a private copy taken at start), the barrier's
// count, a reception FIFO's indices or slot sequence numbers.
#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "bgl/packet_layer/machine.hpp"

namespace bgl::packet_layer {

class SegmentMonitor {
 public:
  using Clock = std::chrono::steady_clock;
  // `constant` adds parts of the segment that nobody writes after start-up (besides the job
  // description). Copies them now: call it once the segment is formatted.
  SegmentMonitor(const Machine& machine, std::vector<job_runtime::ControlPart> constant,
                 Clock::duration interval = std::chrono::milliseconds(200));

  // Checks when `interval` has passed since the last check (cheap otherwise): the corrupt part,
  // or nothing.
  std::optional<std::string> poll();
  // Checks everything now.
  std::optional<std::string> check();

 private:
  std::optional<std::string> check_fifos(std::size_t budget);

  const Machine& machine_;
  std::vector<job_runtime::ControlPart> parts_;
  std::vector<std::vector<std::byte>> copies_;
  Clock::duration interval_;
  Clock::time_point last_{};
  std::size_t next_fifo_ = 0;  // the slots of a large job's FIFOs are checked a share per round
};

}  // namespace bgl::packet_layer
