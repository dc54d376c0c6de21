#include "mpiexec_launch.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>

#include "bgl/job_runtime/env.hpp"
#include "bgl/job_runtime/log.hpp"
#include "bgl/torus_emu/error.hpp"
#include "bgl/torus_emu/user_text.hpp"
#include "deadlock_watch.hpp"
#include "supervise_util.hpp"

namespace bgl::bglrun {
namespace {

using Clock = std::chrono::steady_clock;

std::string find_in_path(const std::string& program) {
  if (program.find('/') != std::string::npos) return program;
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  for (std::size_t start = 0; start <= dirs.size();) {
    const auto end = std::min(dirs.find(':', start), dirs.size());
    const std::string dir = end > start ? dirs.substr(start, end - start) : ".";
    if (access((dir + "/" + program).c_str(), X_OK) == 0) return dir + "/" + program;
    start = end + 1;
  }
  return program;
}

// Output of a short command (argv[0] is a path), with stderr discarded; empty on failure.
std::string capture(const std::vector<std::string>& command) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return {};
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return {};
  }
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    const int devnull = open("/dev/null", O_WRONLY);
    if (devnull >= 0) dup2(devnull, STDERR_FILENO);
    std::vector<char*> argv;
    for (const auto& a : command)
      argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(fds[1]);
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? out : std::string{};
}

// The libmpi the program loads, when that libmpi loads libbglml (our device); else empty.
std::string bgl_libmpi_of(const std::string& program) {
  const std::string out = capture({"/usr/bin/ldd", program});
  std::istringstream lines(out);
  std::string libmpi;
  bool bglml = false;
  for (std::string line; std::getline(lines, line);) {
    const auto arrow = line.find("=> ");
    if (arrow == std::string::npos) continue;
    const std::string name = line.substr(0, arrow);
    std::string path = line.substr(arrow + 3);
    path = path.substr(0, path.find(' '));
    if (name.find("libmpi.so") != std::string::npos) libmpi = path;
    if (name.find("libbglml.so") != std::string::npos) bglml = true;
  }
  return bglml ? libmpi : std::string{};
}

// The parent of process `pid` (/proc/PID/stat), or -1.
pid_t parent_of(const std::string& pid) {
  std::ifstream stat("/proc/" + pid + "/stat");
  std::string text;
  std::getline(stat, text);
  const auto close_paren = text.rfind(')');
  if (close_paren == std::string::npos || close_paren + 2 > text.size()) return -1;
  std::istringstream fields(text.substr(close_paren + 2));
  char state = 0;
  long ppid = -1;
  fields >> state >> ppid;
  return static_cast<pid_t>(ppid);
}

// Children of this process (the job's processes that outlived their parents are re-parented to
// bglrun, a child subreaper).
std::vector<pid_t> children() {
  std::vector<pid_t> out;
  const pid_t self = getpid();
  DIR* proc = opendir("/proc");
  if (!proc) return out;
  while (const dirent* e = readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (*end != '\0' || pid <= 0) continue;
    if (parent_of(e->d_name) == self) out.push_back(static_cast<pid_t>(pid));
  }
  closedir(proc);
  return out;
}

class MpiexecJob {
 public:
  MpiexecJob(const packet_layer::Machine& machine, const job_runtime::Segment& segment,
             const RunSettings& settings, std::string mpiexec)
      : machine_(machine),
        segment_(segment),
        settings_(settings),
        mpiexec_(std::move(mpiexec)),
        pidfds_(static_cast<std::size_t>(machine.mapping().size()), -1),
        pmi_sockets_(pidfds_.size(), -1) {}

  int run();

 private:
  void start();
  void forward_output();
  void forward_errors();
  void emit(const char* data, std::size_t n);
  void end_of_line();
  bool watch_ranks();
  void take_ended_ranks();
  void rank_ended(int rank, bool watched);
  int hold_pmi_socket(pid_t pid, int pidfd);
  void end_job_once_reaped();
  void end_job();
  void stop(int sig, const std::string& why);
  void reap();
  void kill_leftovers();
  int report();
  std::string describe(int rank) const;

