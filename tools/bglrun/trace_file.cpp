#include "trace_file.hpp"

#include <stdlib.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "bgl/job_runtime/log.hpp"
#include "bgl/job_runtime/trace.hpp"
#include "bgl/torus_emu/error.hpp"
#include "bgl/torus_emu/user_text.hpp"

namespace bgl::bglrun {
namespace {

// A task's file: "# bglemu trace: rank R events N dropped D unmatched U foreign F", then one event
// per line.
struct TaskPart {
  bool found = false;
  std::uint64_t events = 0, dropped = 0, unmatched = 0, foreign = 0;
  std::string body;
};

TaskPart read_part(const std::filesystem::path& file) {
  TaskPart p;
  std::ifstream in(file, std::ios::binary);
  if (!in) return p;
  std::string header;
  std::getline(in, header);
  unsigned rank = 0;
  unsigned long long events = 0, dropped = 0, unmatched = 0, foreign = 0;
  if (std::sscanf(header.c_str(),
                  "# bglemu trace: rank %u events %llu dropped %llu unmatched %llu foreign %llu",
                  &rank, &events, &dropped, &unmatched, &foreign) != 5)
    return p;
  p.found = true;
  p.events = events;
  p.dropped = dropped;
  p.unmatched = unmatched;
  p.foreign = foreign;
  std::ostringstream body;
  body << in.rdbuf();
  p.body = body.str();
  return p;
}

}  // namespace

TraceFile::Clock parse_trace_clock(const std::string& text, const std::string& where) {
  if (text == "host") return TraceFile::Clock::host;
  if (text == "virtual") return TraceFile::Clock::virtual_time;
  throw ConfigError(where + "='" + printable(text) + "': expected host or virtual");
}

TraceFile::TraceFile(std::filesystem::path path, Clock clock, std::uint64_t max_events, int ntasks)
    : out_(path, "the trace"),
      clock_(clock),
      max_events_(max_events),
      per_task_(std::max<std::uint64_t>(1, max_events / static_cast<std::uint64_t>(ntasks))) {
  const auto dir = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  std::string name = (dir / ("." + path.filename().string() + ".tasks.XXXXXX")).string();
  if (!::mkdtemp(name.data()))
    throw ConfigError("cannot write the trace to " + printable(path.string(), 256) +
                      ": cannot make a directory for the tasks' events: " + std::strerror(errno));
  tasks_dir_ = std::filesystem::absolute(name);
  // The tasks inherit these from the launcher.
  ::setenv("BGL_TRACE_DIR", tasks_dir_.c_str(), 1);
  ::setenv("BGL_TRACE_TASK_EVENTS", std::to_string(per_task_).c_str(), 1);
  ::setenv("BGL_TRACE_CLOCK", clock == Clock::host ? "host" : "virtual", 1);
  mark_start();
}

void TraceFile::mark_start() {
  ::setenv("BGL_TRACE_EPOCH_NS", std::to_string(job_runtime::Trace::monotonic_ns()).c_str(), 1);
}

TraceFile::~TraceFile() {
  std::error_code ignored;
  std::filesystem::remove_all(tasks_dir_, ignored);
}

bool TraceFile::commit(const packet_layer::Machine& machine,
                       const nlohmann::json* collective_sites) {
  const auto& c = machine.config();
  std::string out = "{\"traceEvents\":[\n";
  std::uint64_t events = 0, dropped = 0, unmatched = 0, foreign = 0;
  int capped = 0, first_capped = -1;
  std::string missing;
  int missing_count = 0;
  bool first = true;
  const auto add = [&](std::string_view line) {
    if (!first) out += ",\n";
    first = false;
    out += line;
  };
  for (int r = 0; r < c.ntasks(); ++r) {
    const auto rank = static_cast<torus_emu::Rank>(r);
    const auto xyz = c.mapping.coord(rank);
    char meta[256];
    std::snprintf(meta, sizeof meta,
                  "{\"ph\":\"M\",\"pid\":%d,\"tid\":0,\"name\":\"process_name\",\"args\":{\"name\":"
                  "\"rank %d (%d,%d,%d) t=%d\"}}",
                  r, r, xyz.x, xyz.y, xyz.z, c.mapping.location(rank).t);
    add(meta);
    std::snprintf(meta, sizeof meta,
                  "{\"ph\":\"M\",\"pid\":%d,\"tid\":0,\"name\":\"process_sort_index\",\"args\":{"
                  "\"sort_index\":%d}}",
                  r, r);
    add(meta);
    const auto part = read_part(tasks_dir_ / ("task." + std::to_string(r) + ".trace"));
    if (!part.found) {
      if (missing_count++ < 8) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
      continue;
    }
    events += part.events;
    dropped += part.dropped;
    unmatched += part.unmatched;
    foreign += part.foreign;
    if (part.dropped > 0 && capped++ == 0) first_capped = r;
    std::string_view body = part.body;
    while (!body.empty()) {
      const auto end = body.find('\n');
      const auto line = body.substr(0, end);
      if (!line.empty()) add(line);
      if (end == std::string_view::npos) break;
      body.remove_prefix(end + 1);
    }
  }
  char tail[512];
  std::snprintf(tail, sizeof tail,
                "\n],\"displayTimeUnit\":\"ns\",\"otherData\":{\"producer\":\"bglemu bglrun "
                "--trace\",\"clock\":\"%s\",\"shape\":\"%s\",\"tasks\":%d,\"events\":%" PRIu64
                ",\"events_per_task_cap\":%" PRIu64 ",\"dropped\":%" PRIu64
                ",\"tasks_without_events\":%d",
                clock_ == Clock::host ? "host" : "virtual", machine.shape().to_string().c_str(),
                c.ntasks(), events, per_task_, dropped, missing_count);
  out += tail;
  if (collective_sites) out += ",\"collective_sites\":" + collective_sites->dump();
  out += "}}\n";
  if (dropped > 0)
    std::fprintf(stderr,
                 "bglrun: trace: %d task(s) (first: rank %d) reached the cap of %" PRIu64
                 " events per task (--trace-events %" PRIu64 " for %d tasks); %" PRIu64
                 " later events were left out, the trace holds each task's first ones\n",
                 capped, first_capped, per_task_, max_events_, c.ntasks(), dropped);
  if (missing_count > 0)
    std::fprintf(stderr,
                 "bglrun: trace: %d task(s) left no events (ranks %s%s): they did not use the "
                 "emulated machine or ended without shutting down its runtime\n",
                 missing_count, missing.c_str(), missing_count > 8 ? ", ..." : "");
  if (unmatched > 0 || foreign > 0)
    spdlog::info("trace: {} spans cut off by the cap, {} events from other threads left out",
                 unmatched, foreign);
  if (!out_.commit(out)) return false;
  std::fprintf(stderr,
               "bglrun: trace written to %s (%" PRIu64
               " events, %s time); open it in "
               "Perfetto UI or chrome://tracing\n",
               out_.display_path().c_str(), events, clock_ == Clock::host ? "host" : "virtual");
  return true;
}

}  // namespace bgl::bglrun
