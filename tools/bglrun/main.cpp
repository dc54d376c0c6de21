// bglrun: starts a program's tasks on an emulated Blue Gene/L partition.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>

#include "bgl/collnet/region.hpp"
#include "bgl/log.hpp"
#include "bgl/pkt/machine.hpp"
#include "bgl/pkt/segment.hpp"
#include "bgl/torus/error.hpp"
#include "job_runner.hpp"
#include "mpiexec_launch.hpp"
#include "options.hpp"
#include "stats_report.hpp"

namespace {

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

void print_mapping(const pkt::JobConfig& c) {
  std::printf("# %s\n# rank  x  y  z  t\n", c.summary().c_str());
  for (int r = 0; r < c.ntasks(); ++r) {
    const auto rank = static_cast<torus::Rank>(r);
    const auto p = c.mapping.coord(rank);
    std::printf("%6d %2d %2d %2d %2d\n", r, p.x, p.y, p.z, c.mapping.location(rank).t);
  }
}

int launch(int argc, char** argv) {
  // Signals wait until the launcher can clean up after them.
  const sigset_t signals = run::launcher_signals();
  sigprocmask(SIG_BLOCK, &signals, nullptr);

  log::init("bglrun");
  const auto o = run::parse_command_line(argc, argv);
  if (o.help) {
    std::fputs(run::usage(), stdout);
    std::fputs(run::mpiexec_usage(), stdout);
    return 0;
  }
  if (o.version) {
    std::puts("bglrun (bglemu) 0.1.0");
    return 0;
  }
  if (o.log_level) log::set_level(*o.log_level, "--log-level");
  auto config = pkt::JobConfig::resolve(o.job);
  config.regions.push_back({std::string(collnet::kRegionName), collnet::region_bytes(config)});
  if (o.dry_run || o.show_mapping) print_mapping(config);
  if (o.dry_run) return 0;
  if (!executable(o.command.front()))
    throw ConfigError("program '" + o.command.front() + "' not found or not executable");
  const auto mpiexec = run::choose_mpiexec(o.launcher, o.command);

  if (const int stale = pkt::Segment::remove_stale())
    spdlog::warn("removed {} shared-memory segments left by launchers that were killed", stale);
  auto segment = pkt::Segment::create(pkt::Machine::segment_bytes(config));
  const auto machine = pkt::Machine::format(segment.bytes(), config);
  collnet::format(machine);
  spdlog::info("{}; segment {} ({} MiB virtual)", config.summary(), segment.name(),
               segment.bytes().size() >> 20);

  const run::RunSettings settings{o.command, o.timeout_seconds, o.kill_grace_seconds};
  const int status = mpiexec ? run::run_with_mpiexec(machine, segment, settings, *mpiexec)
                             : run::JobRunner(machine, segment, settings).run();
  spdlog::info("{}", run::statistics_summary(machine));
  if (o.stats_file) {
    std::ofstream out(*o.stats_file);
    out << run::statistics_json(machine);
    if (!out) spdlog::error("cannot write statistics to {}", *o.stats_file);
  }
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return launch(argc, argv);
  } catch (const bgl::ConfigError& e) {
    std::fprintf(stderr, "bglrun: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bglrun: internal error: %s\n", e.what());
    return 70;
  }
}