  const packet_layer::Machine& machine_;
  const job_runtime::Segment& segment_;
  const RunSettings& settings_;
  std::string mpiexec_;
  pid_t child_ = -1;
  int out_ = -1;  // mpiexec's stdout (ours to forward)
  int err_ = -1;  // mpiexec's stderr (forwarded at once; lines looked at for MPICH's abort)
  std::string err_line_;
  int aborted_by_ = -1;  // the rank whose MPI_Abort (or fatal MPI error) MPICH reported
  bool child_done_ = false;
  int child_status_ = 0;
  bool stopping_ = false;
  // bglrun itself stopped the job (a signal it received, its timeout): ranks that then die of the
  // signal passed on are not the cause, and none is named.
  bool stopped_by_launcher_ = false;
  int exit_status_ = -1;
  // Output forwarding: lines that may be Hydra's own ("[mpiexec@host] ...") are held until their
  // end so that the exit-code line can be taken out; everything else passes at once.
  std::string line_;
  bool holding_ = true;  // at the start of a line, or inside a held line
  // Ranks: a pidfd per rank once the rank has recorded its pid (when it attached the segment),
  // all in one epoll set; the first rank to end without having finished MPI (no statistics
  // published) is the culprit.
  //
  // Naming that rank must not depend on how soon bglrun looks: on a loaded machine it often wakes
  // only after the other ranks died too. Two things make the order certain:
  //  - epoll's ready list keeps the order in which the kernel signalled the pidfds (each rank's
  //    exit notification, the last step of its exit), so epoll_wait() returns the deaths in the
  //    order they happened, however late bglrun looks (poll() reported them together, and rank 0
  //    was named for a death of rank 2);
  //  - bglrun holds a duplicate of each rank's PMI socket (pidfd_getfd). Hydra's proxy kills every
  //    rank as soon as one rank's PMI socket closes without PMI finalize, and that happens in the
  //    middle of the dying rank's exit, before its exit notification: under load the ranks it
  //    killed could finish dying first. With bglrun's duplicate the socket does not close; the
  //    proxy kills the others only for a rank killed by a signal, after reaping it (after its
  //    exit notification), and bglrun kills them (end_job) once it has seen the first end and the
  //    proxy has reaped it: Hydra then has that rank's own wait status (deaths it sees before
  //    would make it record a placeholder, its forced-cleanup bookkeeping).
  // Without pidfd_getfd (no ptrace access to the ranks) the proxy's cleanup stays as it was, and
  // the order, while still the kernel's, can be wrong under heavy load: report() then prefers
  // Hydra's wait statuses.
  std::vector<int> pidfds_;
  std::vector<int> pmi_sockets_;  // bglrun's duplicates, closed when mpiexec is gone
  int epoll_ = -1;
  bool order_certain_ = false;  // first_failed_ ended first, and nobody else reacted to it
  bool warned_getfd_ = false;
  int first_pidfd_ = -1;  // first_failed_'s pidfd while bglrun waits for the proxy to reap it
  int proxy_pidfd_ = -1;  // the ranks' parent, Hydra's proxy (one: -launcher fork, one host)
  Clock::time_point end_by_ = Clock::time_point::max();
  int first_failed_ = -1;
  std::vector<int> exit_codes_;  // Hydra's raw wait statuses in rank order (-print-all-exitcodes)
};

std::string MpiexecJob::describe(int r) const {
  const auto& m = machine_.mapping();
  const auto rank = static_cast<torus_emu::Rank>(r);
  const pid_t pid = machine_.job().task(rank).pid;
  return "rank " + std::to_string(r) + " on node " + torus_emu::to_string(m.coord(rank)) +
         " t=" + std::to_string(m.location(rank).t) +
         (pid ? " (pid " + std::to_string(pid) + ")" : "");
}

void MpiexecJob::start() {
  int fds[2];
  int errs[2];
  if (pipe2(fds, O_CLOEXEC) != 0)
    throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  if (pipe2(errs, O_CLOEXEC) != 0) {
    close(fds[0]);
    close(fds[1]);
    throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  }
  std::vector<std::string> args{mpiexec_, "-launcher",
                                "fork",   "-print-all-exitcodes",
                                "-n",     std::to_string(machine_.mapping().size())};
  args.insert(args.end(), settings_.command.begin(), settings_.command.end());
  std::vector<char*> argv;
  for (const auto& a : args)
    argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const std::string size = std::to_string(machine_.mapping().size());
  const pid_t launcher = getpid();
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != launcher) _exit(127);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    dup2(fds[1], STDOUT_FILENO);
    dup2(errs[1], STDERR_FILENO);
    const int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, STDIN_FILENO);
    close(segment_.fd());  // ranks attach by name
    unsetenv("BGL_SEGMENT_FD");
    unsetenv("BGL_RANK");
    setenv("BGL_SEGMENT", segment_.name().c_str(), 1);
    setenv("BGL_SIZE", size.c_str(), 1);
    execv(argv[0], argv.data());
    std::fprintf(stderr, "bglrun: cannot execute '%s': %s\n", argv[0], std::strerror(errno));
    _exit(127);
  }
  setpgid(pid, pid);
  if (settings_.on_process_group) settings_.on_process_group(pid);
  close(fds[1]);
  close(errs[1]);
  out_ = fds[0];
  err_ = errs[0];
  child_ = pid;
  spdlog::info("started {} (pid {}) for {} ranks", mpiexec_, pid, machine_.mapping().size());
}

