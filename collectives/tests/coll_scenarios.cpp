// Task program for the collectives' multi-process tests, run by bglrun (driven from
// coll_launcher_test.cpp). Every task starts through message_layer::Session::from_launcher() and
// runs every applicable algorithm of the requested collectives through the executor, comparing each
// result with a reference computed locally from the deterministic inputs of all ranks.
//
//   coll_scenarios world [OPS]   the job's communicator (whole partition: tree/barrier steps too)
//   coll_scenarios lines         deposit-bit line steps on their own (see lines())
//   coll_scenarios split [OPS]   two concurrent communicators (even and odd job ranks, contexts 1
//                                and 2, reversed rank order in the odd one): torus algorithms
//   coll_scenarios sites [N]     call sites for bglrun --stats: 5 allreduces and 3 broadcasts
//                                through collectives::Library in sites_through_library(), 4
//                                binomial broadcasts through Communicator::run in sites_direct(),
//                                then N broadcasts of N different sizes in sites_many() (default 0)
//   coll_scenarios library       collectives::Library's cache of programs: allgathers of uneven
//                                blocks, the same total in different shapes, each placed right
// OPS: comma-separated collectives (default: all). Prints "coll: <op> <algorithm> ok (<n> runs)".
// A failed check prints the rank and what differs, and exits 1.
#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bgl/collective_net_emu/collective_network.hpp"
#include "bgl/collectives/executor.hpp"
#include "bgl/collectives/library.hpp"
#include "bgl/collectives/registry.hpp"
#include "bgl/message_layer/session.hpp"

namespace {

using namespace bgl;
using namespace bgl::collectives;

unsigned g_rank = 0;

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "CHECK FAILED rank %u: %s\n", g_rank, what.c_str());
  std::fflush(stderr);
  std::exit(1);
}

std::byte pattern(std::uint64_t who, std::uint64_t i) {
  return static_cast<std::byte>((who * 131 + i * 7 + (i >> 8)) & 0xff);
}

std::int64_t value(int r, std::uint64_t k) {
  return (r + 1) * 1000 + static_cast<std::int64_t>(k % 977) - 3 * r * r;
}

struct Case {
  Params params;
  std::string label;
};

std::vector<Case> cases(Collective op, int p) {
  std::vector<Case> out;
  auto add = [&](Params x, std::string label) { out.push_back({std::move(x), std::move(label)}); };
  switch (op) {
    case Collective::bcast:
      for (std::uint64_t b :
           {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{1000}, std::uint64_t{100000}})
        for (int root : {0, p - 1})
          add(Params::bcast(p, root, b), "bytes=" + std::to_string(b));
      break;
    case Collective::reduce:
      for (std::uint64_t n : {std::uint64_t{1}, std::uint64_t{3000}})
        for (int root : {0, p / 2}) {
          add(Params::reduce(p, root, n, DataType::i64, ReduceOp::sum), "i64 sum");
          add(Params::reduce(p, root, n, DataType::f64, ReduceOp::sum), "f64 sum");
        }
      break;
    case Collective::allreduce:
      for (std::uint64_t n : {std::uint64_t{1}, std::uint64_t{7}, std::uint64_t{5000}}) {
        add(Params::allreduce(p, n, DataType::i64, ReduceOp::sum), "i64 sum");
        add(Params::allreduce(p, n, DataType::i32, ReduceOp::max), "i32 max");
        add(Params::allreduce(p, n, DataType::f64, ReduceOp::sum), "f64 sum");
      }
      break;
    case Collective::allgather: {
      add(Params::allgather(std::vector<std::uint64_t>(static_cast<std::size_t>(p), 100)), "even");
      std::vector<std::uint64_t> v;
      for (int i = 0; i < p; ++i)
        v.push_back(static_cast<std::uint64_t>((i * 7919) % 5000));
      add(Params::allgather(v), "uneven");
      break;
    }
    case Collective::alltoall:
      add(Params::alltoall(p, 1), "1");
      add(Params::alltoall(p, 3000), "3000");
      break;
    case Collective::reduce_scatter: {
      std::vector<std::uint64_t> v;
      for (int i = 0; i < p; ++i)
        v.push_back(8 * static_cast<std::uint64_t>(i % 3 + 10));
      add(Params::reduce_scatter(v, DataType::i64, ReduceOp::sum), "i64 sum");
      break;
    }
    case Collective::barrier:
      add(Params::barrier(p), "");
      break;
  }
  return out;
}

