// bglrun: starts a program's tasks on an emulated Blue Gene/L partition.
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <optional>
#include <random>
#include <string_view>

#include "bgl/collective_net_emu/region.hpp"
#include "bgl/job_runtime/env.hpp"
#include "bgl/job_runtime/log.hpp"
#include "bgl/job_runtime/segment.hpp"
#include "bgl/job_runtime/traffic_matrix.hpp"
#include "bgl/packet_layer/machine.hpp"
#include "bgl/packet_layer/ofi_agent.hpp"
#include "bgl/packet_layer/segment_monitor.hpp"
#include "bgl/torus_emu/error.hpp"
#include "bgl/torus_emu/user_text.hpp"
#include "call_sites.hpp"
#include "coll_selection.hpp"
#include "host_parts.hpp"
#include "host_topology.hpp"
#include "job_runner.hpp"
#include "mpiexec_launch.hpp"
#include "options.hpp"
#include "pmi_client.hpp"
#include "pmi_server.hpp"
#include "run_report.hpp"
#include "stats_report.hpp"
#include "trace_file.hpp"
#include "watchdog.hpp"

namespace {

// How long host 0 waits for the other hosts' parts of the results (HostParts).
constexpr std::chrono::seconds kHostPartsWait{30}, kHostPartsWaitFailed{3};

using namespace bgl;

bool executable(const std::string& program) {
  if (program.find('/') != std::string::npos) return access(program.c_str(), X_OK) == 0;
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  for (std::size_t start = 0; start <= dirs.size();) {
    const auto end = std::min(dirs.find(':', start), dirs.size());
    const std::string dir = end > start ? dirs.substr(start, end - start) : ".";
    if (access((dir + "/" + program).c_str(), X_OK) == 0) return true;
    start = end + 1;
  }
  return false;
}

// Virtual time: tasks run on `cores` cores (0: all). Tasks take packets in host order, so the more
// of them run at the same moment, the more often one takes a packet that arrives later in virtual
// time before an earlier one was sent, which makes predictions vary between runs; on one core a
// job's tasks mostly run one at a time, in an order the messages impose (docs/VIRTUAL_TIME.md).
void confine_tasks(int cores) {
  cpu_set_t allowed;
  if (cores <= 0 || sched_getaffinity(0, sizeof allowed, &allowed) != 0) return;
  cpu_set_t chosen;
  CPU_ZERO(&chosen);
  for (int cpu = 0, n = 0; cpu < CPU_SETSIZE && n < cores; ++cpu)
    if (CPU_ISSET(cpu, &allowed)) CPU_SET(cpu, &chosen), ++n;
  if (sched_setaffinity(0, sizeof chosen, &chosen) != 0)
    spdlog::warn("cannot confine the tasks to {} core(s): {}", cores, std::strerror(errno));
}

void print_mapping(const job_runtime::JobConfig& c) {
  std::printf("# %s\n# rank  x  y  z  t\n", c.summary().c_str());
  for (int r = 0; r < c.ntasks(); ++r) {
    const auto rank = static_cast<torus_emu::Rank>(r);
    const auto p = c.mapping.coord(rank);
    std::printf("%6d %2d %2d %2d %2d\n", r, p.x, p.y, p.z, c.mapping.location(rank).t);
  }
}

// The segment holds FIFOs for the nodes that host tasks only (docs/CONFIGURATION.md has the
// formula); this host's part is allocated when the job starts.
void print_segment_size(std::size_t bytes) {
  std::printf("# shared-memory segment: %zu MiB in /dev/shm (%zu MiB free)\n",
              (bytes + (1u << 20) - 1) >> 20, job_runtime::Segment::free_bytes() >> 20);
}

// A multi-host job started without a process manager: run one bglrun per host under Hydra's
// mpiexec (mpiexec.hydra from Debian's mpich, or BGL_HYDRA), which starts them and serves the PMI
// key-value store through which the hosts' agents exchange their libfabric addresses. Hosts all on
// loopback (--hosts N without a file) are started locally (-launcher fork); others by Hydra's
// default launcher (ssh) on the hosts of the placement. -disable-auto-cleanup: when a host dies,
// the others' agents notice and end the job with an error naming it, instead of Hydra killing
// them silently.
[[noreturn]] void relaunch_under_hydra(const job_runtime::Placement& placement, int argc,
                                       char** argv) {
  const std::string hydra = job_runtime::env::get("BGL_HYDRA").value_or("mpiexec.hydra");
  char self_buf[4096];
  const ssize_t n = readlink("/proc/self/exe", self_buf, sizeof self_buf - 1);
  const std::string self = n > 0 ? std::string(self_buf, static_cast<std::size_t>(n)) : argv[0];
  std::string list;
  for (const auto& h : placement.hosts)
    list += (list.empty() ? "" : ",") + h.name + ":1";
  std::vector<std::string> args{
      hydra, "-disable-auto-cleanup", "-n", std::to_string(placement.host_count()), "-hosts", list};
  // Emulated hosts (all on loopback, or in network namespaces of this machine) get a Hydra proxy
  // each, started by bglrun itself in place of ssh, so that one dying host takes down only its
  // own proxy, as on real hosts.
  if (placement.emulated()) {
    args.insert(args.end(), {"-launcher", "ssh", "-launcher-exec", self});
    setenv("HYDRA_LAUNCHER_EXTRA_ARGS", "--host-exec", 1);
    setenv("HYDRA_LAUNCHER_AUTOFORK", "0", 1);
  }
  args.push_back(self);
  for (int i = 1; i < argc; ++i)
    args.emplace_back(argv[i]);
  std::vector<char*> cargs;
  for (auto& a : args)
    cargs.push_back(a.data());
  cargs.push_back(nullptr);
  spdlog::info("starting {} hosts through {}", placement.host_count(), hydra);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  std::fflush(nullptr);
  execvp(cargs[0], cargs.data());
  throw ConfigError("the job spans " + std::to_string(placement.host_count()) +
                    " hosts and needs Hydra's mpiexec to start them, but '" + hydra +
                    "' cannot be executed (" + std::strerror(errno) +
                    "); install Debian's mpich package or set BGL_HYDRA");
}

// Hydra's "ssh" for emulated hosts: `bglrun -x --host-exec HOST command...` runs the command here.
// Hydra quotes the program for a remote shell; the quotes are taken off.
[[noreturn]] void host_exec(int argc, char** argv) {
  std::vector<std::string> args;
  for (int i = 4; i < argc; ++i) {
    std::string a = argv[i];
    if (a.size() >= 2 && a.front() == '"' && a.back() == '"') a = a.substr(1, a.size() - 2);
    args.push_back(a);
  }
  if (args.empty()) {
    std::fprintf(stderr, "bglrun --host-exec: no command\n");
    _exit(127);
  }
  std::vector<char*> cargs;
  for (auto& a : args)
    cargs.push_back(a.data());
  cargs.push_back(nullptr);
  execvp(cargs[0], cargs.data());
  std::fprintf(stderr, "bglrun --host-exec: cannot execute '%s': %s\n", cargs[0],
               std::strerror(errno));
  _exit(127);
}

// An emulated host in a network namespace: its bglrun enters it before opening its libfabric
// endpoint (the PMI connection to Hydra's proxy, a socket already open, keeps working).
void enter_netns(const std::string& name) {
  const std::string path = "/var/run/netns/" + name;
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    throw ConfigError("cannot open network namespace '" + name + "' (" + path +
                      "): " + std::strerror(errno) + "; create it with ip netns add");
  if (setns(fd, CLONE_NEWNET) != 0) {
    const int e = errno;
    close(fd);
    throw ConfigError("cannot enter network namespace '" + name + "': " + std::strerror(e));
  }
  close(fd);
  spdlog::info("entered network namespace {}", name);
}

std::string describe_rank(const job_runtime::JobConfig& c, int r) {
  const auto rank = static_cast<torus_emu::Rank>(r);
  return "rank " + std::to_string(r) + " on node " + torus_emu::to_string(c.mapping.coord(rank)) +
         " t=" + std::to_string(c.mapping.location(rank).t);
}

// The KVS name of a one-host job: the segment's (unique on the host), in the letters of Hydra's
// names ("kvs_1234_0").
std::string host_kvs_name(const job_runtime::Segment& segment) {
  std::string name = "kvs_" + segment.name().substr(1);
  std::replace_if(
      name.begin(), name.end(), [](unsigned char c) { return !std::isalnum(c); }, '_');
  return name;
}

// Each rank's host. MPI ranks of one job agree on everything through the PMI barriers of every
// host's ranks, so a host without ranks could not take part: that is a configuration error.
std::vector<int> hosts_of_ranks(const job_runtime::JobConfig& c) {
  const auto& placement = c.placement;
  std::vector<int> host(static_cast<std::size_t>(c.ntasks()));
  std::vector<int> count(static_cast<std::size_t>(placement.host_count()));
  for (int r = 0; r < c.ntasks(); ++r) {
    const auto node = c.mapping.location(static_cast<torus_emu::Rank>(r)).node;
    host[static_cast<std::size_t>(r)] = placement.node_host[node];
    ++count[placement.node_host[node]];
  }
  for (std::size_t h = 0; h < count.size(); ++h)
    if (count[h] == 0)
      throw ConfigError("an MPI program needs a rank on every host, but host " + std::to_string(h) +
                        " (" + placement.hosts[h].name + ") of the placement (" + placement.source +
                        ") holds nodes without ranks: start more ranks (-np), " +
                        "use fewer hosts, or give the hosts nodes= counts in the host file");
  return host;
}

// Host 0 of several: waits for the other hosts' parts of the results and merges their statistics
// into `document` (their tasks' call-site and trace files go into this host's directories). The
// hosts leave their parts once their agents agreed that every host's tasks have ended, so they
// come within moments; a host that failed may leave none. False when a part is missing.
bool merge_host_parts(const bglrun::HostParts& parts, const bglrun::HostParts::Files& files,
                      std::optional<nlohmann::json>& document, bool job_failed) {
  const auto wait = job_failed ? kHostPartsWaitFailed : kHostPartsWait;
  auto collected = parts.collect(wait, files);
  bool ok = collected.missing.empty();
  for (auto& [host, doc] : collected.statistics) {
    try {
      bglrun::merge_statistics(*document, doc, "host " + std::to_string(host) + "'s statistics");
    } catch (const std::exception& e) {
      std::fprintf(stderr, "bglrun: %s\n", bgl::printable_message(e.what()).c_str());
      collected.missing.push_back(host);
      ok = false;
    }
  }
  if (!collected.missing.empty()) {
    std::string hosts;
    for (const int h : collected.missing)
      hosts += (hosts.empty() ? "" : ", ") + std::to_string(h);
    std::fprintf(
        stderr,
        "bglrun: the job's statistics, report and trace lack the tasks of host(s) %s: "
        "their part did not arrive in %s within %lld s (every host must see the "
        "directory of --stats, --report or --trace: on a cluster, a shared file "
        "system)\n",
        hosts.c_str(), parts.part(collected.missing.front()).parent_path().c_str(),
        static_cast<long long>(std::chrono::duration_cast<std::chrono::seconds>(wait).count()));
    if (document) (*document)["job"]["hosts_missing"] = collected.missing;
  }
  return ok;
}

int launch(int argc, char** argv) {
  const auto o = bglrun::parse_command_line(argc, argv);
  job_runtime::log::init(
      "bglrun", o.log_level ? std::optional<std::string_view>(*o.log_level) : std::nullopt);
  if (o.help) {
    std::fputs(bglrun::usage(), stdout);
    std::fputs(bglrun::mpiexec_usage(), stdout);
    return 0;
  }
  if (o.version) {
    std::puts("bglrun (bglemu) " BGL_VERSION);
    return 0;
  }
  if (o.vt_params_list) {
    std::fputs(bglrun::parameter_listing(virtual_time::Params{}).c_str(), stdout);
    return 0;
  }
  if (o.cleanup) {
    // For scripts that run many jobs and compare their output (MPICH's runtests): cleaning
    // before each job keeps the start-up warning below out of the program's output.
    std::printf("bglrun: removed %d shared-memory segments left by launchers that were killed\n",
                job_runtime::Segment::remove_stale());
    return 0;
  }
  // Reading the configuration (files included) leaves nothing to clean up: until it is done,
  // signals keep their default actions.
  auto config = job_runtime::JobConfig::resolve(o.job);

  // From here on, signals wait until the launcher can clean up after them.
  sigset_t signals = bglrun::launcher_signals();
  // Hydra (-disable-auto-cleanup) tells the surviving processes of a job that one died with
  // SIGUSR1, whose default action would kill this host's launcher before its agent can name the
  // dead host. Blocked here (and in every thread started later); tasks unblock it.
  sigaddset(&signals, SIGUSR1);
  sigprocmask(SIG_BLOCK, &signals, nullptr);
  // Several hosts: this bglrun is one of them, started by a PMI process manager (Hydra).
  std::optional<bglrun::PmiClient> pmi;
  if (config.placement.host_count() > 1 && !o.dry_run) {
    if (auto client = bglrun::PmiClient::from_environment()) pmi.emplace(std::move(*client));
    if (!pmi) relaunch_under_hydra(config.placement, argc, argv);
    if (pmi->size() != config.placement.host_count())
      throw ConfigError("the placement (" + config.placement.source + ") has " +
                        std::to_string(config.placement.host_count()) +
                        " hosts, but the process manager started " + std::to_string(pmi->size()) +
                        " bglrun processes; start exactly one per host");
    auto job = o.job;
    job.host_index = pmi->rank();
    config = job_runtime::JobConfig::resolve(job);
    spdlog::set_pattern("[bglrun@" + std::to_string(pmi->rank()) + " %^%l%$] %v");
  }
  config.regions.push_back(
      {std::string(collective_net_emu::kRegionName), collective_net_emu::region_bytes(config)});
  // The communication matrix, for the statistics (one row per task, written when it ends).
  if ((o.stats_file || o.report_file) && config.ntasks() <= job_runtime::kTrafficMaxTasks)
    config.regions.push_back({std::string(job_runtime::kTrafficRegion),
                              job_runtime::traffic_region_bytes(config.ntasks())});
  if (o.dry_run || o.show_mapping) print_mapping(config);
  const auto extents = packet_layer::Machine::used_extents(config);
  if (o.dry_run) {
    print_segment_size(job_runtime::Segment::allocated_bytes(
        packet_layer::Machine::segment_bytes(config), extents));
    return 0;
  }
  if (!executable(o.command.front()))
    throw ConfigError("program '" + printable(o.command.front()) + "' not found or not executable");
  // Before anything runs: an unwritable statistics path fails the job now, not after it ran.
  std::optional<bglrun::StatsFile> stats, report;
  if (o.stats_file) stats.emplace(*o.stats_file);
  if (o.report_file) report.emplace(*o.report_file, "the report");
  std::optional<bglrun::TraceFile> trace;
  if (o.trace_file) {
    auto clock = config.virtual_time ? bglrun::TraceFile::Clock::virtual_time
                                     : bglrun::TraceFile::Clock::host;
    if (o.trace_time) {
      clock = bglrun::parse_trace_clock(*o.trace_time, "--trace-time (BGL_TRACE_TIME)");
      if (clock == bglrun::TraceFile::Clock::virtual_time && !config.virtual_time)
        throw ConfigError("--trace-time virtual needs virtual time (--virtual-time)");
    }
    trace.emplace(*o.trace_file, clock, o.trace_events.value_or(bglrun::TraceFile::kDefaultEvents),
                  config.ntasks());
  }
  // The tasks count their collectives per call site whenever a result can show them.
  std::optional<bglrun::CallSiteFiles> call_sites;
  if (o.stats_file || o.report_file || o.trace_file)
    call_sites.emplace(o.stats_file    ? *o.stats_file
                       : o.report_file ? *o.report_file
                                       : *o.trace_file);
  const auto launch = bglrun::choose_launch(o.launcher, o.mpich_prefix, o.command);
  const bool mpi = launch.how != bglrun::Launch::direct;
  // MPI ranks are started by bglrun, which is their PMI server, unless Hydra's mpiexec was asked
  // for on one host (the device MPICH's mpiexec starts ranks on one host only).
  const bool through_hydra = launch.how == bglrun::Launch::mpiexec && !pmi;
  const bool serve_pmi = mpi && !through_hydra;
  const auto host_of_rank = serve_pmi ? hosts_of_ranks(config) : std::vector<int>{};

  // Checks BGL_FENCES. Emulated hosts share this machine's cores: their threads all count.
  config.fences = job_runtime::fence_mode_for_host(config.busy_threads());
  if (const int stale = job_runtime::Segment::remove_stale())
    spdlog::warn("removed {} shared-memory segments left by launchers that were killed", stale);
  config.job_id = pmi ? std::hash<std::string>{}(pmi->kvs_name())
                      : (std::uint64_t{std::random_device{}()} << 32 | std::random_device{}());
  auto segment =
      job_runtime::Segment::create(packet_layer::Machine::segment_bytes(config), extents);
  bglrun::Watchdog watchdog(segment.name());
  const auto machine = packet_layer::Machine::format(segment.bytes(), config);
  collective_net_emu::format(machine.job());
  spdlog::info("{}; segment {} ({} MiB virtual)", config.summary(), segment.name(),
               segment.bytes().size() >> 20);
  const auto& placement = config.placement;
  if (placement.host_count() > 1 || placement.transport != job_runtime::Transport::shm) {
    // Reported at start-up (once per job: by host 0): which nodes each host holds.
    const auto text = "placement (" + placement.source + ", transport " +
                      std::string(job_runtime::to_string(placement.transport)) + "):\n" +
                      placement.report(config.shape);
    if (placement.this_host == 0)
      std::fprintf(stderr, "bglrun: %s", text.c_str());
    else
      spdlog::info("{}", text);
  }

  std::unique_ptr<packet_layer::OfiAgent> agent;
  if (const auto& ns = placement.hosts[static_cast<std::size_t>(placement.this_host)].netns;
      !ns.empty())
    enter_netns(ns);
  if (placement.transport == job_runtime::Transport::ofi) {
    agent = std::make_unique<packet_layer::OfiAgent>(machine, placement,
                                                     packet_layer::OfiOptions::from_environment());
    std::vector<std::vector<std::byte>> addresses{agent->address()};
    if (pmi) {
      pmi->put("bgl-ofi-" + std::to_string(pmi->rank()), packet_layer::to_hex(addresses[0]));
      pmi->barrier();
      addresses.clear();
      for (int h = 0; h < pmi->size(); ++h)
        addresses.push_back(packet_layer::from_hex(pmi->get("bgl-ofi-" + std::to_string(h))));
      // Done with the process manager: after PMI finalize, Hydra no longer treats one host's
      // death as a PMI abort that kills the others outright (with -disable-auto-cleanup), so the
      // surviving agents can name the dead host and end the job themselves. MPI ranks still need
      // it: their PMI server finalizes once they all have.
      if (!serve_pmi) pmi->finalize();
    }
    spdlog::info("libfabric agent: {}", agent->describe());
    agent->start(addresses);
  }

  if (config.virtual_time) confine_tasks(o.vt_cores.value_or(1));
  if (config.virtual_time && config.virtual_time->sync == virtual_time::Sync::conservative &&
      !packet_layer::Machine::synchronised(config) && (!pmi || pmi->rank() == 0))
    spdlog::warn(
        "conservative synchronisation covers one host in heater or virtual-node mode: this job's "
        "clocks keep host order");
  // The host timeline's zero, moved to the job's start; not once the libfabric agent's thread
  // runs (setenv is not safe beside threads), when the zero stays where the trace was set up.
  if (trace && !agent) trace->mark_start();
  const auto started = std::chrono::steady_clock::now();
  bglrun::RunSettings settings{o.command, o.timeout_seconds, o.kill_grace_seconds, {}};
  // Several hosts: a task may wait for another host's, which this host cannot see.
  if (config.placement.host_count() == 1 &&
      config.placement.transport == job_runtime::Transport::shm)
    settings.deadlock_seconds = o.deadlock_seconds;
  settings.on_process_group = [&watchdog](pid_t group) { watchdog.watch_group(group); };
  if (agent) settings.agent_fd = agent->wake_fd();
  // Idle while the job runs, the launcher watches the segment's control structures: a stray
  // write into them stops the job with their name instead of hanging it.
  packet_layer::SegmentMonitor monitor(machine, collective_net_emu::constant_parts(machine.job()));
  std::unique_ptr<bglrun::PmiServer> pmi_server;
  // Every MPI job, on one host or several, selects collectives without MPICH's node-aware steps.
  std::optional<bglrun::FlatCollectiveSelection> selection;
  std::optional<bglrun::SharedHostTopology> topology;
  if (mpi) {
    selection.emplace();
    topology.emplace();
  }
  // One host: its ranks are the whole job, and the store is its own.
  std::optional<bglrun::HostStore> host_store;
  if (serve_pmi) {
    std::vector<int> local;
    for (int r = 0; r < config.ntasks(); ++r)
      if (host_of_rank[static_cast<std::size_t>(r)] == placement.this_host) local.push_back(r);
    bglrun::JobStore* store =
        pmi ? static_cast<bglrun::JobStore*>(&*pmi) : &host_store.emplace(host_kvs_name(segment));
    pmi_server =
        std::make_unique<bglrun::PmiServer>(*store, std::move(local), host_of_rank,
                                            [&config](int r) { return describe_rank(config, r); });
    auto* server = pmi_server.get();
    settings.before_fork = [server](int rank) { return server->connect(rank); };
    settings.prepare_task = [server](int rank) { server->prepare_task(rank); };
    settings.after_fork = [server](int) { server->after_fork(); };
    settings.external_fault_status = [server] {
      return server->fault() ? server->fault_status() : 1;
    };
    server->start();
  }
  settings.external_fault = [&agent, &monitor, &pmi_server]() -> std::optional<std::string> {
    if (pmi_server)
      if (auto fault = pmi_server->fault()) return fault;
    if (agent)
      if (auto fault = agent->fault()) return fault;
    if (auto corrupt = monitor.poll())
      return "the job's shared-memory segment is corrupt: " + *corrupt;
    return std::nullopt;
  };
  int status = through_hydra ? bglrun::run_with_mpiexec(machine, segment, settings, launch.mpiexec)
                             : bglrun::JobRunner(machine, segment, settings).run();
  watchdog.disarm();   // the supervisors killed whatever was left of the job
  pmi_server.reset();  // stops serving; finalizes this host's PMI connection
  std::vector<bglrun::SlowestTask> other_hosts_slowest;
  if (agent) {
    const int remote = agent->finish(status);
    if (const auto fault = agent->fault()) {
      std::fprintf(stderr, "bglrun: host %d: %s; the job was stopped\n", placement.this_host,
                   fault->c_str());
      // Stopped because another host failed: its status, so that the job's (Hydra ORs the
      // hosts' statuses) is the failing rank's.
      if (remote != 0) status = remote;
      if (status == 0) status = 1;
    }
    other_hosts_slowest = agent->other_hosts_slowest();
    const auto s = agent->stats();
    spdlog::info(
        "libfabric agent: {} packets sent in {} messages ({} bytes), {} received, {} "
        "rejected, {} credit stalls, {} FIFO stalls, {} remote stores sent, {} applied",
        s.packets_sent, s.messages_sent, s.bytes_sent, s.packets_received, s.rejected,
        s.credit_stalls, s.fifo_stalls, s.stores_sent, s.stores_applied);
    agent.reset();
  }

  spdlog::info("{}", bglrun::statistics_summary(machine));
  const std::chrono::duration<double> host = std::chrono::steady_clock::now() - started;
  if (machine.job().vt_params() && placement.this_host == 0)
    std::fputs(bglrun::virtual_time_summary(machine, host.count(), other_hosts_slowest).c_str(),
               stderr);
  std::optional<nlohmann::json> document;
  if (stats || report) document = bglrun::statistics_document(machine, host.count());
  // Several hosts: one result for the job, written by host 0 from every host's part.
  if (placement.host_count() > 1 && call_sites) {
    const bglrun::HostParts parts(o.stats_file    ? *o.stats_file
                                  : o.report_file ? *o.report_file
                                                  : *o.trace_file,
                                  config.job_id, placement.host_count(), placement.this_host);
    const bglrun::HostParts::Files files{document ? &*document : nullptr, call_sites->dir(),
                                         trace ? trace->tasks_dir() : std::filesystem::path{}};
    if (placement.this_host != 0) return parts.publish(files) || status != 0 ? status : 1;
    if (!merge_host_parts(parts, files, document, status != 0) && status == 0) status = 1;
  }
  std::optional<nlohmann::json> sites;
  if (call_sites)
    sites = call_sites->merge(config.ntasks(),
                              machine.job().vt_params() ? machine.job().vt_params()->cpu_hz : 0);
  if (document) {
    if (sites) (*document)["collective_sites"] = *sites;
    const auto text = bglrun::statistics_text(*document);
    if (stats && !stats->commit(text) && status == 0) status = 1;
    if (!bglrun::finish_report(text, report ? &*report : nullptr) && status == 0) status = 1;
  }
  if (trace && !trace->commit(machine, sites ? &*sites : nullptr) && status == 0) status = 1;
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 3 && std::string_view(argv[1]) == "-x" && std::string_view(argv[2]) == "--host-exec")
    host_exec(argc, argv);
  try {
    return launch(argc, argv);
  } catch (const bgl::ConfigError& e) {
    std::fprintf(stderr, "bglrun: %s\n", bgl::printable_message(e.what()).c_str());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bglrun: internal error: %s\n", bgl::printable_message(e.what()).c_str());
    return 70;
  }
}
