#pragma once
// Starts the tasks of a job (those placed on this host) and supervises them until they all end:
// forwards signals, enforces the timeout, and stops the whole job (SIGTERM, then SIGKILL after a
// grace period) as soon as one task fails, naming it. Tasks run in their own process group and die
// with the launcher (PDEATHSIG). A task that exits 0 without finishing the bglemu runtime, in a job
// whose tasks use it, fails the job too: the others would wait for it forever.
#include <signal.h>
#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "bgl/job_runtime/segment.hpp"
#include "bgl/packet_layer/machine.hpp"

namespace bgl::bglrun {

// The signals the launcher handles itself; block them before creating anything to clean up.
sigset_t launcher_signals();

struct RunSettings {
  std::vector<std::string> command;
  double timeout_seconds = 0;
  double kill_grace_seconds = 2;
  // Stop the job as deadlocked once every task has kept sleeping in a runtime wait without work
  // for this long (exit status 125, with what each task waits for); 0: never.
  double deadlock_seconds = 0;
  // Polled while the job runs: a problem outside the tasks (another host disappeared) that ends
  // the job; the launcher then exits with status 1.
  std::function<std::optional<std::string>()> external_fault;
  // The exit status for such a problem (default 1), read when it is seen.
  std::function<int()> external_fault_status;
  // What one task gets of the launcher's own (its PMI connection): opened in the launcher just
  // before the task's fork, set up in the task's process after fork and before exec (its
  // environment), closed in the launcher after the fork. A task so inherits its own descriptors
  // only, not every earlier task's: start-up stays linear in the number of tasks. before_fork
  // answers false (errno set) when the task cannot be given what it needs.
  std::function<bool(int)> before_fork;
  std::function<void(int)> prepare_task;
  std::function<void(int)> after_fork;
  // The libfabric agent's eventfd (-1: none), which each task inherits as BGL_AGENT_FD.
  int agent_fd = -1;
  // Told each process group the job's processes run in, as soon as it exists (the watchdog kills
  // them if the launcher dies).
  std::function<void(pid_t)> on_process_group;
};

class JobRunner {
 public:
  JobRunner(const packet_layer::Machine& machine, const job_runtime::Segment& segment,
            RunSettings settings);
  // Returns the launcher's exit status: 0, the first failing task's exit code, 128 + signal, or
  // 124 for a timeout, 125 for a deadlock.
  int run();

 private:
  struct Task {
    pid_t pid = -1;
    bool running = false;
  };
  void start_tasks();
  void on_exit(pid_t pid, int status);
  // `task_failed`: the reason is a task of the job (the count then leaves it out).
  void stop(int signal, const std::string& why, bool task_failed = false);
  void check_left_early();
  std::string describe(int rank) const;
  int running_count() const;

  const packet_layer::Machine& machine_;
  const job_runtime::Segment& segment_;
  RunSettings settings_;
  std::vector<Task> tasks_;
  std::vector<int> left_early_;  // ranks that exited 0 without finishing their runtime, in order
  pid_t group_ = 0;
  bool stopping_ = false;
  int exit_status_ = 0;
};

}  // namespace bgl::bglrun
