// What every multi-process task program of the message-layer tests shares: failing checks that
// name the rank and the source line, and a watchdog that turns a stalled progress loop into a
// failure within seconds instead of the job's timeout.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>

#include "bgl/message_layer/message_layer.hpp"

namespace bgl::message_layer::test {

// The task's rank, for failure reports (set once by main before any check).
inline unsigned g_rank = 0;

[[noreturn]] inline void fail(const char* file, int line, const std::string& what) {
  std::fprintf(stderr, "CHECK FAILED rank %u %s:%d: %s\n", g_rank, file, line, what.c_str());
  std::fflush(stderr);
  std::exit(1);
}

// Ends the task (exit 1, naming the rank) when an armed progress loop has not moved for the
// number of seconds in the environment variable `limit_variable` (or `default_limit`).
class StallWatchdog {
 public:
  using Clock = std::chrono::steady_clock;

  StallWatchdog(const char* limit_variable, double default_limit) {
    const char* v = std::getenv(limit_variable);
    limit_ = v ? std::atof(v) : default_limit;
    pet();
    thread_ = std::thread([this] { run(); });
  }
  StallWatchdog(const StallWatchdog&) = delete;
  StallWatchdog& operator=(const StallWatchdog&) = delete;
  ~StallWatchdog() {
    stop_ = true;
    thread_.join();
  }
  // What to print when the task stalls. Set it while disarmed: the watchdog's thread reads it
  // only when an armed loop stalls.
  void describe_with(std::function<std::string()> f) { describe_ = std::move(f); }
  // `what` must outlive the arming (the watchdog's thread may print it at any time).
  void arm(const char* what) {
    what_ = what;
    pet();
    armed_ = true;
  }
  void disarm() { armed_ = false; }
  void pet() { last_.store(Clock::now().time_since_epoch().count(), std::memory_order_relaxed); }

 private:
  void run() {
    while (!stop_) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      const auto last = Clock::time_point(Clock::duration(last_.load(std::memory_order_relaxed)));
      if (armed_ && std::chrono::duration<double>(Clock::now() - last).count() > limit_) {
        std::fprintf(stderr, "CHECK FAILED rank %u: no progress for %.0f s in %s (stalled)%s\n",
                     g_rank, limit_, what_.load(), describe_ ? describe_().c_str() : "");
        std::fflush(stderr);
        std::_Exit(1);
      }
    }
  }
  double limit_;
  std::atomic<bool> stop_{false}, armed_{false};
  std::atomic<const char*> what_{""};
  std::atomic<Clock::rep> last_{0};
  std::function<std::string()> describe_;
  std::thread thread_;
};

// Advances `ml` until pred() holds, under `watchdog`; `idle` is called when advance() found
// nothing to do.
template <class Pred, class Idle>
void drive(MessageLayer& ml, StallWatchdog& watchdog, const char* what, Pred&& pred, Idle&& idle) {
  watchdog.arm(what);
  while (!pred()) {
    if (ml.advance())
      watchdog.pet();
    else
      idle();
  }
  watchdog.disarm();
}

}  // namespace bgl::message_layer::test

// Checks in task programs (not gtest: a task reports and exits, and bglrun names it).
#define CHECK(cond)                                                           \
  do {                                                                        \
    if (!(cond)) ::bgl::message_layer::test::fail(__FILE__, __LINE__, #cond); \
  } while (0)
#define CHECK_MSG(cond, text)                                                                   \
  do {                                                                                          \
    if (!(cond))                                                                                \
      ::bgl::message_layer::test::fail(__FILE__, __LINE__, std::string(#cond) + ": " + (text)); \
  } while (0)
