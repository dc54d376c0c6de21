#include "job_runner.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "bgl/job_runtime/log.hpp"
#include "deadlock_watch.hpp"
#include "supervise_util.hpp"

namespace bgl::bglrun {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kDeadlockStatus = 125;

constexpr int kForwardedSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

}  // namespace

sigset_t launcher_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGCHLD);
  for (int s : kForwardedSignals)
    sigaddset(&set, s);
  return set;
}

JobRunner::JobRunner(const packet_layer::Machine& machine, const job_runtime::Segment& segment,
                     RunSettings settings)
    : machine_(machine), segment_(segment), settings_(std::move(settings)) {
  tasks_.resize(static_cast<std::size_t>(machine.mapping().size()));
}

std::string JobRunner::describe(int rank) const {
  const auto& m = machine_.mapping();
  const auto r = static_cast<torus_emu::Rank>(rank);
  return "rank " + std::to_string(rank) + " on node " + torus_emu::to_string(m.coord(r)) +
         " t=" + std::to_string(m.location(r).t) + " (pid " + std::to_string(tasks_[r].pid) + ")";
}

int JobRunner::running_count() const {
  int n = 0;
  for (const auto& t : tasks_)
    n += t.running;
  return n;
}

void JobRunner::start_tasks() {
  const pid_t launcher = getpid();
  const std::string size = std::to_string(tasks_.size());
  const std::string fd = std::to_string(segment_.fd());
  std::vector<char*> argv;
  for (const auto& a : settings_.command)
    argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  sigset_t none;
  sigemptyset(&none);
  std::fflush(nullptr);

  int started = 0;
  for (std::size_t r = 0; r < tasks_.size(); ++r) {
    if (!machine_.local(static_cast<torus_emu::Rank>(r))) continue;  // another host runs it
    const std::string rank = std::to_string(r);
    const bool prepared = !settings_.before_fork || settings_.before_fork(static_cast<int>(r));
    const pid_t pid = prepared ? fork() : -1;
    const int error = errno;
    if (settings_.after_fork && pid != 0) settings_.after_fork(static_cast<int>(r));
    if (pid < 0) {
      spdlog::critical("cannot start rank {}: {}", r, std::strerror(error));
      stop(SIGKILL, "start-up failed");
      exit_status_ = 1;
      return;
    }
    if (pid == 0) {
      setpgid(0, group_);  // group_ == 0 for rank 0: it founds the job's process group
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != launcher) _exit(127);
      sigprocmask(SIG_SETMASK, &none, nullptr);
      const int devnull = open("/dev/null", O_RDONLY);
      if (devnull >= 0) dup2(devnull, STDIN_FILENO);
      setenv("BGL_RANK", rank.c_str(), 1);
      setenv("BGL_SIZE", size.c_str(), 1);
      setenv("BGL_SEGMENT", segment_.name().c_str(), 1);
      setenv("BGL_SEGMENT_FD", fd.c_str(), 1);
      if (settings_.agent_fd >= 0 && fcntl(settings_.agent_fd, F_SETFD, 0) == 0) {
        char text[16];
        std::snprintf(text, sizeof text, "%d", settings_.agent_fd);
        setenv("BGL_AGENT_FD", text, 1);
      }
      if (settings_.prepare_task) settings_.prepare_task(static_cast<int>(r));
      execvp(argv[0], argv.data());
      std::fprintf(stderr, "bglrun: cannot execute '%s': %s\n", argv[0], std::strerror(errno));
      _exit(127);
    }
    if (started++ == 0) group_ = pid;
    setpgid(pid, group_);  // also from the parent, so that no signal can race the child's own call
    if (started == 1 && settings_.on_process_group) settings_.on_process_group(group_);
    tasks_[r] = Task{pid, true};
  }
  spdlog::info("started {} tasks (process group {})", started, group_);
}

void JobRunner::stop(int signal, const std::string& why, bool task_failed) {
  if (!stopping_) {
    stopping_ = true;
    const int running = running_count();
    const std::string tasks = std::to_string(running) + (running == 1 ? " task" : " tasks");
    if (running == 0)
      std::fprintf(stderr, "bglrun: %s\n", why.c_str());
    else
      std::fprintf(stderr, "bglrun: %s; stopping the %s%s\n", why.c_str(),
                   task_failed ? "other " : "", tasks.c_str());
  }
  if (group_ > 0) killpg(group_, signal);
}

