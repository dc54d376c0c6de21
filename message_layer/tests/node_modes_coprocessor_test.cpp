// Coprocessor work units in one process: costart/cojoin semantics, many units in flight,
// the limit of kMaxTransient outstanding units, permanent units, failing units, wake-ups of a
// sleeping coprocessor. Each test owns a Coprocessor on a local doorbell and wait policy. The
// results and flags the units write are plain (non-atomic) variables on purpose: ThreadSanitizer
// then checks that cojoin() really orders the unit's writes before the caller's reads.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <numeric>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>

#include "bgl/job_runtime/log.hpp"
#include "bgl/message_layer/coprocessor.hpp"
#include "bgl/test_support/environment.hpp"

namespace bgl::message_layer {
namespace {

using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

using test_support::QuietLog;

class CoprocessorTest : public ::testing::Test {
 protected:
  job_runtime::Doorbell bell_;
  job_runtime::WaitPolicy policy_{.spin_rounds = 200, .yield_rounds = 10, .max_sleep = 1ms};
};

// --- costart / cojoin ------------------------------------------------------------------------

struct SleepyFlag {
  std::chrono::milliseconds nap{0};
  bool ran = false;  // plain on purpose (see the file comment)
  int value = 0;
};

int sleep_then_flag(void* arg) {
  auto& s = *static_cast<SleepyFlag*>(arg);
  std::this_thread::sleep_for(s.nap);
  s.ran = true;
  return s.value;
}

TEST_F(CoprocessorTest, CojoinReturnsOnlyAfterTheUnitRan) {
  Coprocessor co(bell_, policy_);
  for (int i = 0; i < 5; ++i) {
    SleepyFlag s{std::chrono::milliseconds(40), false, 7 + i};
    const auto start = Clock::now();
    const auto ticket = co.costart(&sleep_then_flag, &s);
    EXPECT_EQ(co.cojoin(ticket), 7 + i);
    EXPECT_TRUE(s.ran) << "cojoin returned before the unit set its flag";
    EXPECT_GE(seconds_since(start), 0.039) << "cojoin cannot return before the unit's 40 ms nap";
  }
  EXPECT_EQ(co.units_run(), 5u);
}

TEST_F(CoprocessorTest, CojoinSeesEveryWriteOfManyQuickUnits) {
  Coprocessor co(bell_, policy_);
  for (int i = 0; i < 2000; ++i) {
    SleepyFlag s{0ms, false, i};
    EXPECT_EQ(co.cojoin(co.costart(&sleep_then_flag, &s)), i);
    ASSERT_TRUE(s.ran) << "unit " << i;
  }
  EXPECT_EQ(co.units_run(), 2000u);
}

struct Square {
  long input = 0;
  long output = 0;  // plain: written by the unit, read after cojoin
};

int square(void* arg) {
  auto& s = *static_cast<Square*>(arg);
  s.output = s.input * s.input;
  return static_cast<int>(s.input % 1000);
}

TEST_F(CoprocessorTest, ReturnsEachUnitsResultToItsTicket) {
  Coprocessor co(bell_, policy_);
  std::vector<Square> work(100);
  std::vector<Coprocessor::Ticket> tickets;
  for (std::size_t i = 0; i < work.size(); ++i) {
    work[i].input = static_cast<long>(i * 1237 + 5);
    tickets.push_back(co.costart(&square, &work[i]));
  }
  // Joined in an order unrelated to the start order.
  std::vector<std::size_t> order(work.size());
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937(42));
  for (const std::size_t i : order) {
    EXPECT_EQ(co.cojoin(tickets[i]), static_cast<int>(work[i].input % 1000)) << "unit " << i;
    EXPECT_EQ(work[i].output, work[i].input * work[i].input) << "unit " << i;
  }
}

// Units that wait until the main thread opens a gate: all of them are outstanding at once.
struct Gated {
  const std::atomic<bool>* gate = nullptr;
  std::uint32_t index = 0;
  std::uint32_t seen = ~0u;  // plain
};

int wait_for_gate(void* arg) {
  auto& g = *static_cast<Gated*>(arg);
  while (!g.gate->load(std::memory_order_acquire))
    std::this_thread::yield();
  g.seen = g.index;
  return static_cast<int>(g.index);
}

TEST_F(CoprocessorTest, HoldsKMaxTransientUnitsInFlightAndRefusesOneMore) {
  Coprocessor co(bell_, policy_);
  std::atomic<bool> gate{false};
  std::vector<Gated> units(Coprocessor::kMaxTransient);
  std::vector<Coprocessor::Ticket> tickets;
  for (std::uint32_t i = 0; i < Coprocessor::kMaxTransient; ++i) {
    units[i] = Gated{&gate, i};
    tickets.push_back(co.costart(&wait_for_gate, &units[i]));
  }
  // Every ticket is distinct while outstanding.
  std::vector<std::uint32_t> ids;
  for (const auto& t : tickets)
    ids.push_back(t.id);
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(std::adjacent_find(ids.begin(), ids.end()), ids.end());

  // The 257th costart, before any cojoin, throws and changes nothing.
  Gated extra{&gate, 999};
  try {
    co.costart(&wait_for_gate, &extra);
    ADD_FAILURE() << "costart number " << Coprocessor::kMaxTransient + 1 << " did not throw";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("256 units outstanding"));
  }
  EXPECT_EQ(co.units_run(), 0u) << "a unit finished before the gate opened";