void write_all(const char* data, std::size_t n, int fd = STDOUT_FILENO) {
  for (std::size_t done = 0; done < n;) {
    const ssize_t w = write(fd, data + done, n - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;  // our stdout is gone: keep draining mpiexec anyway
    done += static_cast<std::size_t>(w);
  }
}

void MpiexecJob::end_of_line() {
  // "[mpiexec@host] Exit codes: [host] 0,0,9,0" (wait statuses, in rank order on one host).
  const auto at = line_.find("Exit codes: ");
  if (line_.starts_with("[mpiexec@") && at != std::string::npos) {
    const auto list = line_.rfind("] ");
    std::istringstream in(list == std::string::npos ? std::string() : line_.substr(list + 2));
    spdlog::debug("Hydra: {}", line_.substr(0, line_.size() - (line_.ends_with('\n') ? 1 : 0)));
    exit_codes_.clear();
    for (std::string item; std::getline(in, item, ',');)
      exit_codes_.push_back(std::atoi(item.c_str()));
    line_.clear();
    return;
  }
  write_all(line_.data(), line_.size());
  line_.clear();
}

void MpiexecJob::emit(const char* data, std::size_t n) {
  static constexpr std::string_view kHydra = "[mpiexec@";
  std::size_t i = 0;
  while (i < n) {
    if (holding_) {
      const char c = data[i++];
      line_.push_back(c);
      if (c == '\n') {
        end_of_line();
        continue;
      }
      if (line_.size() <= kHydra.size() && !kHydra.starts_with(line_)) {
        write_all(line_.data(), line_.size());  // not Hydra's: pass the rest of the line at once
        line_.clear();
        holding_ = false;
      }
      continue;
    }
    const char* nl = static_cast<const char*>(std::memchr(data + i, '\n', n - i));
    const std::size_t upto = nl ? static_cast<std::size_t>(nl - data) + 1 : n;
    write_all(data + i, upto - i);
    i = upto;
    if (nl) holding_ = true;
  }
}

void MpiexecJob::forward_output() {
  char buf[65536];
  const ssize_t n = read(out_, buf, sizeof buf);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
  if (n <= 0) {
    close(out_);
    out_ = -1;
    if (!line_.empty()) end_of_line();
    return;
  }
  emit(buf, static_cast<std::size_t>(n));
}

// MPICH's report of an abort, "Abort(4) on node 1 (rank 1 in comm 0): application called
// MPI_Abort(...)" (MPID_Abort: MPI_Abort and fatal errors; "node" is the rank in
// MPI_COMM_WORLD): that rank.
std::optional<unsigned> aborting_rank(std::string_view line) {
  static constexpr std::string_view kOnNode = ") on node ";
  if (!line.starts_with("Abort(")) return std::nullopt;
  const auto at = line.find(kOnNode);
  if (at == std::string_view::npos) return std::nullopt;
  unsigned rank = 0;
  const char* first = line.data() + at + kOnNode.size();
  const auto [end, ec] = std::from_chars(first, line.data() + line.size(), rank);
  if (ec != std::errc() || end == first) return std::nullopt;
  return rank;
}

void MpiexecJob::forward_errors() {
  char buf[16384];
  const ssize_t n = read(err_, buf, sizeof buf);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
  if (n <= 0) {
    close(err_);
    err_ = -1;
    return;
  }
  write_all(buf, static_cast<std::size_t>(n), STDERR_FILENO);
  for (ssize_t i = 0; i < n; ++i) {
    if (buf[i] != '\n') {
      if (err_line_.size() < 256) err_line_.push_back(buf[i]);  // enough for the prefix
      continue;
    }
    if (const auto r = aborting_rank(err_line_); r && aborted_by_ < 0 && *r < pidfds_.size())
      aborted_by_ = static_cast<int>(*r);
    err_line_.clear();
  }
}

// Opens a pidfd for each rank that recorded its pid since the last call; true while some rank
// has not recorded its pid yet (the caller then looks again soon: a rank that died before bglrun
// watched it could only be ordered by when bglrun noticed it).
bool MpiexecJob::watch_ranks() {
  bool unknown = false;
  for (std::size_t r = 0; r < pidfds_.size(); ++r) {
    if (pidfds_[r] != -1) continue;
    const pid_t pid = machine_.job().task(static_cast<torus_emu::Rank>(r)).pid;
    if (pid <= 0) {
      unknown = unknown || machine_.local(static_cast<torus_emu::Rank>(r));
      continue;
    }
    const int fd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u32 = static_cast<std::uint32_t>(r);
    if (fd >= 0 && epoll_ctl(epoll_, EPOLL_CTL_ADD, fd, &ev) != 0) {
      close(fd);
      pidfds_[r] = -2;
      spdlog::warn("cannot watch rank {} (epoll_ctl: {})", r, std::strerror(errno));
      continue;
    }
    pidfds_[r] = fd >= 0 ? fd : -2;  // -2: gone already (or no pidfd support)
    if (fd < 0) {
      rank_ended(static_cast<int>(r), false);
      continue;
    }
    pmi_sockets_[r] = hold_pmi_socket(pid, fd);
    if (proxy_pidfd_ < 0 && pmi_sockets_[r] >= 0)
      proxy_pidfd_ = static_cast<int>(syscall(SYS_pidfd_open, parent_of(std::to_string(pid)), 0));
    spdlog::debug("watching rank {} (pid {}), its PMI socket {}", r, pid,
                  pmi_sockets_[r] >= 0 ? "held" : "not held");
  }
  return unknown;
}

// A duplicate of the PMI socket of rank process `pid` (PMI_FD in its environment), or -1.
int MpiexecJob::hold_pmi_socket(pid_t pid, int pidfd) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/environ", std::ios::binary);
  int target = -1;
  for (std::string var; std::getline(in, var, '\0');)
    if (var.starts_with("PMI_FD=")) target = std::atoi(var.c_str() + 7);
  if (target < 0) return -1;
  const int fd = static_cast<int>(syscall(SYS_pidfd_getfd, pidfd, target, 0));
  struct stat st {};
  if (fd >= 0 && fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode)) return fd;
  if (fd >= 0) close(fd);
  if (!warned_getfd_) {
    warned_getfd_ = true;
    spdlog::debug(
        "cannot hold the ranks' PMI sockets (pidfd_getfd: {}): a rank's death is named "
        "by the order Hydra's cleanup leaves",
        fd >= 0 ? "not a socket" : std::strerror(errno));
  }
  return -1;
}

