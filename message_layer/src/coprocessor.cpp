#include "bgl/message_layer/coprocessor.hpp"

#include <stdexcept>

#include "bgl/job_runtime/log.hpp"

namespace bgl::message_layer {

Coprocessor::Coprocessor(job_runtime::Doorbell& bell, const job_runtime::WaitPolicy& policy)
    : bell_(bell), policy_(policy), slots_(kMaxTransient) {
  free_.reserve(kMaxTransient);
  for (std::uint32_t i = kMaxTransient; i-- > 0;)
    free_.push_back(i);
  thread_ = std::thread([this] { run(); });
}

Coprocessor::~Coprocessor() {
  stop_.store(true, std::memory_order_release);
  bell_.wake();
  thread_.join();
}

std::size_t Coprocessor::add_permanent(Poll poll, Poll pending, void* arg) {
  const std::size_t n = permanent_count_.load(std::memory_order_relaxed);
  if (n == kMaxPermanent) throw std::runtime_error("too many permanent coprocessor units");
  if (!poll) throw std::invalid_argument("add_permanent: no poll function");
  Permanent& p = permanent_[n];  // not visible to the coprocessor until the count says so
  p.poll = poll;
  p.pending = pending;
  p.arg = arg;
  permanent_count_.store(n + 1, std::memory_order_release);
  bell_.ring();
  return n;
}

bool Coprocessor::permanent_failed(std::size_t index) const {
  if (index >= permanent_count_.load(std::memory_order_acquire))
    throw std::out_of_range("no permanent coprocessor unit " + std::to_string(index));
  return permanent_[index].failed.load(std::memory_order_acquire);
}

std::string Coprocessor::permanent_error(std::size_t index) const {
  return permanent_failed(index) ? permanent_[index].error : std::string();
}

Coprocessor::Ticket Coprocessor::costart(Unit unit, void* arg) {
  if (free_.empty())
    throw std::runtime_error("costart: " + std::to_string(kMaxTransient) +
                             " units outstanding; cojoin some first");
  const std::uint32_t id = free_.back();
  free_.pop_back();
  Slot& s = slots_[id];
  s.unit = unit;
  s.arg = arg;
  s.result = 0;
  s.error.clear();
  s.state.store(kQueued, std::memory_order_relaxed);
  queue_.push(id);  // cannot fail: at most kMaxTransient tickets exist
  bell_.ring();
  return Ticket{id};
}

int Coprocessor::cojoin(Ticket t) {
  Slot& s = slots_.at(t.id);
  if (s.state.load(std::memory_order_relaxed) == kFree)
    throw std::invalid_argument("cojoin of a ticket not started");
  for (int i = 0; i < policy_.spin_rounds && s.state.load(std::memory_order_acquire) != kDone; ++i)
    job_runtime::Backoff::cpu_relax();
  // The coprocessor is a thread of this process: a (process-private) futex wait is what we need.
  for (std::uint32_t v; (v = s.state.load(std::memory_order_acquire)) != kDone;)
    s.state.wait(v, std::memory_order_acquire);
  const int result = s.result;
  s.state.store(kFree, std::memory_order_relaxed);
  free_.push_back(t.id);
  return result;
}

const std::string& Coprocessor::error(Ticket t) const {
  return slots_.at(t.id).error;
}

bool Coprocessor::run_transients() {
  bool worked = false;
  std::uint32_t id;
  while (queue_.pop(id)) {
    Slot& s = slots_[id];
    try {
      s.result = s.unit(s.arg);
    } catch (const std::exception& e) {
      s.result = kUnitFailed;
      s.error = e.what();
      spdlog::error("coprocessor work unit failed: {}", e.what());
    } catch (...) {
      s.result = kUnitFailed;
      s.error = "unknown exception";
      spdlog::error("coprocessor work unit failed with an unknown exception");
    }
    units_run_.fetch_add(1, std::memory_order_relaxed);
    s.state.store(kDone, std::memory_order_release);
    s.state.notify_one();
    worked = true;
  }
  return worked;
}

// A permanent unit that throws would otherwise end the thread (std::terminate): it is retired
// instead, with its error kept for the main task, and logged once.
void Coprocessor::fail(Permanent& p, const char* what) {
  p.error = what;
  spdlog::error("permanent coprocessor unit failed and is stopped: {}", what);
  p.failed.store(true, std::memory_order_release);
}

bool Coprocessor::run_permanent(Permanent& p) {
  if (p.failed.load(std::memory_order_relaxed)) return false;
  try {
    return p.poll(p.arg);
  } catch (const std::exception& e) {
    fail(p, e.what());
  } catch (...) {
    fail(p, "unknown exception");
  }
  return false;
}

bool Coprocessor::permanent_pending(Permanent& p) {
  if (!p.pending || p.failed.load(std::memory_order_relaxed)) return false;
  try {
    return p.pending(p.arg);
  } catch (const std::exception& e) {
    fail(p, e.what());
  } catch (...) {
    fail(p, "unknown exception");
  }
  return false;
}

bool Coprocessor::has_work() {
  if (stop_.load(std::memory_order_acquire) || queue_.read_available() > 0) return true;
  const std::size_t n = permanent_count_.load(std::memory_order_acquire);
  for (std::size_t i = 0; i < n; ++i)
    if (permanent_pending(permanent_[i])) return true;
  return false;
}

void Coprocessor::run() {
  job_runtime::Backoff backoff(policy_);
  while (!stop_.load(std::memory_order_acquire)) {
    bool worked = run_transients();
    const std::size_t n = permanent_count_.load(std::memory_order_acquire);
    for (std::size_t i = 0; i < n; ++i)
      worked |= run_permanent(permanent_[i]);
    if (worked)
      backoff.reset();
    else
      backoff.idle(bell_, [this] { return has_work(); });
  }
}

}  // namespace bgl::message_layer