  gate.store(true, std::memory_order_release);
  // Join half, start more in their places (the limit counts outstanding units, not started ones).
  for (std::uint32_t i = 0; i < Coprocessor::kMaxTransient / 2; ++i) {
    EXPECT_EQ(co.cojoin(tickets[i]), static_cast<int>(i));
    EXPECT_EQ(units[i].seen, i);
  }
  std::vector<Gated> more(Coprocessor::kMaxTransient / 2);
  for (std::uint32_t i = 0; i < more.size(); ++i) {
    more[i] = Gated{&gate, 1000 + i};
    tickets[i] = co.costart(&wait_for_gate, &more[i]);
  }
  EXPECT_THROW(co.costart(&wait_for_gate, &extra), std::runtime_error);
  for (std::uint32_t i = 0; i < Coprocessor::kMaxTransient; ++i) {
    const std::uint32_t expected = i < more.size() ? 1000 + i : i;
    EXPECT_EQ(co.cojoin(tickets[i]), static_cast<int>(expected));
  }
  for (std::uint32_t i = 0; i < more.size(); ++i)
    EXPECT_EQ(more[i].seen, 1000 + i);
  EXPECT_EQ(co.units_run(), Coprocessor::kMaxTransient + more.size());
  // Nothing outstanding: a full set can be started again.
  std::vector<Coprocessor::Ticket> again;
  for (std::uint32_t i = 0; i < Coprocessor::kMaxTransient; ++i)
    again.push_back(co.costart(&wait_for_gate, &units[i]));
  for (std::uint32_t i = 0; i < Coprocessor::kMaxTransient; ++i)
    EXPECT_EQ(co.cojoin(again[i]), static_cast<int>(i));
}

TEST_F(CoprocessorTest, JoiningATicketThatWasNotStartedThrows) {
  Coprocessor co(bell_, policy_);
  EXPECT_THROW(co.cojoin(Coprocessor::Ticket{3}), std::invalid_argument);
  EXPECT_THROW(co.cojoin(Coprocessor::Ticket{Coprocessor::kMaxTransient}), std::out_of_range);
  SleepyFlag s{0ms, false, 1};
  const auto t = co.costart(&sleep_then_flag, &s);
  EXPECT_EQ(co.cojoin(t), 1);
  EXPECT_THROW(co.cojoin(t), std::invalid_argument) << "a ticket is joined exactly once";
}

// --- permanent units -------------------------------------------------------------------------

struct Counter {
  std::atomic<std::uint64_t> calls{0};
  bool busy = false;  // what poll() answers (set before add_permanent, read-only afterwards)
};

