#pragma once
// Process-shared futex operations on a 32-bit word in shared memory. std::atomic::wait uses
// process-private futexes in libstdc++, which do not wake waiters in other processes.
#include <atomic>
#include <chrono>
#include <cstdint>

namespace bgl::pkt {

// Sleeps while *word == expected, at most `timeout`. Returns on wake-up, timeout, signal or when
// the value differs; callers re-check their condition.
void futex_wait(std::atomic<std::uint32_t>& word, std::uint32_t expected,
                std::chrono::nanoseconds timeout);
void futex_wake_all(std::atomic<std::uint32_t>& word);

}  // namespace bgl::pkt