// The ranks whose pidfds became readable, in the order they ended (epoll's ready-list order).
void MpiexecJob::take_ended_ranks() {
  std::array<epoll_event, 64> events{};
  for (;;) {
    const int n = epoll_wait(epoll_, events.data(), static_cast<int>(events.size()), 0);
    if (n <= 0) return;
    for (int i = 0; i < n; ++i) {
      const auto r = static_cast<std::size_t>(events[static_cast<std::size_t>(i)].data.u32);
      if (pidfds_[r] < 0) continue;
      const int fd = pidfds_[r];
      pidfds_[r] = -2;
      epoll_ctl(epoll_, EPOLL_CTL_DEL, fd, nullptr);
      rank_ended(static_cast<int>(r), true);
      if (static_cast<int>(r) == first_failed_ && order_certain_ &&
          end_by_ == Clock::time_point::max()) {
        first_pidfd_ = fd;  // end_job_once_reaped() looks at it
        end_by_ = Clock::now() + std::chrono::seconds(2);
      } else {
        close(fd);
      }
    }
  }
}

void MpiexecJob::rank_ended(int rank, bool watched) {
  const auto& slot = machine_.job().task(static_cast<torus_emu::Rank>(rank));
  if (slot.published.load(std::memory_order_acquire) != 0) return;  // finished MPI normally
  if (first_failed_ >= 0) return;
  first_failed_ = rank;
  spdlog::info("{} ended before finishing MPI", describe(rank));
  // Certain when every rank bglrun watches has its PMI socket held (nobody could react before).
  order_certain_ = watched;
  for (std::size_t r = 0; r < pidfds_.size(); ++r)
    if (static_cast<int>(r) != rank && pidfds_[r] >= 0 && pmi_sockets_[r] < 0)
      order_certain_ = false;
  if (pmi_sockets_[static_cast<std::size_t>(rank)] < 0) order_certain_ = false;
}