bool count_calls(void* arg) {
  auto& c = *static_cast<Counter*>(arg);
  c.calls.fetch_add(1, std::memory_order_relaxed);
  return c.busy;
}

TEST_F(CoprocessorTest, IdlePermanentUnitKeepsRunningWhileTheMainThreadDoesNothing) {
  // Declared before the coprocessor: a permanent unit's data must outlive it.
  Counter c;  // answers "no work": the coprocessor sleeps between calls (at most 1 ms here)
  Coprocessor co(bell_, policy_);
  co.add_permanent(&count_calls, nullptr, &c);
  std::this_thread::sleep_for(100ms);
  const auto first = c.calls.load();
  std::this_thread::sleep_for(200ms);
  const auto second = c.calls.load();
  std::this_thread::sleep_for(200ms);
  const auto third = c.calls.load();
  EXPECT_GT(first, 0u);
  EXPECT_GT(second, first) << "the permanent unit stopped being called";
  EXPECT_GT(third, second) << "the permanent unit stopped being called";
}

TEST_F(CoprocessorTest, BusyPermanentUnitIsCalledContinuously) {
  Counter c;
  Coprocessor co(bell_, policy_);
  c.busy = true;  // "did some work": the coprocessor does not back off
  co.add_permanent(&count_calls, nullptr, &c);
  std::this_thread::sleep_for(50ms);
  const auto first = c.calls.load();
  std::this_thread::sleep_for(100ms);
  EXPECT_GT(c.calls.load(), first + 100) << "a busy permanent unit should be polled in a loop";
}

TEST_F(CoprocessorTest, TransientUnitsRunBesideSeveralPermanentUnits) {
  std::vector<Counter> permanent(Coprocessor::kMaxPermanent);
  Coprocessor co(bell_, policy_);
  for (auto& c : permanent)
    co.add_permanent(&count_calls, nullptr, &c);
  Counter one_too_many;
  EXPECT_THROW(co.add_permanent(&count_calls, nullptr, &one_too_many), std::runtime_error);
  for (int i = 0; i < 200; ++i) {
    Square s{i, 0};
    EXPECT_EQ(co.cojoin(co.costart(&square, &s)), i);
    EXPECT_EQ(s.output, long{i} * i);
  }
  std::this_thread::sleep_for(20ms);
  for (const auto& c : permanent)
    EXPECT_GT(c.calls.load(), 0u);
  EXPECT_EQ(one_too_many.calls.load(), 0u);
}

// A permanent unit whose `pending` check says there is work wakes a sleeping coprocessor at once.
struct Mailbox {
  std::atomic<int> posted{0};
  std::atomic<int> taken{0};
};

bool take_mail(void* arg) {
  auto& m = *static_cast<Mailbox*>(arg);
  if (m.taken.load() == m.posted.load()) return false;
  m.taken.fetch_add(1);
  return true;
}
bool mail_pending(void* arg) {
  auto& m = *static_cast<Mailbox*>(arg);
  return m.taken.load() != m.posted.load();
}

TEST_F(CoprocessorTest, RingingTheBellWakesASleepingCoprocessorForPermanentWork) {
  // The coprocessor would sleep 10 s between checks if nobody rang.
  const job_runtime::WaitPolicy sleepy{.spin_rounds = 10, .yield_rounds = 2, .max_sleep = 10s};
  Mailbox m;
  Coprocessor co(bell_, sleepy);
  co.add_permanent(&take_mail, &mail_pending, &m);
  for (int i = 1; i <= 3; ++i) {
    std::this_thread::sleep_for(50ms);  // long enough to be asleep
    const auto start = Clock::now();
    m.posted.fetch_add(1);
    bell_.ring();  // what a packet producer does
    while (m.taken.load() != i && seconds_since(start) < 5)
      std::this_thread::sleep_for(100us);
    EXPECT_EQ(m.taken.load(), i);
    EXPECT_LT(seconds_since(start), 2.0) << "the coprocessor slept through the doorbell";
  }
}

