// The collective network with threads as tasks on an in-process machine: streaming, bounded
// buffering and backpressure, broadcast, the global-interrupt barrier and wires, point-to-point.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <bit>
#include <chrono>
#include <cstring>
#include <optional>
#include <random>
#include <thread>
#include <vector>

#include "bgl/collective_net_emu/collective_network.hpp"
#include "bgl/packet_layer/endpoint.hpp"
#include "bgl/torus_emu/error.hpp"
#include "exact_sum.hpp"
#include "in_process_job.hpp"

namespace bgl::collective_net_emu {
namespace {

using test::InProcessJob;
using namespace std::chrono_literals;
constexpr auto kClass = RouteClass::combine0;

std::vector<std::byte> bytes_of(std::uint64_t v) {
  std::vector<std::byte> b(8);
  std::memcpy(b.data(), &v, 8);
  return b;
}

std::uint64_t word_of(std::span<const std::byte> b) {
  std::uint64_t v;
  std::memcpy(&v, b.data(), 8);
  return v;
}

std::vector<std::uint64_t> input_of(torus_emu::Rank rank, std::size_t n, std::uint64_t salt = 0) {
  std::mt19937_64 rng(rank * 7919 + salt);
  std::vector<std::uint64_t> v(n);
  for (auto& x : v)
    x = rng();
  return v;
}

TEST(Stream, AllreduceMatchesTheSequentialReference) {
  for (const auto& [n, shape, mode] : {std::tuple{1, "1x1x1", "heater"},
                                       {2, "2x1x1", "heater"},
                                       {5, "3x2x1", "heater"},
                                       {8, "2x2x2", "heater"},
                                       {16, "2x2x2", "vn"},
                                       {7, "2x2x1", "vn"}}) {
    SCOPED_TRACE(std::string(shape) + " " + mode + " " + std::to_string(n));
    InProcessJob job(n, shape, mode);
    constexpr std::size_t kWords = 1000;  // 32 packets, the last one partial
    std::vector<std::uint64_t> expect(kWords, 0), expect_max(kWords, 0);
    for (int r = 0; r < n; ++r) {
      const auto in = input_of(static_cast<torus_emu::Rank>(r), kWords);
      for (std::size_t i = 0; i < kWords; ++i) {
        expect[i] += in[i];
        expect_max[i] = std::max(expect_max[i], in[i]);
      }
    }
    std::atomic<int> failures{0};
    job.run([&](torus_emu::Rank rank) {
      CollectiveNetwork net(job.machine().job(), rank, job.policy());
      const auto in = input_of(rank, kWords);
      std::vector<std::uint64_t> out(kWords);
      if (net.allreduce<std::uint64_t>(AluOp::add, in, out) != Status::ok || out != expect)
        ++failures;
      if (net.allreduce<std::uint64_t>(AluOp::max, in, out) != Status::ok || out != expect_max)
        ++failures;
    });
    EXPECT_EQ(failures, 0);
  }
}

TEST(Stream, WindowBoundsHowFarATaskRunsAhead) {
  Options options;
  options.ring_packets = 4;
  InProcessJob job(2, "2x1x1", "heater", options);
  TreeEndpoint a(job.machine().job(), 0, job.policy()), b(job.machine().job(), 1, job.policy());
  const Op add{AluOp::add, Lane::u64};
  for (Seq s = 0; s < 4; ++s)
    ASSERT_EQ(a.inject(kClass, s, add, bytes_of(s)), InjectStatus::ok);
  EXPECT_EQ(a.inject(kClass, 4, add, bytes_of(4)), InjectStatus::full);  // bounded: 4 in flight
  EXPECT_FALSE(a.result_ready(kClass, 0));
  // Streaming: packet 0 combines as soon as b contributes it, before b's later packets exist.
  ASSERT_EQ(b.inject(kClass, 0, add, bytes_of(100)), InjectStatus::ok);
  EXPECT_TRUE(a.result_ready(kClass, 0));
  EXPECT_FALSE(a.result_ready(kClass, 1));
  std::array<std::byte, 8> out;
  ASSERT_TRUE(a.receive(kClass, 0, out));
  EXPECT_EQ(word_of(out), 100u);
  EXPECT_EQ(a.inject(kClass, 4, add, bytes_of(4)), InjectStatus::ok);  // the window moved on
  // b has not received 0 yet: the ring slot of 0 (and 4) is still in use, b may inject 1..3 only.
  for (Seq s = 1; s < 4; ++s)
    ASSERT_EQ(b.inject(kClass, s, add, bytes_of(100)), InjectStatus::ok);
  EXPECT_EQ(b.inject(kClass, 4, add, bytes_of(100)), InjectStatus::full);
  ASSERT_TRUE(b.receive(kClass, 0, out));
  ASSERT_EQ(b.inject(kClass, 4, add, bytes_of(100)), InjectStatus::ok);
  for (Seq s = 1; s <= 4; ++s) {
    ASSERT_TRUE(a.receive(kClass, s, out));
    EXPECT_EQ(word_of(out), s + 100);
    ASSERT_TRUE(b.receive(kClass, s, out));
    EXPECT_EQ(word_of(out), s + 100);
  }
  EXPECT_GE(a.counters().window_full, 1u);
}

TEST(Stream, MisuseIsRejected) {
  InProcessJob job(2, "2x1x1");
  TreeEndpoint a(job.machine().job(), 0, job.policy());
  const Op add{AluOp::add, Lane::u64};
  std::array<std::byte, 8> out;
  EXPECT_THROW(a.receive(kClass, 3, out), std::invalid_argument);  // results come in order
  ASSERT_EQ(a.inject(kClass, 2, add, bytes_of(1)), InjectStatus::ok);
  EXPECT_THROW(a.inject(kClass, 1, add, bytes_of(1)), std::invalid_argument);  // increasing order
  EXPECT_THROW(a.inject(kClass, 5, {AluOp::max, Lane::w128}, bytes_of(1)), std::invalid_argument);
  EXPECT_THROW(a.inject(RouteClass::to_root, 5, add, bytes_of(1)), std::invalid_argument);
  EXPECT_THROW(a.inject(kClass, 5, add, std::vector<std::byte>(257)), std::invalid_argument);
  EXPECT_THROW(a.broadcast(kClass, 7, bytes_of(1)), std::invalid_argument);  // not the next result
  TreeEndpoint b(job.machine().job(), 1, job.policy());
  EXPECT_THROW(b.send(1, 0, bytes_of(1)), std::invalid_argument);  // only to or from the root
  EXPECT_EQ(b.send(0, 0, bytes_of(1)), InjectStatus::ok);
}

TEST(Stream, OperationsTheTasksDisagreeOnAreReportedNotMixed) {
  InProcessJob job(3, "3x1x1");
  std::atomic<int> mismatches{0};
  job.run([&](torus_emu::Rank rank) {
    TreeEndpoint ep(job.machine().job(), rank, job.policy());
    const Op op{rank == 2 ? AluOp::max : AluOp::add, Lane::u64};
    ASSERT_EQ(ep.inject(kClass, 0, op, bytes_of(rank)), InjectStatus::ok);
    ep.wait_result(kClass, 0);
    std::array<std::byte, 8> out;
    const auto r = ep.receive(kClass, 0, out);
    ASSERT_TRUE(r);
    if (r->status == Status::mismatch) ++mismatches;
  });
  EXPECT_EQ(mismatches, 3);
}

TEST(Stream, SlowContributorsCauseBackpressureNotLoss) {
  Options options;
  options.ring_packets = 8;
  InProcessJob job(6, "3x2x1", "heater", options);
  constexpr std::size_t kWords = 32 * 200;  // 200 packets through an 8-deep ring
  std::vector<std::uint64_t> expect(kWords, 0);
  for (torus_emu::Rank r = 0; r < 6; ++r) {
    const auto in = input_of(r, kWords, 5);
    for (std::size_t i = 0; i < kWords; ++i)
      expect[i] ^= in[i];
  }
  std::atomic<int> failures{0};
  std::atomic<std::uint64_t> fast_full{0};
  job.run([&](torus_emu::Rank rank) {
    TreeEndpoint ep(job.machine().job(), rank, job.policy());
    const auto in = input_of(rank, kWords, 5);
    std::vector<std::uint64_t> out(kWords);
    const Op op{AluOp::bit_xor, Lane::u64};
    std::mt19937 rng(rank);
    std::size_t injected = 0, received = 0;
    const std::size_t packets = kWords / 32;
    while (received < packets) {
      if (rank == 4 && rng() % 8 == 0) std::this_thread::sleep_for(200us);  // the slow one
      bool progress = false;
      while (injected < packets && ep.inject(kClass, injected, op,
                                             std::as_bytes(std::span(in).subspan(
                                                 injected * 32, 32))) == InjectStatus::ok) {
        ++injected;
        progress = true;
      }
      if (ep.receive(kClass, received,
                     std::as_writable_bytes(std::span(out).subspan(received * 32, 32)))) {
        ++received;
        progress = true;
      }
      if (!progress) ep.wait_result(kClass, received);
      // Never more than the ring ahead of what this task received.
      if (injected > received + 8) ++failures;
    }
    if (out != expect) ++failures;
    if (rank != 4) fast_full += ep.counters().window_full;
  });
  EXPECT_EQ(failures, 0);
  EXPECT_GT(fast_full, 0u) << "the fast tasks never felt the slow one";
}

TEST(Stream, BroadcastFromEveryRootWithASleepyReader) {
  Options options;
  options.ring_packets = 4;
  InProcessJob job(5, "5x1x1", "heater", options);
  std::atomic<int> failures{0};
  job.run([&](torus_emu::Rank rank) {
    CollectiveNetwork net(job.machine().job(), rank, job.policy());
    for (torus_emu::Rank root = 0; root < 5; ++root) {
      std::vector<std::uint64_t> buf(32 * 20 + 3);  // 21 packets through a 4-deep ring
      if (rank == root) buf = input_of(root, buf.size(), 9);
      if (rank == 3) std::this_thread::sleep_for(2ms);
      net.broadcast(root, std::as_writable_bytes(std::span(buf)));
      if (buf != input_of(root, buf.size(), 9)) ++failures;
    }
  });
  EXPECT_EQ(failures, 0);
}

TEST(Stream, FloatingPointSumIsBitIdenticalEverywhereAndCorrectlyRounded) {
  InProcessJob job(6, "3x2x1");
  constexpr std::size_t kCount = 64 * 20 + 17;  // 21 groups: more than the lookahead
  const auto input = [](torus_emu::Rank r) {
    std::mt19937_64 rng(r + 11);
    std::vector<double> v(kCount);
    for (auto& x : v)
      x = std::ldexp(std::uniform_real_distribution<double>(-1, 1)(rng),
                     static_cast<int>(rng() % 40));
    return v;
  };
  std::vector<double> expect(kCount);
  for (std::size_t i = 0; i < kCount; ++i) {
    test::ExactSum s;
    for (torus_emu::Rank r = 0; r < 6; ++r)
      s.add(input(r)[i]);
    expect[i] = s.to_double();
  }
  std::vector<std::vector<double>> results(6);
  job.run([&](torus_emu::Rank rank) {
    CollectiveNetwork net(job.machine().job(), rank, job.policy());
    auto v = input(rank);
    if (rank % 2) std::this_thread::sleep_for(std::chrono::milliseconds(rank));
    ASSERT_EQ(net.allreduce_sum(v, v), Status::ok);  // in place
    results[rank] = v;
  });
  for (torus_emu::Rank r = 0; r < 6; ++r)
    for (std::size_t i = 0; i < kCount; ++i)
      ASSERT_EQ(std::bit_cast<std::uint64_t>(results[r][i]),
                std::bit_cast<std::uint64_t>(expect[i]))
          << r << " " << i;
}

// BG/L's two-phase sum, computed here from every task's values: the exponents' maximum, each value
// on that grid, the integer sum, one rounding.
double two_phase_sum(const std::vector<double>& values, int tasks) {
  std::uint32_t emax = 0;
  for (const double x : values)
    emax = std::max(emax, fp::exponent_of(x));
  const int guard = fp::guard_bits(tasks);
  __extension__ using u128 = unsigned __int128;
  u128 sum = 0;
  for (const double x : values) {
    const fp::Fixed f = fp::to_fixed(x, emax, guard);
    sum += u128{f[1]} << 64 | f[0];
  }
  const fp::Fixed total{static_cast<std::uint64_t>(sum), static_cast<std::uint64_t>(sum >> 64)};
  return fp::from_fixed(total, emax, guard).value;
}

// Sums of at most 64 doubles take phase 2 from the task that completes phase 1 (it injects every
// task's fixed-point packets, one to four): the results are the two-phase sum's bits, including
// inputs over 1,200 binades (rounded to the common grid), in place, and each waiting task sleeps
// at most once per sum. With a ring of 2 only one-packet phase 2s fit the window; longer sums
// then take the two-phase schedule.
TEST(Stream, ShortFloatingPointSumsAreTheTwoPhaseSumWithOneWakeUp) {
  constexpr int kTasks = 6, kRounds = 30;
  for (const std::uint32_t ring : {256u, 2u}) {
    Options options;
    options.ring_packets = ring;
    InProcessJob job(kTasks, "3x2x1", "heater", options);
    const auto input = [](torus_emu::Rank r, int round, std::size_t n) {
      std::mt19937_64 rng(r * 1000 + static_cast<unsigned>(round));
      std::vector<double> v(n);
      for (auto& x : v)
        x = std::ldexp(std::uniform_real_distribution<double>(-1, 1)(rng),
                       static_cast<int>(rng() % 1200) - 600);
      return v;
    };
    const auto size_of_round = [](int round) {
      return std::size_t{1} + static_cast<std::size_t>(round * 7 % 64);
    };
    std::vector<std::vector<std::vector<double>>> results(kTasks);
    std::vector<std::uint64_t> sleeps(kTasks);
    job.run([&](torus_emu::Rank rank) {
      CollectiveNetwork net(job.machine().job(), rank, job.policy());
      for (int round = 0; round < kRounds; ++round) {
        auto v = input(rank, round, size_of_round(round));
        if (rank == static_cast<torus_emu::Rank>(round % kTasks))
          std::this_thread::sleep_for(1ms);  // a different task completes phase 1 each round
        ASSERT_EQ(net.allreduce_sum(v, v), Status::ok);
        results[rank].push_back(v);
      }
      sleeps[rank] = net.tree().counters().sleeps;
    });
    for (int round = 0; round < kRounds; ++round) {
      const std::size_t n = size_of_round(round);
      for (std::size_t i = 0; i < n; ++i) {
        std::vector<double> column;
        for (torus_emu::Rank r = 0; r < kTasks; ++r)
          column.push_back(input(r, round, n)[i]);
        const double expect = two_phase_sum(column, kTasks);
        for (torus_emu::Rank r = 0; r < kTasks; ++r)
          ASSERT_EQ(std::bit_cast<std::uint64_t>(results[r][round][i]),
                    std::bit_cast<std::uint64_t>(expect))
              << "task " << r << ", round " << round << ", element " << i;
      }
    }
    if (ring > 2) {
      for (torus_emu::Rank r = 0; r < kTasks; ++r)
        EXPECT_LE(sleeps[r], static_cast<std::uint64_t>(kRounds)) << "task " << r;
    }
  }
}

TEST(Stream, FloatingPointScheduleWorksWithTheSmallestRing) {
  Options options;
  options.ring_packets = 2;  // phase 2 of a group waits for its phase-1 result every time
  InProcessJob job(3, "3x1x1", "heater", options);
  std::vector<std::vector<double>> results(3);
  job.run([&](torus_emu::Rank rank) {
    CollectiveNetwork net(job.machine().job(), rank, job.policy());
    std::vector<double> v(300);
    for (std::size_t i = 0; i < v.size(); ++i)
      v[i] = static_cast<double>(i) * (rank + 1) + 0.25;
    ASSERT_EQ(net.allreduce_sum(v, v), Status::ok);
    results[rank] = v;
  });
  for (std::size_t i = 0; i < 300; ++i) {
    ASSERT_EQ(results[0][i], static_cast<double>(i) * 6 + 0.75);
    ASSERT_EQ(results[1], results[0]);
    ASSERT_EQ(results[2], results[0]);
  }
}

TEST(Stream, FloatingPointSpecialValuesComeBackWithAStatus) {
  InProcessJob job(3, "3x1x1");
  job.run([&](torus_emu::Rank rank) {
    CollectiveNetwork net(job.machine().job(), rank, job.policy());
    std::vector<double> v{1.0, 2.0, 3.0};
    if (rank == 1) v[1] = std::numeric_limits<double>::infinity();
    std::vector<double> out(3);
    EXPECT_EQ(net.allreduce_sum(v, out), Status::not_finite);
    EXPECT_EQ(out[0], 3.0);
    EXPECT_TRUE(std::isinf(out[1]));
    std::vector<double> big(3, std::numeric_limits<double>::max());
    EXPECT_EQ(net.allreduce_sum(big, out), Status::overflow);
    EXPECT_EQ(net.allreduce_max(v, out), Status::ok);
    EXPECT_EQ(out[1], std::numeric_limits<double>::infinity());
    v[2] = rank == 0 ? std::nan("") : -1.0;
    EXPECT_EQ(net.allreduce_min(v, out), Status::not_finite);
    EXPECT_TRUE(std::isnan(out[2]));
    EXPECT_EQ(out[0], 1.0);
  });
}

TEST(GlobalInterruptTest, BarrierHoldsEveryoneUntilAllArrive) {
  InProcessJob job(12, "3x2x2");
  constexpr int kRounds = 300;
  std::vector<std::atomic<int>> arrived(kRounds);
  std::atomic<int> failures{0};
  job.run([&](torus_emu::Rank rank) {
    GlobalInterrupt gi(job.machine().job(), rank, job.policy());
    std::mt19937 rng(rank);
    for (int k = 0; k < kRounds; ++k) {
      if (rng() % 16 == 0) std::this_thread::sleep_for(50us);
      arrived[static_cast<std::size_t>(k)].fetch_add(1);
      gi.barrier();
      if (arrived[static_cast<std::size_t>(k)].load() != 12) ++failures;
    }
  });
  EXPECT_EQ(failures, 0);
}

TEST(GlobalInterruptTest, SplitPhaseBarrier) {
  InProcessJob job(2, "2x1x1");
  GlobalInterrupt a(job.machine().job(), 0, job.policy()), b(job.machine().job(), 1, job.policy());
  const auto ta = a.arrive();
  EXPECT_FALSE(a.test(ta));
  const auto tb = b.arrive();
  EXPECT_TRUE(a.test(ta));
  EXPECT_TRUE(b.test(tb));
  const auto ta2 = a.arrive();  // the second barrier lowers the inputs again
  EXPECT_FALSE(a.test(ta2));
  b.barrier();
  a.wait(ta2);
}

TEST(GlobalInterruptTest, WiresReadOrAndAnd) {
  InProcessJob job(3, "3x1x1");
  std::vector<std::unique_ptr<GlobalInterrupt>> gi;
  for (torus_emu::Rank r = 0; r < 3; ++r)
    gi.push_back(std::make_unique<GlobalInterrupt>(job.machine().job(), r, job.policy()));
  EXPECT_FALSE(gi[0]->wire_any(1));
  gi[1]->set_wire(1, true);
  gi[1]->set_wire(1, true);  // idempotent
  EXPECT_TRUE(gi[0]->wire_any(1));
  EXPECT_FALSE(gi[0]->wire_all(1));
  EXPECT_FALSE(gi[0]->wire_any(2));
  gi[0]->set_wire(1, true);
  gi[2]->set_wire(1, true);
  EXPECT_TRUE(gi[2]->wire_all(1));
  gi[1]->set_wire(1, false);
  EXPECT_FALSE(gi[2]->wire_all(1));
  EXPECT_THROW(gi[0]->set_wire(0, true), std::invalid_argument);
  EXPECT_THROW(gi[0]->set_wire(4, true), std::invalid_argument);
  std::thread waiter([&] { gi[0]->wait_wire(3, WireLevel::all_raised); });
  for (auto& g : gi)
    g->set_wire(3, true);
  waiter.join();
}

// A task waiting in the barrier answers its packets as they arrive: a peer may need those answers
// before it can arrive (an RMA target waiting in a fence's barrier). The waiting task goes
// straight to sleep, and its sleeps and safety interval are 30 s, so only its packet doorbell can
// wake it in time.
TEST(GlobalInterruptTest, AWaitingTaskAnswersPacketsAsTheyArrive) {
  InProcessJob job(2, "2x1x1");
  job_runtime::WaitPolicy sleepy;
  sleepy.spin_rounds = 0;
  sleepy.yield_rounds = 0;
  sleepy.max_sleep = 30s;
  constexpr int kPings = 20;
  std::atomic<int> late{0};
  job.run([&](torus_emu::Rank rank) {
    packet_layer::Endpoint ep(job.machine(), rank, 0, job.policy());
    GlobalInterrupt gi(job.machine().job(), rank, sleepy);
    const std::array<std::byte, 8> payload{};
    const packet_layer::PacketSpec to_peer{ep.destination_of(1 - rank)};
    if (rank == 0) {
      const auto answer = [](void* context) {
        auto& e = *static_cast<packet_layer::Endpoint*>(context);
        const auto f = e.poll();
        if (!f) return false;
        e.discard(*f);
        const std::array<std::byte, 8> pong{};
        while (e.inject(0, {e.destination_of(1)}, pong) == packet_layer::InjectStatus::full)
          e.advance();
        return true;
      };
      gi.set_meanwhile({answer, &ep, &ep.doorbell(), 30s, 30s});
      gi.barrier();
      return;
    }
    for (int i = 0; i < kPings && late == 0; ++i) {
      std::this_thread::sleep_for(i == 0 ? 100ms : 5ms);  // the waiting task falls asleep
      while (ep.inject(0, to_peer, payload) == packet_layer::InjectStatus::full)
        ep.advance();
      const auto sent = std::chrono::steady_clock::now();
      std::optional<packet_layer::FifoRef> f;
      while (!(f = ep.poll()) && late == 0) {
        if (std::chrono::steady_clock::now() - sent > 10s) ++late;
        ep.wait();
      }
      if (f) ep.discard(*f);
    }
    gi.barrier();
  });
  EXPECT_EQ(late, 0) << "a ping waited for the interval, not for the doorbell";
}

// A waiting task whose side work has nothing that no doorbell announces sleeps until the barrier
// completes (one sleep, or two if woken by its own doorbell); with such work pending it re-checks
// on the doubling interval (1, 2, 4, ... ms over the 300 ms the peer takes). Many tasks on few
// cores cannot afford time-outs that wake a task with nothing to do.
TEST(GlobalInterruptTest, AWaitWithNothingUnannouncedSleepsThrough) {
  for (const bool pending : {false, true}) {
    InProcessJob job(2, "2x1x1");
    job_runtime::WaitPolicy sleepy;
    sleepy.spin_rounds = 0;
    sleepy.yield_rounds = 0;
    sleepy.max_sleep = 30s;
    std::uint64_t sleeps = 0;
    job.run([&](torus_emu::Rank rank) {
      packet_layer::Endpoint ep(job.machine(), rank, 0, job.policy());
      GlobalInterrupt gi(job.machine().job(), rank, sleepy);
      if (rank == 1) {
        std::this_thread::sleep_for(300ms);
        gi.barrier();
        return;
      }
      Meanwhile m{[](void*) { return false; }, nullptr, &ep.doorbell(), 1ms, 30s};
      m.unannounced = [](const void* p) { return *static_cast<const bool*>(p); };
      m.unannounced_context = &pending;
      gi.set_meanwhile(m);
      gi.barrier();
      sleeps = gi.sleeps();
    });
    if (pending)
      EXPECT_GE(sleeps, 5u);
    else
      EXPECT_LE(sleeps, 2u);
  }
}

TEST(PointToPoint, TasksTalkToTheRootAndBack) {
  Options options;
  options.inbox_packets = 2;
  InProcessJob job(6, "3x2x1", "heater", options);
  constexpr std::uint32_t kPerTask = 50;
  std::atomic<int> failures{0};
  job.run([&](torus_emu::Rank rank) {
    TreeEndpoint ep(job.machine().job(), rank, job.policy());
    const torus_emu::Rank root = ep.root_rank();
    if (rank == root) {
      std::vector<std::uint32_t> next(6, 0);
      for (std::uint32_t got = 0; got < kPerTask * 5; ++got) {
        while (!ep.peek_inbox())
          ep.wait_inbox();
        const auto in = *ep.peek_inbox();
        if (in.tag != next[in.source]++ || word_of(in.data) != in.source * 1000u + in.tag)
          ++failures;
        const auto reply = bytes_of(in.tag * 2);
        const torus_emu::Rank to = in.source;
        ep.pop_inbox();
        while (ep.send(to, in.tag, reply) == InjectStatus::full)
          ep.wait_send_space(to);
      }
      return;
    }
    EXPECT_THROW(ep.send((rank % 5) + 1, 0, bytes_of(0)), std::invalid_argument);  // not the root
    for (std::uint32_t i = 0; i < kPerTask; ++i) {
      while (ep.send(root, i, bytes_of(rank * 1000u + i)) == InjectStatus::full)
        ep.wait_send_space(root);
      while (!ep.peek_inbox())
        ep.wait_inbox();
      if (ep.peek_inbox()->tag != i || word_of(ep.peek_inbox()->data) != i * 2) ++failures;
      ep.pop_inbox();
    }
  });
  EXPECT_EQ(failures, 0);
}

TEST(Region, JobsWithoutTheRegionGetAClearError) {
  job_runtime::JobOptions o;
  o.ntasks = 2;
  const auto config = job_runtime::JobConfig::resolve(o);
  std::vector<std::byte> memory(packet_layer::Machine::segment_bytes(config) + 4096);
  auto* aligned = reinterpret_cast<std::byte*>(
      (reinterpret_cast<std::uintptr_t>(memory.data()) + 4095) & ~std::uintptr_t{4095});
  const auto machine = packet_layer::Machine::format(
      {aligned, packet_layer::Machine::segment_bytes(config)}, config);
  try {
    TreeEndpoint ep(machine.job(), 0, job_runtime::WaitPolicy{});
    ADD_FAILURE();
  } catch (const ConfigError& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("no collective network region"));
  }
}

}  // namespace
}  // namespace bgl::collective_net_emu