// Once the proxy has reaped first_failed_ (or 2 s after it ended: a proxy that does not react),
// ends the job if the proxy has not done so. Until then it nudges the proxy with SIGALRM (which
// it ignores, but which ends its poll()): the proxy reaps a rank only after an event, and the
// events it got from this rank's end (end of its output) may have come before the rank was a
// zombie. With nobody else dead yet, the proxy reaps this rank first and keeps its wait status;
// for a rank killed by a signal it then kills the others itself.
void MpiexecJob::end_job_once_reaped() {
  if (first_pidfd_ < 0) return;
  const bool reaped =
      syscall(SYS_pidfd_send_signal, first_pidfd_, 0, nullptr, 0) != 0 && errno == ESRCH;
  if (!reaped && Clock::now() < end_by_) {
    if (proxy_pidfd_ >= 0) syscall(SYS_pidfd_send_signal, proxy_pidfd_, SIGALRM, nullptr, 0);
    return;
  }
  close(first_pidfd_);
  first_pidfd_ = -1;
  end_job();
}

// What Hydra's cleanup does when it sees a PMI socket close: SIGKILL to every rank still running,
// and SIGTERM to mpiexec for ranks that have not recorded their pid yet (Hydra passes it on).
void MpiexecJob::end_job() {
  bool all_watched = true;
  for (std::size_t r = 0; r < pidfds_.size(); ++r) {
    if (pidfds_[r] >= 0) syscall(SYS_pidfd_send_signal, pidfds_[r], SIGKILL, nullptr, 0);
    if (pidfds_[r] == -1) all_watched = false;
  }
  if (!all_watched && !child_done_) kill(child_, SIGTERM);
}

void MpiexecJob::stop(int sig, const std::string& why) {
  if (!stopping_) {
    stopping_ = true;
    std::fprintf(stderr, "bglrun: %s; stopping the job\n", why.c_str());
  }
  if (!child_done_) kill(child_, sig);
}

void MpiexecJob::reap() {
  for (int status;;) {
    const pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid <= 0) return;
    if (pid == child_) {
      child_done_ = true;
      child_status_ = status;
    }
  }
}

