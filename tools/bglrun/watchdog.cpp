#include "watchdog.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

#include "bgl/job_runtime/log.hpp"

namespace bgl::bglrun {
namespace {

constexpr int kMaxGroups = 16;
constexpr pid_t kDisarm = 0;

void write_text(const std::string& text) {
  for (std::size_t done = 0; done < text.size();) {
    const ssize_t n = write(STDERR_FILENO, text.data() + done, text.size() - done);
    if (n <= 0 && errno != EINTR) return;
    if (n > 0) done += static_cast<std::size_t>(n);
  }
}

// The watchdog itself (a grandchild of the launcher, so never one of the launcher's children
// that its supervisors reap or kill). Only system calls from here on: it was forked from a
// process that may have threads. Signals stay blocked as the launcher had them (SIGINT, SIGTERM,
// SIGHUP, SIGQUIT), and its own process group keeps it out of the terminal's and of a killpg()
// aimed at the launcher's group: it ends when the pipe closes.
[[noreturn]] void watch(int in, const std::string& path, const std::string& report) {
  setpgid(0, 0);
  if (dup2(in, 3) != 3) _exit(1);
  close_range(4, ~0u, 0);  // the segment's descriptor too: its lock marks the job as live
  const int devnull = open("/dev/null", O_RDWR);
  if (devnull >= 0) {
    dup2(devnull, STDIN_FILENO);
    dup2(devnull, STDOUT_FILENO);
    if (devnull > 3) close(devnull);
  }
  std::array<pid_t, kMaxGroups> groups{};
  int count = 0;
  bool armed = true;
  for (pid_t value;;) {
    const ssize_t n = read(3, &value, sizeof value);
    if (n < 0 && errno == EINTR) continue;
    if (n != static_cast<ssize_t>(sizeof value)) break;  // the launcher is gone
    if (value == kDisarm)
      armed = false;
    else if (value > 0 && count < kMaxGroups)
      groups[static_cast<std::size_t>(count++)] = value;
  }
  if (armed) {
    for (int i = 0; i < count; ++i)
      killpg(groups[static_cast<std::size_t>(i)], SIGKILL);
  }
  const bool removed = unlink(path.c_str()) == 0;
  if (armed && (count > 0 || removed)) write_text(report);
  _exit(0);
}

}  // namespace

Watchdog::Watchdog(const std::string& segment_name) {
  // A socket rather than a pipe: a write after the watchdog died fails (MSG_NOSIGNAL) instead of
  // killing the launcher with SIGPIPE.
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    spdlog::warn("cannot start the launcher's watchdog (socketpair: {})", std::strerror(errno));
    return;
  }
  // Prepared before fork(): the watchdog allocates nothing.
  const std::string path = "/dev/shm" + segment_name;
  const std::string report = "bglrun: the launcher (pid " + std::to_string(getpid()) +
                             ") died; its watchdog killed the job's processes and removed " +
                             "segment " + segment_name + "\n";
  const pid_t child = fork();
  if (child == 0) {
    close(fds[1]);
    if (fork() == 0) watch(fds[0], path, report);
    _exit(0);
  }
  close(fds[0]);
  if (child < 0) {
    spdlog::warn("cannot start the launcher's watchdog (fork: {})", std::strerror(errno));
    close(fds[1]);
    return;
  }
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  fd_ = fds[1];
}

Watchdog::~Watchdog() {
  if (fd_ >= 0) close(fd_);
}

void Watchdog::watch_group(pid_t group) {
  if (group > 0) send(group);
}

void Watchdog::disarm() {
  send(kDisarm);
}

void Watchdog::send(pid_t value) {
  if (fd_ < 0) return;
  while (::send(fd_, &value, sizeof value, MSG_NOSIGNAL) < 0 && errno == EINTR) {
  }
}

}  // namespace bgl::bglrun
