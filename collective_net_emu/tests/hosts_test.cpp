// The collective network across emulated hosts inside one process: threads as tasks, one segment
// and one libfabric agent per host (in_process_hosts.hpp). The results must be those of one host;
// under TSan this checks the ordering of remote stores against the tasks' reads.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <bit>
#include <cstring>
#include <random>
#include <vector>

#include "bgl/collective_net_emu/collective_network.hpp"
#include "in_process_hosts.hpp"
#include "in_process_job.hpp"

namespace bgl::collective_net_emu {
namespace {

using test::InProcessHosts;
using test::InProcessJob;
constexpr auto kClass = RouteClass::combine1;  // CollectiveNetwork uses combine0

std::vector<std::uint64_t> input_of(torus_emu::Rank rank, std::size_t n) {
  std::mt19937_64 rng(rank * 7919 + 5);
  std::vector<std::uint64_t> v(n);
  for (auto& x : v)
    x = rng();
  return v;
}

std::vector<double> doubles_of(torus_emu::Rank rank, std::size_t n) {
  std::mt19937_64 rng(rank * 104729 + 11);
  std::uniform_real_distribution<double> mantissa(-1, 1);
  std::uniform_int_distribution<int> exponent(-30, 30);
  std::vector<double> v(n);
  for (auto& x : v)
    x = std::ldexp(mantissa(rng), exponent(rng));
  return v;
}

TEST(Hosts, IntegerAndFloatingPointResultsEqualOneHost) {
  constexpr int kTasks = 8;
  constexpr std::size_t kWords = 1000, kDoubles = 700;
  std::vector<std::uint64_t> sum(kWords, 0), max(kWords, 0);
  for (int r = 0; r < kTasks; ++r) {
    const auto in = input_of(static_cast<torus_emu::Rank>(r), kWords);
    for (std::size_t i = 0; i < kWords; ++i) {
      sum[i] += in[i];
      max[i] = std::max(max[i], in[i]);
    }
  }
  // The double sum on one host, the reference for the bits.
  std::vector<double> one_host(kDoubles);
  {
    InProcessJob job(kTasks, "2x2x2");
    job.run([&](torus_emu::Rank rank) {
      CollectiveNetwork net(job.machine().job(), rank, job.policy());
      std::vector<double> out(kDoubles);
      EXPECT_EQ(net.allreduce_sum(doubles_of(rank, kDoubles), out), Status::ok);
      if (rank == 0) one_host = out;
    });
  }
  for (const int hosts : {2, 3}) {
    SCOPED_TRACE(std::to_string(hosts) + " hosts");
    InProcessHosts job(kTasks, "2x2x2", hosts);
    std::atomic<int> failures{0};
    job.run([&](torus_emu::Rank rank) {
      CollectiveNetwork net(job.machine(rank).job(), rank, job.policy());
      const auto in = input_of(rank, kWords);
      std::vector<std::uint64_t> out(kWords);
      if (net.allreduce<std::uint64_t>(AluOp::add, in, out) != Status::ok || out != sum) ++failures;
      if (net.allreduce<std::uint64_t>(AluOp::max, in, out) != Status::ok || out != max) ++failures;
      std::vector<double> d(kDoubles);
      if (net.allreduce_sum(doubles_of(rank, kDoubles), d) != Status::ok ||
          std::memcmp(d.data(), one_host.data(), kDoubles * sizeof(double)) != 0)
        ++failures;
    });
    EXPECT_EQ(failures, 0);
    EXPECT_FALSE(job.finish().has_value());
    EXPECT_GT(job.stats(0).stores_applied, 0u);
  }
}

TEST(Hosts, StreamingBroadcastBarrierWiresAndPointToPoint) {
  Options options;
  options.ring_packets = 4;  // the window and the partial rings wrap many times
  options.inbox_packets = 2;
  packet_layer::OfiOptions ofi;
  ofi.credits = 2;
  ofi.batch = 1;
  InProcessHosts job(6, "3x2x1", 2, options, ofi);
  std::atomic<int> failures{0};
  job.run([&](torus_emu::Rank rank) {
    CollectiveNetwork net(job.machine(rank).job(), rank, job.policy());
    TreeEndpoint& tree = net.tree();
    // 200 packets streamed through the 4-deep window: each packet's sum of ranks + seq.
    for (Seq s = 0, next = 0; next < 200;) {
      const std::uint64_t v = rank + s;
      if (s < 200 && tree.inject(kClass, s, Op{AluOp::add, Lane::u64},
                                 std::as_bytes(std::span(&v, 1))) == InjectStatus::ok) {
        ++s;
        continue;
      }
      std::uint64_t got = 0;
      if (tree.receive(kClass, next, std::as_writable_bytes(std::span(&got, 1)))) {
        if (got != 15 + 6 * next) ++failures;
        ++next;
      } else {
        tree.wait_result(kClass, next);
      }
    }
    // Broadcasts from every rank.
    for (torus_emu::Rank root = 0; root < 6; ++root) {
      std::vector<std::uint64_t> b(100, rank == root ? root * 1000 + 7 : 0);
      net.broadcast(root, std::as_writable_bytes(std::span(b)));
      if (b != std::vector<std::uint64_t>(100, root * 1000 + 7)) ++failures;
    }
    // Barriers with a shared counter: nobody passes barrier k before all arrived at it.
    static std::atomic<int> arrived{0};
    GlobalInterrupt& gi = net.interrupt();
    for (int k = 1; k <= 50; ++k) {
      arrived.fetch_add(1);
      gi.barrier();
      if (arrived.load() < 6 * k) ++failures;
    }
    // Wires: all raised, then all lowered.
    gi.set_wire(1, true);
    gi.wait_wire(1, WireLevel::all_raised);
    gi.barrier();
    gi.set_wire(1, false);
    gi.wait_wire(1, WireLevel::none_raised);
    gi.barrier();
    // Point-to-point: 40 packets from everybody to the root through 2-deep inbox lanes.
    if (rank == tree.root_rank()) {
      std::vector<std::uint32_t> next(6, 0);
      for (int got = 0; got < 40 * 5; ++got) {
        while (!tree.peek_inbox())
          tree.wait_inbox();
        const Incoming in = *tree.peek_inbox();
        if (in.tag != next[in.source]++ || in.data.size() != 8) ++failures;
        tree.pop_inbox();
      }
    } else {
      for (std::uint32_t i = 0; i < 40; ++i) {
        const std::uint64_t v = i;
        while (tree.send(tree.root_rank(), i, std::as_bytes(std::span(&v, 1))) ==
               InjectStatus::full)
          tree.wait_send_space(tree.root_rank());
      }
    }
    gi.barrier();
  });
  EXPECT_EQ(failures, 0);
  EXPECT_FALSE(job.finish().has_value());
}

}  // namespace
}  // namespace bgl::collective_net_emu