// Inputs of rank r, and the expected output of rank r.
std::vector<std::byte> input(const Params& x, int r) {
  std::vector<std::byte> in(x.send_bytes(r));
  if (x.op == Collective::reduce || x.op == Collective::allreduce ||
      x.op == Collective::reduce_scatter) {
    const std::size_t e = size_of(x.dtype);
    for (std::size_t k = 0; k < in.size() / e; ++k) {
      const std::int64_t v = value(r, k);
      if (x.dtype == DataType::f64) {
        const double d = static_cast<double>(v) * 0.5;
        std::memcpy(in.data() + k * e, &d, e);
      } else if (x.dtype == DataType::i32) {
        const auto w = static_cast<std::int32_t>(v);
        std::memcpy(in.data() + k * e, &w, e);
      } else {
        std::memcpy(in.data() + k * e, &v, e);
      }
    }
    return in;
  }
  if (x.op == Collective::alltoall) {
    for (int j = 0; j < x.p; ++j)
      for (std::uint64_t i = 0; i < x.a2a_count(r, j); ++i)
        in[x.a2a_send_displ(r, j) + i] = pattern(static_cast<std::uint64_t>(r * x.p + j), i);
    return in;
  }
  for (std::uint64_t i = 0; i < in.size(); ++i)
    in[i] = pattern(static_cast<std::uint64_t>(r), i);
  return in;
}

std::vector<std::byte> expected(const Params& x, int r) {
  std::vector<std::byte> out(x.recv_bytes(r));
  switch (x.op) {
    case Collective::bcast:
      for (std::uint64_t i = 0; i < out.size(); ++i)
        out[i] = pattern(static_cast<std::uint64_t>(x.root), i);
      break;
    case Collective::allgather:
      for (int q = 0; q < x.p; ++q)
        for (std::uint64_t i = 0; i < x.counts[static_cast<std::size_t>(q)]; ++i)
          out[x.displ(q) + i] = pattern(static_cast<std::uint64_t>(q), i);
      break;
    case Collective::alltoall:
      for (int q = 0; q < x.p; ++q)
        for (std::uint64_t i = 0; i < x.a2a_count(q, r); ++i)
          out[x.a2a_recv_displ(q, r) + i] = pattern(static_cast<std::uint64_t>(q * x.p + r), i);
      break;
    case Collective::reduce:
    case Collective::allreduce:
    case Collective::reduce_scatter: {
      const std::size_t e = size_of(x.dtype);
      const std::uint64_t base = x.op == Collective::reduce_scatter ? x.displ(r) / e : 0;
      for (std::size_t k = 0; k < out.size() / e; ++k) {
        std::int64_t acc = x.reduce_op == ReduceOp::max ? INT64_MIN : 0;
        for (int q = 0; q < x.p; ++q) {
          const std::int64_t v = x.dtype == DataType::i32
                                     ? static_cast<std::int32_t>(value(q, base + k))
                                     : value(q, base + k);
          acc = x.reduce_op == ReduceOp::max ? std::max(acc, v) : acc + v;
        }
        if (x.dtype == DataType::f64) {
          const double d = static_cast<double>(acc) * 0.5;  // exact: small halves
          std::memcpy(out.data() + k * e, &d, e);
        } else if (x.dtype == DataType::i32) {
          const auto w = static_cast<std::int32_t>(acc);
          std::memcpy(out.data() + k * e, &w, e);
        } else {
          std::memcpy(out.data() + k * e, &acc, e);
        }
      }
      break;
    }
    case Collective::barrier:
      break;
  }
  return out;
}