// A task that ended with code 0 without having finished the runtime (Runtime destroyed, message
// layer finalized) is harmless among plain programs, but a task that uses the runtime and has not
// finished may wait for it forever (a barrier counts every task; its packets never come): as with
// MPI_Finalize, every task of a job that uses the runtime must take part to the end.
void JobRunner::check_left_early() {
  if (stopping_ || left_early_.empty()) return;
  const auto unfinished = [&](std::size_t r) {
    const auto& slot = machine_.job().task(static_cast<torus_emu::Rank>(r));
    return slot.pid != 0 && slot.published.load(std::memory_order_acquire) == 0;
  };
  const int rank = left_early_.front();
  const bool itself = unfinished(static_cast<std::size_t>(rank));
  bool waiting = itself;
  for (std::size_t r = 0; r < tasks_.size() && !waiting; ++r)
    waiting = machine_.local(static_cast<torus_emu::Rank>(r)) && unfinished(r);
  if (!waiting) return;
  exit_status_ = 1;
  stop(SIGTERM,
       describe(rank) + " exited with code 0 before the job finished (" +
           (itself ? "without shutting down its bglemu runtime"
                   : "without taking part, while tasks that use the bglemu runtime may "
                     "wait for it") +
           ")",
       true);
}

void JobRunner::on_exit(pid_t pid, int status) {
  int rank = -1;
  for (std::size_t r = 0; r < tasks_.size(); ++r)
    if (tasks_[r].pid == pid) rank = static_cast<int>(r);
  if (rank < 0) return;  // not ours (cannot happen: we have no other children)
  tasks_[static_cast<std::size_t>(rank)].running = false;
  const bool failed = !WIFEXITED(status) || WEXITSTATUS(status) != 0;
  if (!failed && machine_.job()
                         .task(static_cast<torus_emu::Rank>(rank))
                         .published.load(std::memory_order_acquire) == 0)
    left_early_.push_back(rank);
  if (!failed || stopping_) return;
  if (WIFEXITED(status)) {
    exit_status_ = WEXITSTATUS(status);
    stop(SIGTERM, describe(rank) + " exited with code " + std::to_string(exit_status_), true);
  } else {
    exit_status_ = 128 + WTERMSIG(status);
    stop(SIGTERM, describe(rank) + " was killed by " + signal_name(WTERMSIG(status)), true);
  }
}

int JobRunner::run() {
  const sigset_t set = launcher_signals();
  sigset_t previous;
  sigprocmask(SIG_BLOCK, &set, &previous);
  start_tasks();

  const auto start = Clock::now();
  const auto deadline = settings_.timeout_seconds > 0 ? start + seconds(settings_.timeout_seconds)
                                                      : Clock::time_point::max();
  auto kill_at = Clock::time_point::max();
  bool killed = false;
  std::optional<DeadlockWatch> deadlock;
  if (settings_.deadlock_seconds > 0)
    deadlock.emplace(
        machine_, segment_,
        std::chrono::milliseconds(static_cast<std::int64_t>(settings_.deadlock_seconds * 1000)));
  std::vector<pid_t> running(tasks_.size());
  while (running_count() > 0) {
    siginfo_t info;
    const timespec tick{0, 50'000'000};
    const int sig = sigtimedwait(&set, &info, &tick);
    for (int status;;) {
      const pid_t pid = waitpid(-1, &status, WNOHANG);
      if (pid <= 0) break;
      on_exit(pid, status);
    }
    check_left_early();
    const auto now = Clock::now();
    if (sig > 0 && sig != SIGCHLD) {
      if (!stopping_) exit_status_ = 128 + sig;
      stop(sig, "received " + signal_name(sig) + ": the job was interrupted");
    } else if (settings_.external_fault && !stopping_) {
      if (auto fault = settings_.external_fault()) {
        exit_status_ = settings_.external_fault_status ? settings_.external_fault_status() : 1;
        stop(SIGTERM, *fault);
      }
    }
    if (deadlock && !stopping_) {
      for (std::size_t r = 0; r < tasks_.size(); ++r)
        running[r] = tasks_[r].running ? tasks_[r].pid : 0;
      if (auto headline = deadlock->check(now, running)) {
        exit_status_ = kDeadlockStatus;
        stop(SIGTERM, *headline);
        std::fprintf(stderr, "bglrun: what each task waits for:\n%s\n",
                     deadlock->states(running).c_str());
      }
    }
    if (now >= deadline && !stopping_) {
      exit_status_ = 124;
      stop(SIGTERM, "the job timed out after " + std::to_string(settings_.timeout_seconds) + " s");
    }
    if (stopping_ && kill_at == Clock::time_point::max())
      kill_at = now + seconds(settings_.kill_grace_seconds);
    if (now >= kill_at && !killed) {
      spdlog::warn("tasks still running {} s after SIGTERM; sending SIGKILL",
                   settings_.kill_grace_seconds);
      killpg(group_, SIGKILL);
      killed = true;
    }
  }
  // Children of tasks that outlived them belong to the job too.
  if (group_ > 0) killpg(group_, SIGKILL);
  sigprocmask(SIG_SETMASK, &previous, nullptr);
  return exit_status_;
}

}  // namespace bgl::bglrun
