#pragma once
// Choosing how to start a program, and running an MPI program (linked with MPICH built with the
// bgl device, tools/build_mpich.sh) through Hydra's mpiexec from the same MPICH prefix: bglrun
// creates and formats the job's segment as for any program, then starts `mpiexec -n N program...`
// as its only child with BGL_SEGMENT and BGL_SIZE in the environment; each rank takes its rank from
// PMI and attaches the segment by name.
//
// bglrun supervises mpiexec like its own tasks: it forwards SIGINT/SIGTERM/SIGHUP/SIGQUIT,
// enforces the timeout (SIGTERM to mpiexec, SIGKILL to everything after the grace period), reads
// Hydra's report of a failed process to name the rank (ranks record their pid in the segment when
// they attach), and, being a child subreaper, kills whatever processes of the job outlive
// mpiexec, so that no process is left behind; main removes the segment.
#include <optional>
#include <string>
#include <vector>

#include "bgl/job_runtime/segment.hpp"
#include "bgl/packet_layer/machine.hpp"
#include "job_runner.hpp"

namespace bgl::bglrun {

// The help text for --launcher.
const char* mpiexec_usage();

// How bglrun starts the program's processes.
enum class Launch {
  direct,   // as plain tasks (packet- and message-level programs)
  pmi,      // as MPI ranks that bglrun starts itself and serves PMI to (pmi_server.hpp)
  mpiexec,  // as MPI ranks through the device MPICH's Hydra mpiexec
};
struct LaunchChoice {
  Launch how = Launch::direct;
  std::string mpiexec;  // Launch::mpiexec: the program to run
};

// Decides how to start `command`: `choice` is --launcher's value or BGL_LAUNCHER (auto, pmi,
// mpiexec or direct; default auto). auto is pmi when the program is dynamically linked with a
// libmpi that links libbglml (the bgl device), else direct. mpiexec is found in `mpich_prefix`
// (--mpich-prefix), BGL_MPIEXEC, BGL_MPICH_PREFIX, the prefix of that libmpi, bglrun's own prefix,
// the cache's latest build, in this order. Throws ConfigError for an unknown choice, or when
// mpiexec was asked for but cannot be found, or a named prefix has none.
LaunchChoice choose_launch(const std::optional<std::string>& choice,
                           const std::optional<std::string>& mpich_prefix,
                           const std::vector<std::string>& command);

// Runs the job through mpiexec; returns bglrun's exit status like JobRunner::run(): 0, the
// failing rank's exit code, 128 + signal, or 124 for a timeout.
int run_with_mpiexec(const packet_layer::Machine& machine, const job_runtime::Segment& segment,
                     const RunSettings& settings, const std::string& mpiexec);

}  // namespace bgl::bglrun
