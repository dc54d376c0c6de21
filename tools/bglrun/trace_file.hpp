#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "bgl/packet_layer/machine.hpp"
#include "stats_report.hpp"

namespace bgl::bglrun {

// bglrun --trace: every task records its timeline in memory and writes it to a file of its own in
// a directory next to the trace when it ends (pkt/trace.hpp); after the job, commit() merges them
// into one Chrome trace-event file (the JSON that Perfetto UI and chrome://tracing open).
class TraceFile {
 public:
  enum class Clock { host, virtual_time };
  static constexpr std::uint64_t kDefaultEvents = 1'000'000;

  // Before the job: fails with ConfigError when the path cannot be written; makes the tasks'
  // directory and sets the variables the tasks read (BGL_TRACE_DIR and others). `max_events`
  // bounds the whole trace; each task may record max_events / ntasks of them.
  TraceFile(std::filesystem::path path, Clock clock, std::uint64_t max_events, int ntasks);
  TraceFile(const TraceFile&) = delete;
  TraceFile& operator=(const TraceFile&) = delete;
  ~TraceFile();  // removes the tasks' directory

  // Just before the tasks start: the host timeline's zero.
  void mark_start();

  // After the job: the merged trace. Says on stderr when the cap left events out or a task left
  // none; false (with a message) when the trace cannot be written.
  // `collective_sites` (call_sites.hpp), when given, goes into otherData.
  bool commit(const packet_layer::Machine& machine,
              const nlohmann::json* collective_sites = nullptr);

  std::uint64_t events_per_task() const { return per_task_; }
  // The tasks' directory (several hosts: the other hosts' files are copied into it).
  const std::filesystem::path& tasks_dir() const { return tasks_dir_; }

 private:
  StatsFile out_;
  std::filesystem::path tasks_dir_;
  Clock clock_;
  std::uint64_t max_events_;
  std::uint64_t per_task_;
};

// "host" or "virtual" (--trace-time, BGL_TRACE_TIME); ConfigError naming `where` otherwise.
TraceFile::Clock parse_trace_clock(const std::string& text, const std::string& where);

}  // namespace bgl::bglrun
