#pragma once
// Process-shared futex operations on a 32-bit word in shared memory. std::atomic::wait uses
// process-private futexes in libstdc++, which do not wake waiters in other processes.
#include <atomic>
#include <chrono>
#include <cstdint>

namespace bgl::job_runtime {

// Sleeps while *word == expected, at most `timeout`. Returns on wake-up, timeout, signal or when
// the value differs; callers re-check their condition.
void futex_wait(std::atomic<std::uint32_t>& word, std::uint32_t expected,
                std::chrono::nanoseconds timeout);
// Same for two words at once (futex_waitv): returns when either changed or was woken. On a kernel
// without futex_waitv (before 5.16) it sleeps on `a` alone, at most `fallback_cap`, so a wake of
// `b` is seen that late.
void futex_wait_either(std::atomic<std::uint32_t>& a, std::uint32_t expected_a,
                       std::atomic<std::uint32_t>& b, std::uint32_t expected_b,
                       std::chrono::nanoseconds timeout);
void futex_wake_all(std::atomic<std::uint32_t>& word);

}  // namespace bgl::job_runtime
