#include "bgl/job_runtime/agent_wake.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "bgl/job_runtime/env.hpp"
#include "bgl/job_runtime/futex.hpp"
#include "bgl/job_runtime/log.hpp"

namespace bgl::job_runtime {
namespace {

// Agents of this process (bglrun has one; a test may run several hosts' agents side by side).
struct Registered {
  const Doorbell* bell;
  int fd;
};
std::mutex g_mutex;
std::vector<Registered> g_registered;

bool is_eventfd(int fd) {
  const std::string link = "/proc/self/fd/" + std::to_string(fd);
  std::array<char, 64> target{};
  const auto n = ::readlink(link.c_str(), target.data(), target.size() - 1);
  return n > 0 && std::string(target.data(), static_cast<std::size_t>(n)) == "anon_inode:[eventfd]";
}

// The inherited descriptor, checked once (the runtime asks at start-up, so that a malformed value
// is an error then): a program may have closed it and reused the number
// for a file of its own, which a ring must never write into.
int inherited() {
  static const int fd = [] {
    const auto v = env::get_int("BGL_AGENT_FD", 0, 1 << 20);  // ConfigError when malformed
    if (!v) return -1;
    const int n = static_cast<int>(*v);
    if (!is_eventfd(n)) {
      spdlog::warn(
          "BGL_AGENT_FD={} is not an eventfd in this process; the agent is woken by its "
          "doorbell only",
          n);
      return -1;
    }
    // The task's own children (a shell the program starts) have no agent to wake.
    ::fcntl(n, F_SETFD, FD_CLOEXEC);
    return n;
  }();
  return fd;
}

}  // namespace

int agent_wake_fd(const Doorbell& bell) {
  {
    std::lock_guard lock(g_mutex);
    for (const auto& r : g_registered)
      if (r.bell == &bell) return r.fd;
  }
  return inherited();
}

void register_agent_wake(const Doorbell& bell, int fd) {
  std::lock_guard lock(g_mutex);
  g_registered.push_back({&bell, fd});
}

void unregister_agent_wake(const Doorbell& bell) {
  std::lock_guard lock(g_mutex);
  std::erase_if(g_registered, [&](const Registered& r) { return r.bell == &bell; });
}

void wake_agent(Doorbell& bell) {
  bell.wake();
  if (const int fd = agent_wake_fd(bell); fd >= 0) {
    const std::uint64_t one = 1;
    // EAGAIN (the counter is full) still leaves the descriptor readable: nothing is lost.
    [[maybe_unused]] const auto n = ::write(fd, &one, sizeof one);
  }
}

}  // namespace bgl::job_runtime
