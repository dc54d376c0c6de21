#pragma once
// A task's timeline for bglrun --trace: spans of MPI calls, messages, collectives and steps,
// recorded in memory (a fixed number of events, reserved at start-up) and written to a file of the
// task's when it ends; bglrun merges the tasks' files into one Chrome trace-event file. Components
// reach it through Endpoint::trace(), which is null when tracing is off: the only cost then is that
// test. Not thread-safe: events from threads other than the one that made the trace are counted
// and left out.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "bgl/torus_emu/mapping.hpp"
#include "bgl/virtual_time/clock.hpp"

namespace bgl::job_runtime {

// Chrome's "cat": which layer an event comes from.
enum class TraceCategory : std::uint8_t { message, collective, step, mpi };
std::string_view to_string(TraceCategory c);

// What an event carries besides its name and time (Chrome's "args").
struct TraceArgs {
  static constexpr std::uint64_t kNoBytes = ~std::uint64_t{0};
  std::int64_t peer = -1;  // a rank, when the event has one
  std::uint64_t bytes = kNoBytes;
  std::uint16_t detail = 0;     // an interned text (a protocol, a selection rule), 0: none
  std::uint32_t comm_size = 0;  // the communicator's size (MPI calls), 0: none
};

class Trace {
 public:
  using Name = std::uint16_t;
  static constexpr std::uint64_t kNoBytes = TraceArgs::kNoBytes;

  using Args = TraceArgs;

  // Tracing is on when bglrun set BGL_TRACE_DIR; null otherwise. The other variables are bglrun's
  // too: BGL_TRACE_TASK_EVENTS (this task's cap), BGL_TRACE_CLOCK (host or virtual),
  // BGL_TRACE_EPOCH_NS (the job's start on CLOCK_MONOTONIC, the host timeline's zero).
  static std::unique_ptr<Trace> from_environment(torus_emu::Rank rank,
                                                 const virtual_time::Clock& clock, double cpu_hz);
  // The host timeline's clock (CLOCK_MONOTONIC, in ns): one clock for every process of the job,
  // so bglrun's epoch and the tasks' events line up.
  static std::uint64_t monotonic_ns();
  Trace(torus_emu::Rank rank, std::string dir, std::size_t capacity, bool virtual_clock,
        std::uint64_t epoch_ns, const virtual_time::Clock& clock, double cpu_hz);

  // A name for events and details; the first use of a text allocates.
  Name intern(std::string_view text);
  // Nanoseconds on the chosen timeline.
  std::uint64_t now() const;

  // A span of this task's own timeline (nesting: a span that starts inside another ends inside
  // it) that began at `start` (from now()) and ends now.
  void span(TraceCategory category, Name name, std::uint64_t start, const Args& args = {});
  // Spans that overlap others (messages in flight, steps of a collective): matched by `id`.
  void begin(TraceCategory category, Name name, std::uint64_t id, const Args& args = {});
  void end(TraceCategory category, Name name, std::uint64_t id);
  void instant(TraceCategory category, Name name, const Args& args = {});

  std::size_t recorded() const { return events_.size(); }
  std::uint64_t dropped() const { return dropped_; }
  // Writes the events to "<dir>/task.<rank>.trace" (header line, then one JSON object per line);
  // false when the file cannot be written.
  bool write() const;

 private:
  struct Event {
    std::uint64_t ts;
    std::uint64_t dur_or_id;
    std::uint64_t bytes;
    std::int32_t peer;  // a rank (below 2^31) or -1
    std::uint32_t comm_size;
    Name name;
    Name detail;
    TraceCategory category;
    char phase;  // 'X', 'b', 'e', 'i'
  };
  static_assert(sizeof(Event) == 40, "the documented size of an event (docs/CONFIGURATION.md)");
  void record(const Event& e);

  torus_emu::Rank rank_;
  std::string dir_;
  std::size_t capacity_;
  bool virtual_clock_;
  std::uint64_t epoch_ns_;
  const virtual_time::Clock* clock_;
  double ns_per_cycle_;
  std::thread::id owner_;
  std::vector<Event> events_;
  std::vector<std::string> names_;
  std::unordered_map<std::string, Name> name_ids_;
  std::uint64_t dropped_ = 0;
  std::uint64_t foreign_ = 0;  // events from other threads
};

}  // namespace bgl::job_runtime
