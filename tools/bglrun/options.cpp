#include "options.hpp"

#include <optional>
#include <string_view>

#include "bgl/job_runtime/env.hpp"
#include "bgl/torus_emu/error.hpp"
#include "bgl/torus_emu/user_text.hpp"

namespace bgl::bglrun {
namespace {

// Flags that take a value, as "--flag value" or "--flag=value".
bool takes_value(std::string_view f) {
  for (std::string_view v : {"-np",
                             "-n",
                             "--np",
                             "--shape",
                             "--mesh",
                             "--mode",
                             "--mapping",
                             "--mapfile",
                             "--timeout",
                             "--fifo-packets",
                             "--seed",
                             "--stats",
                             "--log-level",
                             "--kill-grace",
                             "--launcher",
                             "--deadlock",
                             "--hosts",
                             "--hostfile",
                             "--transport",
                             "--vt-params",
                             "--vt-cpu-factor",
                             "--vt-sync",
                             "--vt-cores",
                             "--report",
                             "--trace",
                             "--trace-time",
                             "--trace-events"})
    if (f == v) return true;
  return f == "--mpich-prefix";
}

// Launcher settings as the flags gave them; unset ones take their variable, then the default.
struct LauncherFlags {
  std::optional<double> timeout_seconds;
  std::optional<double> kill_grace_seconds;
  std::optional<double> deadlock_seconds;
};

void apply(LauncherOptions& o, LauncherFlags& given, std::string_view flag,
           const std::string& value) {
  auto& j = o.job;
  if (flag == "-np" || flag == "-n" || flag == "--np") {
    j.ntasks = static_cast<int>(job_runtime::env::parse_int(value, flag, 1, 1 << 20));
  } else if (flag == "--shape") {
    j.shape = value;
  } else if (flag == "--mesh") {
    j.mesh = value;
  } else if (flag == "--mode") {
    j.mode = value;
  } else if (flag == "--mapping") {
    j.mapping = value;
  } else if (flag == "--mapfile") {
    j.mapfile = value;
  } else if (flag == "--timeout") {
    given.timeout_seconds = job_runtime::env::parse_seconds(value, flag);
  } else if (flag == "--deadlock") {
    given.deadlock_seconds = job_runtime::env::parse_seconds(value, flag);
  } else if (flag == "--kill-grace") {
    given.kill_grace_seconds = job_runtime::env::parse_seconds(value, flag);
  } else if (flag == "--fifo-packets") {
    j.fifo_packets = job_runtime::parse_fifo_packets(value, flag);
  } else if (flag == "--seed") {
    j.seed = job_runtime::parse_seed(value, flag);
  } else if (flag == "--stats") {
    o.stats_file = value;
  } else if (flag == "--report") {
    o.report_file = value;
  } else if (flag == "--trace") {
    o.trace_file = value;
  } else if (flag == "--trace-time") {
    o.trace_time = value;
  } else if (flag == "--trace-events") {
    o.trace_events =
        static_cast<std::uint64_t>(job_runtime::env::parse_int(value, flag, 1, 1LL << 32));
  } else if (flag == "--log-level") {
    o.log_level = value;
  } else if (flag == "--launcher") {
    o.launcher = value;
  } else if (flag == "--mpich-prefix") {
    o.mpich_prefix = value;
  } else if (flag == "--hosts") {
    j.hosts = static_cast<int>(
        job_runtime::env::parse_int(value, flag, 1, job_runtime::Placement::kMaxHosts));
  } else if (flag == "--hostfile") {
    j.hostfile = value;
  } else if (flag == "--vt-params") {
    j.vt_params = std::string(value);
  } else if (flag == "--vt-cpu-factor") {
    j.vt_cpu_factor = job_runtime::parse_cpu_factor(value, flag);
  } else if (flag == "--vt-sync") {
    j.vt_sync = job_runtime::parse_vt_sync(value, flag);
  } else if (flag == "--vt-cores") {
    o.vt_cores = static_cast<int>(job_runtime::env::parse_int(value, flag, 0, 4096));
  } else if (flag == "--transport") {
    j.transport = value;
  }
}

}  // namespace

const char* usage() {
  return R"(usage: bglrun -np N [options] program [args...]

Runs N tasks of `program` on an emulated Blue Gene/L partition.

  -np N, -n N            number of tasks (required)
  --shape XxYxZ          partition shape, each 1..64 (BGL_SHAPE; default: the most cubic shape
                         that holds N tasks)
  --mesh DIMS            dimensions without wrap-around links, e.g. z or xyz (BGL_MESH)
  --mode MODE            heater | coprocessor | vn (BGL_MODE; default heater)
  --mapping ORDER        rank order, fastest-varying first, e.g. XYZT, TXYZ, ZYXT (BGL_MAPPING;
                         default XYZT: rank = x + X*(y + Y*(z + Z*t)))
  --mapfile FILE         mapping file, one "x y z [t]" line per rank (BGL_MAPFILE)
  --timeout S            stop the job after S seconds (BGL_TIMEOUT; default none)
  --kill-grace S         seconds between SIGTERM and SIGKILL when stopping (BGL_KILL_GRACE; 2)
  --deadlock S           stop the job as deadlocked (exit status 125, naming what each task
                         waits for) once every task has slept in a bglemu wait for S seconds
                         without any work (BGL_DEADLOCK; default 3; 0: never)
  --fifo-packets N       reception FIFO capacity, power of two (BGL_FIFO_PACKETS; default 64)
  --seed N               adaptive-routing seed (BGL_SEED)
  --hosts N              spread the partition over N hosts (BGL_HOSTS; without --hostfile all on
                         127.0.0.1, for tests); nodes go in contiguous blocks of node ids
  --hostfile FILE        hosts, one "name [address] [nodes=N]" line each (BGL_HOSTFILE)
  --transport T          shm | ofi | auto (BGL_TRANSPORT; auto: ofi when the job spans hosts);
                         ofi on one host sends every packet between nodes through libfabric
                         (provider FI_PROVIDER, default tcp;ofi_rxm)
  --stats FILE           write per-task, per-link and per-FIFO statistics as JSON (BGL_STATS)
  --report FILE          write the run report, one HTML page to open in a browser (BGL_REPORT);
                         with --stats or --report a summary table ends the run
  --trace FILE           write every task's timeline (messages, collectives and their steps) as
                         Chrome trace-event JSON for Perfetto UI (BGL_TRACE)
  --trace-time T         host | virtual: the trace's timeline (BGL_TRACE_TIME; default virtual
                         with --virtual-time, else host)
  --trace-events N       at most N events in the trace, N / tasks per task (BGL_TRACE_EVENTS;
                         default 1000000)
  --virtual-time         give every task a Blue Gene/L clock and predict the job's time on BG/L
                         (BGL_VIRTUAL_TIME=1); MPI_Wtime returns it; docs/VIRTUAL_TIME.md
  --vt-params FILE       the timing model's parameters, "name = value" lines over the defaults
                         (BGL_VT_PARAMS); --vt-params-list prints them all
  --vt-cpu-factor F      BG/L seconds per host CPU second spent in the program itself
                         (BGL_VT_CPU_FACTOR; default 0: communication only)
  --vt-sync S            conservative | host: how the tasks' clocks keep in step (BGL_VT_SYNC;
                         default host). conservative: a task takes a packet only when no other
                         task can still send it an earlier one (one host; heater and VN mode)
  --vt-cores N           with virtual time, run the tasks on N cores (BGL_VT_CORES; default 1,
                         which keeps predictions reproducible; 0: all the launcher may use)
  --vt-params-list       print the model's parameters with units and sources, run nothing
  --show-mapping         print the rank -> (x,y,z,t) table before starting
  --dry-run              validate, print the configuration, mapping and segment size, run nothing
  --cleanup              remove the shared-memory segments of launchers that were killed (a job
                         start does it too, with a warning), print how many, run nothing
  --log-level L          trace|debug|info|warn|error|critical|off (BGL_LOG_LEVEL; default warn)
  -v, --verbose          same as --log-level info
  -h, --help             this text
  --version              print the version
)";
}