// Deposit-bit line steps run directly (the job's communicator, rank r on node x = r of a line of
// at least 3 nodes along X): a line to the next two nodes (a real multicast: the packet layer
// delivers copies), a line that skips a node (the executor falls back to messages: no copies),
// and a wrapping line in X-; each for several sizes, with receivers that post late (the packets
// wait in the executor) or early. Every receiver checks its data; rank 0 checks the copies.
void lines(const message_layer::Session& session, Communicator& comm) {
  const int p = comm.size(), rank = comm.rank();
  const torus_emu::Shape& shape = session.mapping().shape();
  if (shape.extent(torus_emu::Dim::x) < 3 || p != shape.node_count())
    fail("lines needs one task per node and at least 3 nodes along X");
  auto node_rank = [&](int x) { return static_cast<int>(x % shape.extent(torus_emu::Dim::x)); };
  const int xe = shape.extent(torus_emu::Dim::x);
  struct LineCase {
    torus_emu::Direction dir;
    std::vector<int> receivers;
    bool multicast;
  };
  const std::vector<LineCase> line_cases{
      {torus_emu::Direction::x_plus, {node_rank(1), node_rank(2)}, true},
      {torus_emu::Direction::x_plus, {node_rank(2)}, false},
      {torus_emu::Direction::x_minus, {node_rank(xe - 1), node_rank(xe - 2)}, true}};
  const auto& counters = comm.executor().layer().endpoint().counters();
  int runs = 0;
  for (const LineCase& lc : line_cases)
    for (std::uint64_t bytes : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{224},
                                std::uint64_t{225}, std::uint64_t{20000}})
      for (bool late : {false, true}) {
        const Params x = Params::bcast(p, 0, bytes);
        Program prog(rank);
        const bool receiver =
            std::find(lc.receivers.begin(), lc.receivers.end(), rank) != lc.receivers.end();
        if (rank == 0) prog.line_send(lc.dir, lc.receivers, recv_buf(0, bytes), 7);
        if (receiver) prog.recv(0, recv_buf(0, bytes), 7);
        std::vector<std::byte> out(bytes, std::byte{0xEE});
        if (rank == 0)
          for (std::uint64_t i = 0; i < bytes; ++i)
            out[i] = pattern(0, i);
        if (late && receiver) std::this_thread::sleep_for(std::chrono::milliseconds(20));
        const std::uint64_t before = counters.deposit_copies;
        comm.run(prog, x, {{}, out});
        if (receiver || rank == 0)
          for (std::uint64_t i = 0; i < bytes; ++i)
            if (out[i] != pattern(0, i))
              fail("line to " + std::to_string(lc.receivers.size()) + " receivers, " +
                   std::to_string(bytes) + " bytes: byte " + std::to_string(i) + " differs");
        // Copies beyond the line's destination: one per packet and intermediate receiver. The
        // step completed when its packets were in the injection FIFOs; count once they are out.
        message_layer::MessageLayer& ml = comm.executor().layer();
        ml.progress_until([&] { return ml.flushed(); });
        const std::uint64_t copies = counters.deposit_copies - before;
        const std::uint64_t packets = std::max<std::uint64_t>(1, (bytes + 223) / 224);
        const std::uint64_t want = lc.multicast ? packets * (lc.receivers.size() - 1) : 0;
        if (rank == 0 && copies != want)
          fail("line to " + std::to_string(lc.receivers.size()) + " receivers, " +
               std::to_string(bytes) + " bytes: " + std::to_string(copies) +
               " deposit-bit copies, expected " + std::to_string(want));
        ++runs;
      }
  if (rank == 0) std::printf("coll: lines ok (%d runs)\n", runs);
}

// The call sites' functions are not inlined, so that each names its own call site.
[[gnu::noinline]] void sites_through_library(Library& library, const Group& group) {
  std::vector<std::uint64_t> in{g_rank + 1u}, out(1);
  for (int i = 0; i < 5; ++i) {
    const bool ran =
        library.run(group, Params::allreduce(group.size, 1, DataType::u64, ReduceOp::sum),
                    {std::as_bytes(std::span(in)), std::as_writable_bytes(std::span(out))});
    const std::uint64_t want = static_cast<std::uint64_t>(group.size) * (group.size + 1) / 2;
    if (!ran || out[0] != want)
      fail("library allreduce: " + std::to_string(out[0]) + ", expected " + std::to_string(want));
  }
  std::vector<std::byte> data(1000, std::byte{7});
  for (int i = 0; i < 3; ++i)
    if (!library.run(group, Params::bcast(group.size, 0, data.size()), {{}, data}))
      fail("library bcast not handled");
}

[[gnu::noinline]] void sites_direct(Communicator& comm) {
  const Params x = Params::bcast(comm.size(), 1, 512);
  Program prog = find_algorithm(Collective::bcast, "binomial")->generate(x, comm.rank());
  prog.set_algorithm("binomial");
  std::vector<std::byte> data(512, std::byte{static_cast<unsigned char>(comm.rank() == 1)});
  for (int i = 0; i < 4; ++i)
    comm.run(prog, x, {{}, data});
  if (data[511] != std::byte{1}) fail("direct bcast: wrong data");
}

