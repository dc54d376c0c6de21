#include "process_runner.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

namespace bgl::test {
namespace {

using Clock = std::chrono::steady_clock;

std::vector<char*> c_args(const std::vector<std::string>& argv) {
  std::vector<char*> out;
  for (const auto& a : argv)
    out.push_back(const_cast<char*>(a.c_str()));
  out.push_back(nullptr);
  return out;
}

int decode(int status) {
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

ProcessResult run_process(const std::vector<std::string>& argv, double timeout_seconds,
                          const std::vector<std::string>& env) {
  int pipefd[2];
  if (pipe(pipefd) != 0) return {};
  const auto start = Clock::now();
  const pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    dup2(pipefd[1], STDOUT_FILENO);
    dup2(pipefd[1], STDERR_FILENO);
    close(pipefd[0]);
    close(pipefd[1]);
    for (const auto& e : env)
      putenv(const_cast<char*>(e.c_str()));
    auto args = c_args(argv);
    execvp(args[0], args.data());
    _exit(127);
  }
  close(pipefd[1]);
  ProcessResult r;
  const auto deadline = start + std::chrono::duration<double>(timeout_seconds);
  char buf[4096];
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      r.timed_out = true;
      kill(-pid, SIGKILL);
      break;
    }
    pollfd p{pipefd[0], POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(std::min<long>(left.count(), 200))) > 0) {
      const ssize_t n = read(pipefd[0], buf, sizeof buf);
      if (n <= 0) break;
      r.output.append(buf, static_cast<std::size_t>(n));
    }
  }
  close(pipefd[0]);
  int status = 0;
  // The output closed: the process ends now (or was killed); do not wait without bound anyway.
  const auto reap_deadline = Clock::now() + std::chrono::seconds(10);
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (Clock::now() > reap_deadline) {
      kill(-pid, SIGKILL);
      waitpid(pid, &status, 0);
      r.timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  r.exit_code = r.timed_out ? -1 : decode(status);
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return r;
}

int spawn_process(const std::vector<std::string>& argv, const std::string& log_path) {
  const pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    const int fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(fd, STDOUT_FILENO);
    dup2(fd, STDERR_FILENO);
    auto args = c_args(argv);
    execvp(args[0], args.data());
    _exit(127);
  }
  return pid;
}

int wait_process(int pid, double timeout_seconds) {
  const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_seconds);
  int status = 0;
  while (Clock::now() < deadline) {
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) return decode(status);
    if (r < 0) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  kill(-pid, SIGKILL);
  waitpid(pid, &status, 0);
  return -1;
}

std::vector<std::string> bglemu_segments() {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/dev/shm", ec))
    if (e.path().filename().string().starts_with("bglemu.")) out.push_back(e.path().string());
  return out;
}

bool process_alive(int pid) {
  if (kill(pid, 0) != 0) return false;
  // A zombie is dead for our purposes (its parent has not reaped it yet).
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", pid);
  FILE* f = std::fopen(path, "r");
  if (!f) return false;
  char state = '?';
  const int matched = std::fscanf(f, "%*d %*s %c", &state);
  std::fclose(f);
  return matched == 1 && state != 'Z';
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

ProcessResult run_bglrun(const std::string& bglrun, std::vector<std::string> args, double timeout,
                         const std::vector<std::string>& env) {
  args.insert(args.begin(), {bglrun, "--timeout", std::to_string(static_cast<int>(timeout))});
  return run_process(args, timeout + 15, env);
}

std::vector<int> wait_for_pids(const std::string& log_path, int n, double timeout_seconds) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds);
  const std::regex line("pid (\\d+) (\\d+)");
  while (std::chrono::steady_clock::now() < deadline) {
    std::vector<int> pids(static_cast<std::size_t>(n), 0);
    const std::string text = read_file(log_path);
    int found = 0;
    for (auto it = std::sregex_iterator(text.begin(), text.end(), line);
         it != std::sregex_iterator(); ++it) {
      const int rank = std::stoi((*it)[1]);
      if (rank < n && pids[static_cast<std::size_t>(rank)] == 0) ++found;
      if (rank < n) pids[static_cast<std::size_t>(rank)] = std::stoi((*it)[2]);
    }
    if (found == n) return pids;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return {};
}

int parent_of(int pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  std::getline(stat, text);
  const auto close_paren = text.rfind(')');
  if (close_paren == std::string::npos) return -1;
  std::istringstream fields(text.substr(close_paren + 2));
  char state = 0;
  int ppid = -1;
  fields >> state >> ppid;
  return ppid;
}

NamespacePair::NamespacePair(const std::string& tag, const std::string& subnet,
                             const std::string& hostfile)
    : hostfile_(hostfile) {
  const std::string id = std::to_string(getpid() % 100000);
  for (int h = 0; h < 2; ++h) {
    ns_[h] = "bgl" + tag + static_cast<char>('A' + h) + id;
    link_[h] = "b" + tag + static_cast<char>('a' + h) + id;
  }
  remove();  // leftovers of a killed earlier run with the same pid
  std::vector<std::string> steps = {"ip netns add " + ns_[0], "ip netns add " + ns_[1],
                                    "ip link add " + link_[0] + " netns " + ns_[0] +
                                        " type veth peer name " + link_[1] + " netns " + ns_[1]};
  for (int h = 0; h < 2; ++h) {
    steps.push_back("ip -n " + ns_[h] + " addr add " + subnet + "." + std::to_string(h + 1) +
                    "/24 dev " + link_[h]);
    steps.push_back("ip -n " + ns_[h] + " link set " + link_[h] + " up");
    steps.push_back("ip -n " + ns_[h] + " link set lo up");
  }
  for (const auto& step : steps) {
    const auto r = run_process({"/bin/sh", "-c", step + " 2>&1"}, 20);
    if (r.exit_code != 0) {
      error_ =
          "cannot build the two-namespace network (this needs root and ip(8) from iproute2): '" +
          step + "' failed: " + r.output;
      return;
    }
  }
  std::ofstream(hostfile_) << "# two emulated hosts, one network namespace each, joined by veth\n"
                           << "hostA " << subnet << ".1 netns=" << ns_[0] << "\n"
                           << "hostB " << subnet << ".2 netns=" << ns_[1] << "\n";
}

NamespacePair::~NamespacePair() {
  remove();
  std::remove(hostfile_.c_str());
}

void NamespacePair::remove() {
  for (const auto& ns : ns_)
    run_process({"/bin/sh", "-c", "ip netns del " + ns + " 2>/dev/null"}, 20);
}

}  // namespace bgl::test