TEST_F(CoprocessorTest, CostartWakesASleepingCoprocessorAndDestructionDoesNotWaitForTheTimeout) {
  const job_runtime::WaitPolicy sleepy{.spin_rounds = 10, .yield_rounds = 2, .max_sleep = 10s};
  auto start = Clock::now();
  {
    Coprocessor co(bell_, sleepy);
    for (int i = 0; i < 3; ++i) {
      std::this_thread::sleep_for(50ms);
      SleepyFlag s{0ms, false, i};
      const auto t0 = Clock::now();
      EXPECT_EQ(co.cojoin(co.costart(&sleep_then_flag, &s)), i);
      EXPECT_TRUE(s.ran);
      EXPECT_LT(seconds_since(t0), 2.0) << "costart did not wake the coprocessor";
    }
    std::this_thread::sleep_for(50ms);
    start = Clock::now();
  }
  EXPECT_LT(seconds_since(start), 2.0) << "the destructor waited for the sleep to time out";
}

// --- failing units ---------------------------------------------------------------------------

int throw_runtime_error(void* arg) {
  throw std::runtime_error("unit " + std::to_string(*static_cast<int*>(arg)) + " exploded");
}
int throw_int(void*) {
  throw 7;
}

TEST_F(CoprocessorTest, AUnitThatThrowsReportsKUnitFailedAndTheMessage) {
  QuietLog quiet;
  Coprocessor co(bell_, policy_);
  int which = 42;
  const auto t = co.costart(&throw_runtime_error, &which);
  EXPECT_EQ(co.cojoin(t), Coprocessor::kUnitFailed);
  EXPECT_EQ(co.error(t), "unit 42 exploded");

  const auto u = co.costart(&throw_int, nullptr);
  EXPECT_EQ(co.cojoin(u), Coprocessor::kUnitFailed);
  EXPECT_EQ(co.error(u), "unknown exception");

  // The coprocessor keeps working afterwards, and a good unit has no error.
  for (int i = 0; i < 50; ++i) {
    Square s{i + 3, 0};
    const auto v = co.costart(&square, &s);
    EXPECT_EQ(co.cojoin(v), i + 3);
    EXPECT_EQ(s.output, long{i + 3} * (i + 3));
    EXPECT_EQ(co.error(v), "");
  }
  EXPECT_EQ(co.units_run(), 52u);
}

TEST_F(CoprocessorTest, FailuresAmongManyOutstandingUnitsAreReportedPerTicket) {
  QuietLog quiet;
  Coprocessor co(bell_, policy_);
  std::vector<int> ids(64);
  std::vector<Square> squares(64);
  std::vector<Coprocessor::Ticket> tickets;
  for (int i = 0; i < 64; ++i) {
    ids[static_cast<std::size_t>(i)] = i;
    squares[static_cast<std::size_t>(i)].input = i;
    tickets.push_back(i % 3 == 0
                          ? co.costart(&throw_runtime_error, &ids[static_cast<std::size_t>(i)])
                          : co.costart(&square, &squares[static_cast<std::size_t>(i)]));
  }
  // Joined back to front; error() is read right after each cojoin.
  for (int i = 63; i >= 0; --i) {
    const auto t = tickets[static_cast<std::size_t>(i)];
    if (i % 3 == 0) {
      EXPECT_EQ(co.cojoin(t), Coprocessor::kUnitFailed);
      EXPECT_EQ(co.error(t), "unit " + std::to_string(i) + " exploded");
    } else {
      EXPECT_EQ(co.cojoin(t), i);
      EXPECT_EQ(squares[static_cast<std::size_t>(i)].output, long{i} * i);
    }
  }
}

// A permanent unit that throws on its `after`-th call (from poll, or from pending).
struct Fragile {
  std::atomic<int> calls{0};
  int after = 3;
  bool throw_in_pending = false;
};