[[gnu::noinline]] void sites_many(Communicator& comm, int n) {
  for (int i = 0; i < n; ++i) {
    const Params x = Params::bcast(comm.size(), 0, static_cast<std::uint64_t>(i + 1));
    const Program prog = find_algorithm(Collective::bcast, "binomial")->generate(x, comm.rank());
    std::vector<std::byte> data(static_cast<std::size_t>(i + 1));
    comm.run(prog, x, {{}, data});
  }
}

int sites(message_layer::Session& session, int many) {
  Library library(session);
  const Group group{0, session.size(), static_cast<int>(g_rank), {}, true};
  sites_through_library(library, group);
  Topology topo;
  topo.mapping = &session.mapping();
  Communicator comm(library.executor(), topo, session.size(), static_cast<int>(g_rank), 1);
  sites_direct(comm);
  sites_many(comm, many);
  while (!session.layer().idle())
    session.layer().advance();
  if (g_rank == 0) std::printf("coll: sites ok\n");
  return 0;
}

// Library keeps a program per kind of call; two allgathers with the same total but different
// blocks are different calls (each block must land at its own place).
int library(message_layer::Session& session) {
  Library library(session);
  const int p = session.size();
  const Group group{0, p, static_cast<int>(g_rank), {}, true};
  for (int shape = 0; shape < 3; ++shape) {
    // Rank r gives 1 + (r + shape) % p bytes: every shape has the same total.
    std::vector<std::uint64_t> counts(static_cast<std::size_t>(p));
    for (int r = 0; r < p; ++r)
      counts[static_cast<std::size_t>(r)] = 1 + static_cast<std::uint64_t>((r + shape) % p);
    std::vector<std::byte> in(counts[g_rank]), out;
    for (std::size_t i = 0; i < in.size(); ++i)
      in[i] = pattern(g_rank, i + static_cast<std::size_t>(shape));
    for (const std::uint64_t c : counts)
      out.resize(out.size() + c);
    for (int repeat = 0; repeat < 2; ++repeat) {
      std::ranges::fill(out, std::byte{0});
      if (!library.run(group, Params::allgather(counts), {in, out}))
        fail("library allgather not handled");
      std::size_t at = 0;
      for (int r = 0; r < p; ++r)
        for (std::uint64_t i = 0; i < counts[static_cast<std::size_t>(r)]; ++i, ++at)
          if (out[at] !=
              pattern(static_cast<std::uint64_t>(r), i + static_cast<std::size_t>(shape)))
            fail("library allgather, shape " + std::to_string(shape) + ": byte " +
                 std::to_string(i) + " of rank " + std::to_string(r) + "'s block is wrong");
    }
  }
  if (g_rank == 0) std::printf("coll: library ok\n");
  return 0;
}

