#include "bgl/job_runtime/futex.hpp"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <ctime>

namespace bgl::job_runtime {
namespace {

long futex(std::atomic<std::uint32_t>& word, int op, std::uint32_t value, const timespec* timeout) {
  static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t));
  return syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), op, value, timeout, nullptr,
                 0);
}

timespec to_timespec(std::chrono::nanoseconds d) {
  const auto ns = d.count();
  return {static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
}

constexpr std::chrono::milliseconds kNoWaitvCap{1};
std::atomic<bool> g_no_waitv{false};

}  // namespace

void futex_wait(std::atomic<std::uint32_t>& word, std::uint32_t expected,
                std::chrono::nanoseconds timeout) {
  const timespec ts = to_timespec(timeout);
  futex(word, FUTEX_WAIT, expected, &ts);  // shared (not _PRIVATE): waiters are in other processes
}

void futex_wait_either(std::atomic<std::uint32_t>& a, std::uint32_t expected_a,
                       std::atomic<std::uint32_t>& b, std::uint32_t expected_b,
                       std::chrono::nanoseconds timeout) {
  if (!g_no_waitv.load(std::memory_order_relaxed)) {
    // FUTEX_32 without FUTEX_PRIVATE_FLAG: shared, like futex_wait. The timeout is absolute.
    futex_waitv waiters[2] = {
        {expected_a, reinterpret_cast<std::uintptr_t>(&a), FUTEX_32, 0},
        {expected_b, reinterpret_cast<std::uintptr_t>(&b), FUTEX_32, 0},
    };
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC, &now);
    const auto deadline =
        std::chrono::seconds(now.tv_sec) + std::chrono::nanoseconds(now.tv_nsec) + timeout;
    const timespec ts = to_timespec(deadline);
    if (syscall(SYS_futex_waitv, waiters, 2, 0, &ts, CLOCK_MONOTONIC) >= 0 || errno != ENOSYS)
      return;
    g_no_waitv.store(true, std::memory_order_relaxed);
  }
  futex_wait(a, expected_a, std::min<std::chrono::nanoseconds>(timeout, kNoWaitvCap));
}

void futex_wake_all(std::atomic<std::uint32_t>& word) {
  futex(word, FUTEX_WAKE, INT_MAX, nullptr);
}

}  // namespace bgl::job_runtime