LauncherOptions parse_command_line(int argc, char** argv) {
  LauncherOptions o;
  LauncherFlags given;
  int i = 1;
  for (; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (arg.empty() || arg[0] != '-') break;
    std::string value;
    std::string_view flag = arg;
    if (const auto eq = arg.find('='); arg.starts_with("--") && eq != std::string_view::npos) {
      flag = arg.substr(0, eq);
      value = std::string(arg.substr(eq + 1));
      if (!takes_value(flag)) throw ConfigError("option " + printable(flag) + " takes no value");
    } else if (takes_value(flag)) {
      if (i + 1 >= argc) throw ConfigError("option " + std::string(flag) + " needs a value");
      value = argv[++i];
    }
    if (takes_value(flag)) {
      apply(o, given, flag, value);
    } else if (flag == "-h" || flag == "--help") {
      o.help = true;
    } else if (flag == "--version") {
      o.version = true;
    } else if (flag == "--dry-run") {
      o.dry_run = true;
    } else if (flag == "--cleanup") {
      o.cleanup = true;
    } else if (flag == "--show-mapping") {
      o.show_mapping = true;
    } else if (flag == "--virtual-time") {
      o.job.virtual_time = true;
    } else if (flag == "--vt-params-list") {
      o.vt_params_list = true;
    } else if (flag == "-v" || flag == "--verbose") {
      o.log_level = "info";
    } else {
      throw ConfigError("unknown option '" + printable(arg) + "' (see bglrun --help)");
    }
  }
  for (; i < argc; ++i)
    o.command.emplace_back(argv[i]);
  if (o.help || o.version || o.vt_params_list) return o;
  if (o.cleanup) {
    if (!o.command.empty())
      throw ConfigError("--cleanup runs nothing, but a program was given ('" +
                        printable(o.command.front()) + "')");
    return o;
  }

  // A flag always wins: a variable is read only for what no flag set.
  o.job.merge_environment();
  const auto seconds = [](const std::optional<double>& flag, const char* variable,
                          double fallback) {
    if (flag) return *flag;
    if (auto v = job_runtime::env::get(variable))
      return job_runtime::env::parse_seconds(*v, variable);
    return fallback;
  };
  o.timeout_seconds = seconds(given.timeout_seconds, "BGL_TIMEOUT", 0);
  o.kill_grace_seconds = seconds(given.kill_grace_seconds, "BGL_KILL_GRACE", 2);
  o.deadlock_seconds = seconds(given.deadlock_seconds, "BGL_DEADLOCK", 3);
  if (!o.stats_file) o.stats_file = job_runtime::env::get("BGL_STATS");
  if (!o.report_file) o.report_file = job_runtime::env::get("BGL_REPORT");
  if (!o.trace_file) o.trace_file = job_runtime::env::get("BGL_TRACE");
  if (!o.trace_time) o.trace_time = job_runtime::env::get("BGL_TRACE_TIME");
  if (!o.trace_events)
    if (auto v = job_runtime::env::get("BGL_TRACE_EVENTS"))
      o.trace_events = static_cast<std::uint64_t>(
          job_runtime::env::parse_int(*v, "BGL_TRACE_EVENTS", 1, 1LL << 32));
  if (!o.vt_cores)
    if (auto v = job_runtime::env::get("BGL_VT_CORES"))
      o.vt_cores = static_cast<int>(job_runtime::env::parse_int(*v, "BGL_VT_CORES", 0, 4096));
  if (!o.job.ntasks) throw ConfigError("missing -np N (the number of tasks)");
  if (o.command.empty() && !o.dry_run) throw ConfigError("missing the program to run");
  return o;
}

}  // namespace bgl::bglrun