int run(int argc, char** argv) {
  auto session = message_layer::Session::from_launcher();
  g_rank = session->rank();
  const int world = session->size();
  const std::string mode = argc > 1 ? argv[1] : "world";
  if (mode == "sites") return sites(*session, argc > 2 ? std::atoi(argv[2]) : 0);
  if (mode == "library") return library(*session);
  std::vector<Collective> ops;
  if (argc > 2) {
    std::istringstream list(argv[2]);
    for (std::string name; std::getline(list, name, ',');) {
      const auto c = parse_collective(name);
      if (!c) fail("unknown collective '" + name + "'");
      ops.push_back(*c);
    }
  } else {
    for (int i = 0; i < kCollectives; ++i)
      ops.push_back(static_cast<Collective>(i));
  }

  std::unique_ptr<collective_net_emu::CollectiveNetwork> net;
  if (mode == "world")
    net = std::make_unique<collective_net_emu::CollectiveNetwork>(
        session->runtime().machine().job(), session->runtime().rank(),
        session->runtime().wait_policy(), collective_net_emu::RouteClass::combine1);
  Executor executor(session->layer(), net.get());

  Topology topo;
  topo.mapping = &session->mapping();
  int size = world, rank = static_cast<int>(g_rank);
  std::uint32_t context = 0;
  if (mode == "world" || mode == "lines") {
    topo.whole_partition = true;
  } else if (mode == "split") {
    // Even job ranks in order; odd job ranks in reverse order.
    const bool odd = g_rank % 2;
    for (int r = 0; r < world; ++r)
      if (r % 2 == static_cast<int>(odd)) topo.world_ranks.push_back(r);
    if (odd) std::reverse(topo.world_ranks.begin(), topo.world_ranks.end());
    size = static_cast<int>(topo.world_ranks.size());
    rank = static_cast<int>(
        std::find(topo.world_ranks.begin(), topo.world_ranks.end(), static_cast<int>(g_rank)) -
        topo.world_ranks.begin());
    context = odd ? 2 : 1;
  } else {
    fail("unknown mode '" + mode + "'");
  }
  Communicator comm(executor, topo, size, rank, context);
  if (mode == "lines") {
    lines(*session, comm);
    while (!session->layer().idle())
      session->layer().advance();
    if (executor.unexpected())
      fail(std::to_string(executor.unexpected()) + " parts never received");
    return 0;
  }

  for (Collective op : ops) {
    for (const Algorithm* a : algorithms_for(op)) {
      int runs = 0;
      // Packet copies the packet layer delivered along deposit-bit lines this task injected.
      const std::uint64_t copies_before = session->layer().endpoint().counters().deposit_copies;
      for (Case c : cases(op, size)) {
        c.params.topology = topo;
        if (!a->applicable(c.params).empty()) continue;
        const Program prog = a->generate(c.params, rank);
        const auto in = input(c.params, rank);
        std::vector<std::byte> out(c.params.recv_bytes(rank), std::byte{0xEE});
        if (op == Collective::bcast && rank == c.params.root)
          for (std::uint64_t i = 0; i < out.size(); ++i)
            out[i] = pattern(static_cast<std::uint64_t>(rank), i);
        using Clock = std::chrono::steady_clock;
        auto ns = [] {
          return static_cast<std::int64_t>(
              std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
                  .count());
        };
        if (op == Collective::barrier) {
          // The last rank arrives late; afterwards every rank's exit must follow every rank's
          // entry (steady_clock is CLOCK_MONOTONIC, shared by the job's processes).
          if (rank == size - 1) std::this_thread::sleep_for(std::chrono::milliseconds(30));
          const std::int64_t enter = ns();
          comm.run(prog, c.params, {in, out});
          const std::int64_t times[2] = {enter, ns()};
          const Params g =
              Params::allgather(std::vector<std::uint64_t>(static_cast<std::size_t>(size), 16));
          std::vector<std::byte> all(16 * static_cast<std::size_t>(size));
          comm.run(find_algorithm(Collective::allgather, "ring")->generate(g, rank), g,
                   {std::as_bytes(std::span(times)), all});
          std::int64_t last_enter = 0, first_exit = INT64_MAX;
          for (int q = 0; q < size; ++q) {
            std::int64_t t[2];
            std::memcpy(t, all.data() + 16 * q, 16);
            last_enter = std::max(last_enter, t[0]);
            first_exit = std::min(first_exit, t[1]);
          }
          if (first_exit < last_enter)
            fail(std::string(a->name) + " barrier: a rank left " +
                 std::to_string((last_enter - first_exit) / 1000) +
                 " us before the last rank arrived");
          ++runs;
          continue;
        }
        comm.run(prog, c.params, {in, out});
        const auto want = expected(c.params, rank);
        if (out != want) {
          std::size_t i = 0;
          while (out[i] == want[i])
            ++i;
          fail(std::string(to_string(op)) + " " + std::string(a->name) + " " + c.label +
               " (bytes " + std::to_string(c.params.bytes()) + ", root " +
               std::to_string(c.params.root) + "): byte " + std::to_string(i) + " is " +
               std::to_string(static_cast<int>(out[i])) + ", expected " +
               std::to_string(static_cast<int>(want[i])));
        }
        ++runs;
      }
      if (runs && rank == 0)
        std::printf("coll: %s %s %s ok (%d runs)\n", mode.c_str(),
                    std::string(to_string(op)).c_str(), std::string(a->name).c_str(), runs);
      if (runs && rank == 0 && a->name == "torus3")
        std::printf("coll: %s bcast torus3 deposit-bit copies %llu\n", mode.c_str(),
                    static_cast<unsigned long long>(
                        session->layer().endpoint().counters().deposit_copies - copies_before));
    }
  }
  // Nothing may be left over: every message found its receive.
  while (!session->layer().idle())
    session->layer().advance();
  if (executor.unexpected())
    fail(std::to_string(executor.unexpected()) + " messages never received");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "coll_scenarios: rank %u: %s\n", g_rank, e.what());
    return 2;
  }
}