void MpiexecJob::kill_leftovers() {
  // Hydra's processes run in sessions of their own; whatever survived mpiexec is now our child.
  for (int round = 0; round < 50; ++round) {
    const auto left = children();
    if (left.empty()) return;
    if (round == 0)
      spdlog::warn("{} processes of the job outlived mpiexec; killing them", left.size());
    for (pid_t p : left)
      kill(p, SIGKILL);
    usleep(20'000);
    reap();
  }
  spdlog::error("processes of the job survive SIGKILL");
}

int MpiexecJob::report() {
  if (stopped_by_launcher_) return -1;  // said when it happened
  if (exit_codes_.empty() && WIFEXITED(child_status_) && WEXITSTATUS(child_status_) != 0 &&
      exit_status_ < 0) {
    // Hydra's abort path (a rank called MPI_Abort): no per-rank statuses, and the ranks may end
    // in any order once mpiexec kills the proxy. MPICH printed the rank on its stderr, which comes
    // through mpiexec's, but not always: mpiexec kills the proxy within a second (at the next
    // full second of its clock), and the ranks' last output can be lost (about 1 run in 30).
    const int code = WEXITSTATUS(child_status_);
    if (aborted_by_ >= 0)
      std::fprintf(stderr,
                   "bglrun: %s aborted the job (MPI_Abort or a fatal MPI error: mpiexec exited "
                   "with code %d)\n",
                   describe(aborted_by_).c_str(), code);
    else
      std::fprintf(
          stderr,
          "bglrun: the job was aborted (MPI_Abort or a PMI error: mpiexec exited with code %d)\n",
          code);
    return code;
  }
  // The culprit: the first rank that ended without finishing MPI, when that order is certain
  // (see pidfds_). Otherwise from Hydra's wait statuses: a rank that exited with an error code,
  // else one killed by a signal other than SIGKILL (Hydra kills the others with SIGKILL); then
  // the first rank that ended as bglrun saw it; else any rank with a non-zero status (a rank that
  // finished MPI and then failed).
  int culprit = order_certain_ ? first_failed_ : -1;
  const auto status_of = [&](int r) -> std::optional<int> {
    if (r >= 0 && static_cast<std::size_t>(r) < exit_codes_.size())
      return exit_codes_[static_cast<std::size_t>(r)];
    return std::nullopt;
  };
  for (std::size_t r = 0; culprit < 0 && r < exit_codes_.size(); ++r)
    if (WIFEXITED(exit_codes_[r]) && WEXITSTATUS(exit_codes_[r]) != 0)
      culprit = static_cast<int>(r);
  for (std::size_t r = 0; culprit < 0 && r < exit_codes_.size(); ++r)
    if (WIFSIGNALED(exit_codes_[r]) && WTERMSIG(exit_codes_[r]) != SIGKILL)
      culprit = static_cast<int>(r);
  if (culprit < 0) culprit = first_failed_;
  for (std::size_t r = 0; culprit < 0 && r < exit_codes_.size(); ++r)
    if (exit_codes_[r] != 0) culprit = static_cast<int>(r);
  if (culprit < 0) return -1;

  std::string what = describe(culprit);
  int code = 1;
  if (const auto s = status_of(culprit)) {
    if (WIFSIGNALED(*s)) {
      what += " was killed by " + signal_name(WTERMSIG(*s));
      code = 128 + WTERMSIG(*s);
    } else if (WIFEXITED(*s) && WEXITSTATUS(*s) != 0) {
      what += " exited with code " + std::to_string(WEXITSTATUS(*s));
      code = WEXITSTATUS(*s);
    } else {
      what += " ended before MPI_Finalize";
    }
  } else {
    what += " ended before MPI_Finalize";
    if (WIFEXITED(child_status_) && WEXITSTATUS(child_status_) != 0) {
      code = WEXITSTATUS(child_status_);
      what += " (mpiexec exited with code " + std::to_string(code) + ")";
    }
  }
  std::fprintf(stderr, "bglrun: %s; the job was stopped\n", what.c_str());
  return code;
}

int MpiexecJob::run() {
  const sigset_t set = launcher_signals();
  sigset_t previous;
  sigprocmask(SIG_BLOCK, &set, &previous);
  const int sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sfd < 0) throw std::runtime_error(std::string("signalfd: ") + std::strerror(errno));
  epoll_ = epoll_create1(EPOLL_CLOEXEC);
  if (epoll_ < 0) throw std::runtime_error(std::string("epoll_create1: ") + std::strerror(errno));
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  start();

  const auto begin = Clock::now();
  const auto deadline = settings_.timeout_seconds > 0 ? begin + seconds(settings_.timeout_seconds)
                                                      : Clock::time_point::max();
  auto kill_at = Clock::time_point::max();
  auto drain_until = Clock::time_point::max();
  bool killed = false;
  std::optional<DeadlockWatch> deadlock;
  if (settings_.deadlock_seconds > 0)
    deadlock.emplace(
        machine_, segment_,
        std::chrono::milliseconds(static_cast<std::int64_t>(settings_.deadlock_seconds * 1000)));
  std::vector<pid_t> running(pidfds_.size());
  for (;;) {
    // Every 5 ms while ranks are starting (in the first 10 s: their pidfds must be open before
    // anything can happen to them) and while the proxy has to reap the first rank that ended;
    // else every 50 ms.
    const bool unknown = watch_ranks();
    const bool starting = unknown && Clock::now() < begin + std::chrono::seconds(10);
    const int tick = starting || first_pidfd_ >= 0 ? 5 : 50;
    std::array<pollfd, 4> fds{
        {{sfd, POLLIN, 0}, {out_, POLLIN, 0}, {epoll_, POLLIN, 0}, {err_, POLLIN, 0}}};
    poll(fds.data(), fds.size(), tick);
    take_ended_ranks();
    end_job_once_reaped();
    if (out_ >= 0 && (fds[1].revents & (POLLIN | POLLHUP | POLLERR))) forward_output();
    if (err_ >= 0 && (fds[3].revents & (POLLIN | POLLHUP | POLLERR))) forward_errors();
    for (signalfd_siginfo si; read(sfd, &si, sizeof si) == static_cast<ssize_t>(sizeof si);) {
      const int sig = static_cast<int>(si.ssi_signo);
      if (sig == SIGCHLD) continue;
      if (!stopping_) exit_status_ = 128 + sig;
      if (!stopping_) stopped_by_launcher_ = true;
      stop(sig == SIGQUIT || sig == SIGHUP ? SIGTERM : sig,
           "received " + signal_name(sig) + ": the job was interrupted");
    }
    reap();
    if (settings_.external_fault && !stopping_) {
      if (auto fault = settings_.external_fault()) {
        exit_status_ = 1;
        stop(SIGTERM, *fault);
      }
    }
    const auto now = Clock::now();
    // Only once every rank has recorded its pid: ranks that Hydra has not started yet cannot be
    // seen waiting.
    if (deadlock && !stopping_ && !unknown) {
      for (std::size_t r = 0; r < pidfds_.size(); ++r)
        running[r] = pidfds_[r] >= 0 ? machine_.job().task(static_cast<torus_emu::Rank>(r)).pid : 0;
      if (auto headline = deadlock->check(now, running)) {
        exit_status_ = 125;
        stopped_by_launcher_ = true;
        stop(SIGINT, *headline);
        std::fprintf(stderr, "bglrun: what each task waits for:\n%s\n",
                     deadlock->states(running).c_str());
      }
    }
    if (now >= deadline && !stopping_) {
      exit_status_ = 124;
      stopped_by_launcher_ = true;
      stop(SIGINT, "the job timed out after " + std::to_string(settings_.timeout_seconds) + " s");
    }
    if (stopping_ && kill_at == Clock::time_point::max())
      kill_at = now + seconds(settings_.kill_grace_seconds);
    if (now >= kill_at && !killed) {
      if (!child_done_) {
        spdlog::warn("mpiexec still running {} s after it was told to stop; killing the job",
                     settings_.kill_grace_seconds);
        killpg(child_, SIGKILL);
      }
      for (pid_t p : children())
        kill(p, SIGKILL);
      killed = true;
    }
    if (child_done_) {
      if (out_ < 0 && err_ < 0) break;
      // Something of the job still holds mpiexec's output: give it a moment, then stop reading.
      if (drain_until == Clock::time_point::max()) drain_until = now + std::chrono::seconds(1);
      if (now >= drain_until) {
        if (out_ >= 0) close(out_);
        if (err_ >= 0) close(err_);
        out_ = err_ = -1;
        break;
      }
    }
  }
  if (!line_.empty()) end_of_line();
  // Ranks still running although mpiexec is gone (after MPI_Abort Hydra exits at once, and the
  // aborting rank exits a moment later): give them half a second to end by themselves, so that
  // the first one to do so is known, then kill the rest.
  watch_ranks();
  const auto settle = Clock::now() + std::chrono::milliseconds(500);
  while (first_failed_ < 0 &&
         std::any_of(pidfds_.begin(), pidfds_.end(), [](int fd) { return fd >= 0; })) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(settle - Clock::now()).count();
    if (left <= 0) break;
    pollfd fd{epoll_, POLLIN, 0};
    if (poll(&fd, 1, static_cast<int>(left)) <= 0) break;
    take_ended_ranks();
  }
  kill_leftovers();
  if (first_pidfd_ >= 0) close(first_pidfd_);
  if (proxy_pidfd_ >= 0) close(proxy_pidfd_);
  for (int fd : pidfds_)
    if (fd >= 0) close(fd);
  for (int fd : pmi_sockets_)
    if (fd >= 0) close(fd);
  close(epoll_);
  close(sfd);
  prctl(PR_SET_CHILD_SUBREAPER, 0);
  sigprocmask(SIG_SETMASK, &previous, nullptr);

  const int culprit_status = report();
  if (exit_status_ >= 0) return exit_status_;  // signal or timeout
  if (culprit_status >= 0) return culprit_status;
  if (WIFEXITED(child_status_)) {
    const int code = WEXITSTATUS(child_status_);
    if (code != 0) std::fprintf(stderr, "bglrun: mpiexec exited with code %d\n", code);
    return code;
  }
  std::fprintf(stderr, "bglrun: mpiexec was killed by %s\n",
               signal_name(WTERMSIG(child_status_)).c_str());
  return 128 + WTERMSIG(child_status_);
}

}  // namespace

