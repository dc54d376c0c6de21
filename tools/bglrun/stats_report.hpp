#pragma once
#include <filesystem>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>

#include "bgl/packet_layer/machine.hpp"
#include "bgl/packet_layer/ofi_agent.hpp"

namespace bgl::bglrun {

// The job's statistics as JSON: configuration, per-task packet counters, per-link traffic and
// per-FIFO depth (high-water mark, full events). Read after all tasks have ended.
// `host_seconds`: the job's wall-clock time on the host, from start to the last task's end.
// `collective_sites`: the tasks' collective calls per call site (call_sites.hpp), if recorded.
std::string statistics_json(const packet_layer::Machine& machine, double host_seconds,
                            const nlohmann::json* collective_sites = nullptr);
// The same as a JSON document (on several hosts: this host's part, for merge_statistics), and
// a document as the file's text.
nlohmann::json statistics_document(const packet_layer::Machine& machine, double host_seconds,
                                   const nlohmann::json* collective_sites = nullptr);
std::string statistics_text(const nlohmann::json& document);

// Several hosts: adds another host's statistics document to `into` (this host's), so that the
// result is what one host would have written for the whole job. Each host counts the tasks it ran
// (published there), the links along the routes of the packets its tasks injected, the FIFOs of
// its nodes and the communication-matrix rows of its tasks: tasks are taken from the host that
// published them, link and FIFO counters and matrix rows added, the job's host time is the
// longest. Throws ConfigError naming `what` (e.g. "host 1's statistics") when `other` is not a
// statistics document of the same job (shape, mode, tasks).
void merge_statistics(nlohmann::json& into, const nlohmann::json& other, const std::string& what);

// Virtual time: the predicted BG/L time (the slowest task's clock) next to the host time, and
// the parameter set that produced it, as one line for the terminal.
// Several hosts: `other_hosts` are the other hosts' slowest tasks (the agents' farewells).
using SlowestTask = packet_layer::SlowestTask;
std::string virtual_time_summary(const packet_layer::Machine& machine, double host_seconds,
                                 std::span<const SlowestTask> other_hosts = {});
// The model's parameters as a "name = value # unit, source: meaning" file.
std::string parameter_listing(const virtual_time::Params& params);

// One human-readable paragraph (totals, busiest link) for the log.
std::string statistics_summary(const packet_layer::Machine& machine);

// The statistics file, made ready before the job starts so that an unwritable path is reported
// before anything runs. The JSON goes to a new file in the same directory (created exclusively,
// so nothing planted there is followed) that commit() renames over the path: a symbolic link at
// the path is replaced, never written through, and readers never see half a file. The temporary
// file is removed unless committed.
class StatsFile {
 public:
  // Throws ConfigError naming the path and the problem (no such directory, permission denied, the
  // path is a directory). `what` names the content in messages ("statistics", "the report").
  explicit StatsFile(std::filesystem::path path, std::string what = "statistics");
  StatsFile(const StatsFile&) = delete;
  StatsFile& operator=(const StatsFile&) = delete;
  ~StatsFile();

  // Writes `text` and renames the file into place; false (with a message on stderr) on failure.
  bool commit(std::string_view text);
  // The path, printable, for messages.
  std::string display_path() const;

 private:
  std::filesystem::path path_;
  std::string what_;
  std::filesystem::path temp_;
  int fd_ = -1;
};

}  // namespace bgl::bglrun
