#pragma once
// Small helpers shared by bglrun's two supervisors (direct launch: job_runner, MPI programs
// through Hydra: mpiexec_launch), so that both describe signals and deadlines the same way.
#include <chrono>
#include <string>

namespace bgl::bglrun {

// "signal 9 (SIGKILL: Killed)": number, abbreviation and description, as bglrun reports a rank
// killed by a signal or a signal bglrun itself received.
std::string signal_name(int sig);

// A duration in seconds (from --timeout / --kill-grace) on the steady clock.
std::chrono::steady_clock::duration seconds(double s);

}  // namespace bgl::bglrun