const char* mpiexec_usage() {
  return R"(
MPI programs (MPICH built with the bgl device, tools/build_mpich.sh):
  --launcher L           auto | pmi | mpiexec | direct (BGL_LAUNCHER; default auto: pmi when the
                         program loads a libmpi that loads libbglml, else direct). pmi: bglrun
                         starts the ranks and serves their PMI itself; mpiexec: through the
                         Hydra mpiexec of that MPICH (slower to start: 14 s for 1,024 ranks)
  --mpich-prefix DIR     the MPICH whose DIR/bin/mpiexec starts the ranks with --launcher mpiexec
                         (BGL_MPICH_PREFIX; BGL_MPIEXEC names the program itself). Default: the
                         prefix of the libmpi the program loads, else bglrun's own prefix, else
                         the cache's (BGL_CACHE_DIR, default ~/.cache/bglemu: mpich-current/prefix)
)";
}

namespace {

// A prefix of MPICH with the bgl device: bin/mpiexec runs and lib/libmpi.so loads libbglml.
bool is_device_mpich(const std::string& prefix) {
  return access((prefix + "/bin/mpiexec").c_str(), X_OK) == 0 &&
         capture({"/usr/bin/ldd", prefix + "/lib/libmpi.so"}).find("libbglml.so") !=
             std::string::npos;
}

// The prefix bglrun itself is installed in (the parent of its bin/), or empty.
std::string own_prefix() {
  std::error_code error;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) return {};
  return self.parent_path().parent_path().string();
}