bool fragile_poll(void* arg) {
  auto& f = *static_cast<Fragile*>(arg);
  if (f.calls.fetch_add(1) + 1 == f.after && !f.throw_in_pending)
    throw std::runtime_error("permanent unit broke on call " + std::to_string(f.after));
  return false;
}
bool fragile_pending(void* arg) {
  auto& f = *static_cast<Fragile*>(arg);
  if (f.throw_in_pending && f.calls.load() >= f.after) throw 42;
  return false;
}

TEST_F(CoprocessorTest, APermanentUnitThatThrowsIsStoppedAndReportedTheOthersKeepRunning) {
  QuietLog quiet;
  Fragile breaks_in_poll, breaks_in_pending;
  breaks_in_pending.throw_in_pending = true;
  Counter healthy;
  Coprocessor co(bell_, policy_);
  const auto a = co.add_permanent(&fragile_poll, &fragile_pending, &breaks_in_poll);
  const auto b = co.add_permanent(&fragile_poll, &fragile_pending, &breaks_in_pending);
  const auto c = co.add_permanent(&count_calls, nullptr, &healthy);
  EXPECT_EQ(a, 0u);
  EXPECT_EQ(b, 1u);
  EXPECT_EQ(c, 2u);
  EXPECT_THROW((void)co.permanent_failed(3), std::out_of_range);

  const auto start = Clock::now();
  while (!(co.permanent_failed(a) && co.permanent_failed(b)) && seconds_since(start) < 10)
    std::this_thread::sleep_for(1ms);
  ASSERT_TRUE(co.permanent_failed(a));
  ASSERT_TRUE(co.permanent_failed(b));
  EXPECT_FALSE(co.permanent_failed(c));
  EXPECT_EQ(co.permanent_error(a), "permanent unit broke on call 3");
  EXPECT_EQ(co.permanent_error(b), "unknown exception");
  EXPECT_EQ(co.permanent_error(c), "");

  // The failed units are never called again; the healthy one and transient units carry on.
  const int calls_a = breaks_in_poll.calls.load();
  const int calls_b = breaks_in_pending.calls.load();
  EXPECT_EQ(calls_a, 3);
  const auto healthy_before = healthy.calls.load();
  for (int i = 0; i < 100; ++i) {
    Square s{i, 0};
    EXPECT_EQ(co.cojoin(co.costart(&square, &s)), i);
    EXPECT_EQ(s.output, long{i} * i);
  }
  std::this_thread::sleep_for(30ms);
  EXPECT_EQ(breaks_in_poll.calls.load(), calls_a);
  EXPECT_EQ(breaks_in_pending.calls.load(), calls_b);
  EXPECT_GT(healthy.calls.load(), healthy_before);
}

// --- stress (mostly for ThreadSanitizer) -----------------------------------------------------

TEST_F(CoprocessorTest, WindowOfOutstandingUnitsBesidePermanentUnits) {
  Counter busy, idle;
  Coprocessor co(bell_, policy_);
  busy.busy = true;
  co.add_permanent(&count_calls, nullptr, &busy);
  co.add_permanent(&count_calls, nullptr, &idle);
  constexpr int kUnits = 5000, kWindow = 16;
  std::vector<Square> work(kWindow);
  std::vector<Coprocessor::Ticket> tickets(kWindow);
  std::vector<int> started(kWindow, -1);
  std::uint64_t checked = 0;
  for (int i = 0; i < kUnits + kWindow; ++i) {
    const auto slot = static_cast<std::size_t>(i % kWindow);
    if (started[slot] >= 0) {
      const int n = started[slot];
      ASSERT_EQ(co.cojoin(tickets[slot]), n % 1000);
      ASSERT_EQ(work[slot].output, long{n} * n);
      ++checked;
      started[slot] = -1;
    }
    if (i < kUnits) {
      work[slot] = Square{i, 0};
      tickets[slot] = co.costart(&square, &work[slot]);
      started[slot] = i;
    }
  }
  EXPECT_EQ(checked, static_cast<std::uint64_t>(kUnits));
  EXPECT_EQ(co.units_run(), static_cast<std::uint64_t>(kUnits));
  EXPECT_GT(busy.calls.load(), 0u);
}

}  // namespace
}  // namespace bgl::message_layer
