#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bgl/job_runtime/job_config.hpp"

namespace bgl::bglrun {

struct LauncherOptions {
  job_runtime::JobOptions job;
  double timeout_seconds = 0;     // 0: none (a flag or variable may say 0 too)
  double kill_grace_seconds = 2;  // between SIGTERM and SIGKILL when stopping a job
  double deadlock_seconds = 3;    // --deadlock: stop a job whose tasks all wait this long; 0: never
  std::optional<std::string> stats_file;
  std::optional<std::string> report_file;     // --report: the HTML run report
  std::optional<std::string> trace_file;      // --trace: Chrome trace-event JSON
  std::optional<std::string> trace_time;      // --trace-time host|virtual
  std::optional<std::uint64_t> trace_events;  // --trace-events: the cap for the whole job
  std::optional<std::string> log_level;
  std::optional<std::string> launcher;      // --launcher auto|mpiexec|direct (mpiexec_launch.hpp)
  std::optional<std::string> mpich_prefix;  // --mpich-prefix: the MPICH whose mpiexec to use
  bool dry_run = false;
  bool cleanup = false;  // --cleanup: remove dead launchers' segments and exit
  bool show_mapping = false;
  bool vt_params_list = false;  // --vt-params-list: print the timing model's parameters
  std::optional<int> vt_cores;  // --vt-cores: cores the tasks of a virtual-time job run on
  bool help = false;
  bool version = false;
  std::vector<std::string> command;  // program and its arguments
};

// Parses bglrun's command line (flags first, then the program) and merges BGL_* variables for
// everything the flags leave unset. Throws ConfigError naming the offending flag or variable.
LauncherOptions parse_command_line(int argc, char** argv);

const char* usage();

}  // namespace bgl::bglrun