// An explicitly named MPICH prefix (flag or variable) must hold an mpiexec.
std::string mpiexec_in(const std::string& prefix, const std::string& source) {
  const std::string mpiexec = prefix + "/bin/mpiexec";
  if (access(mpiexec.c_str(), X_OK) != 0)
    throw ConfigError(source + "='" + printable(prefix) + "' has no executable bin/mpiexec");
  return mpiexec;
}

// The device MPICH's mpiexec for `command` (whose libmpi, if it loads one of the device, is
// `libmpi`).
std::string find_mpiexec(const std::optional<std::string>& mpich_prefix,
                         const std::vector<std::string>& command, const std::string& libmpi) {
  // The lookup order of docs/CONFIGURATION.md ("Installing bglemu"): what the user named first,
  // then the MPICH the program was linked with, then the one installed beside bglrun, then the
  // one tools/build_mpich.sh built last in its cache.
  if (mpich_prefix) return mpiexec_in(*mpich_prefix, "--mpich-prefix");
  if (auto m = job_runtime::env::get("BGL_MPIEXEC")) {
    if (access(m->c_str(), X_OK) != 0)
      throw ConfigError("BGL_MPIEXEC='" + *m + "' is not executable");
    return *m;
  }
  if (auto p = job_runtime::env::get("BGL_MPICH_PREFIX")) return mpiexec_in(*p, "BGL_MPICH_PREFIX");
  if (!libmpi.empty()) {
    const std::string lib_dir = libmpi.substr(0, libmpi.rfind('/'));
    const std::string mpiexec = lib_dir + "/../bin/mpiexec";
    if (access(mpiexec.c_str(), X_OK) == 0) return mpiexec;
  }
  if (const std::string own = own_prefix(); !own.empty() && is_device_mpich(own))
    return own + "/bin/mpiexec";
  std::string cache;
  if (auto c = job_runtime::env::get("BGL_CACHE_DIR"))
    cache = *c;
  else if (const char* home = std::getenv("HOME"))
    cache = std::string(home) + "/.cache/bglemu";
  if (!cache.empty() && is_device_mpich(cache + "/mpich-current/prefix"))
    return cache + "/mpich-current/prefix/bin/mpiexec";
  throw ConfigError("cannot find the mpiexec of MPICH with the bgl device for '" +
                    printable(command.front()) +
                    "' (not beside the libmpi it loads, bglrun or in the cache); use "
                    "--mpich-prefix or set BGL_MPICH_PREFIX or BGL_MPIEXEC");
}

}  // namespace

LaunchChoice choose_launch(const std::optional<std::string>& choice,
                           const std::optional<std::string>& mpich_prefix,
                           const std::vector<std::string>& command) {
  std::string how = choice.value_or(job_runtime::env::get("BGL_LAUNCHER").value_or("auto"));
  if (how != "auto" && how != "pmi" && how != "mpiexec" && how != "direct")
    throw ConfigError(std::string(choice ? "--launcher '" : "BGL_LAUNCHER='") + printable(how) +
                      "': expected auto, pmi, mpiexec or direct");
  if (how == "direct") return {Launch::direct};
  if (how == "pmi") return {Launch::pmi};
  const std::string program = find_in_path(command.front());
  const std::string libmpi = bgl_libmpi_of(program);
  if (how == "auto") return {libmpi.empty() ? Launch::direct : Launch::pmi};
  return {Launch::mpiexec, find_mpiexec(mpich_prefix, command, libmpi)};
}

int run_with_mpiexec(const packet_layer::Machine& machine, const job_runtime::Segment& segment,
                     const RunSettings& settings, const std::string& mpiexec) {
  return MpiexecJob(machine, segment, settings, mpiexec).run();
}

}  // namespace bgl::bglrun
