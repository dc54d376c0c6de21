#include "bgl/pkt/futex.hpp"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>
#include <ctime>

namespace bgl::pkt {
namespace {

long futex(std::atomic<std::uint32_t>& word, int op, std::uint32_t value, const timespec* timeout) {
  static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t));
  return syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), op, value, timeout, nullptr,
                 0);
}

}  // namespace

void futex_wait(std::atomic<std::uint32_t>& word, std::uint32_t expected,
                std::chrono::nanoseconds timeout) {
  const auto ns = timeout.count();
  const timespec ts{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
  futex(word, FUTEX_WAIT, expected, &ts);  // shared (not _PRIVATE): waiters are in other processes
}

void futex_wake_all(std::atomic<std::uint32_t>& word) {
  futex(word, FUTEX_WAKE, INT_MAX, nullptr);
}

}  // namespace bgl::pkt
