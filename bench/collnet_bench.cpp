// The emulated collective network against what a message layer without one does: a binomial tree
// of point-to-point packets over the packet layer's Endpoint (collnet_p2p_tree.hpp), in the same
// run, the compared variants interleaved round by round. Allreduce (u64 sum and double sum) and
// broadcast throughput in MB/s (message bytes / time per operation, 1 MB = 10^6 B) per message
// size; barrier latency in microseconds (last arrival to last departure: min, median; and the
// period of back-to-back barriers).
//   bglrun -np 8 --shape 2x2x2 build/bin/collnet_bench [--rounds R] [--max-bytes B]
//          [--barriers N] [--json]
#include <cmath>
#include <cstdio>
#include <functional>

#include "bench_util.hpp"
#include "bgl/collective_net_emu/collective_network.hpp"
#include "collnet_p2p_tree.hpp"

namespace {

using namespace bgl;
using collective_net_emu::AluOp;

struct Options {
  bench::Args args;
  std::size_t max_bytes = 4 << 20;
  int barriers = 200;
};

Options parse(int argc, char** argv) {
  Options o{bench::Args::parse(argc, argv, 3)};
  for (std::size_t i = 0; i < o.args.rest.size(); ++i) {
    const auto& a = o.args.rest[i];
    const bool more = i + 1 < o.args.rest.size();
    if (a == "--max-bytes" && more)
      o.max_bytes =
          static_cast<std::size_t>(job_runtime::env::parse_int(o.args.rest[++i], a, 256, 1 << 28));
    else if (a == "--barriers" && more)
      o.barriers = static_cast<int>(job_runtime::env::parse_int(o.args.rest[++i], a, 1, 1000000));
    else
      throw ConfigError("collnet_bench: unknown argument '" + a + "'");
  }
  return o;
}

class Bench {
 public:
  Bench(packet_layer::Runtime& rt)
      : rt_(rt),
        net_(rt.machine().job(), rt.rank(), rt.wait_policy()),
        tree_(rt.endpoint(), static_cast<int>(rt.rank()), rt.size()) {
    if (auto s = job_runtime::env::get_int("BGL_P2P_WATCHDOG", 1, 3600))
      tree_.enable_watchdog(static_cast<int>(*s));
  }

  // Seconds per operation: from the common start (after a job barrier) to the last task's end.
  double timed(int iterations, const std::function<void()>& op) {
    rt_.barrier();
    std::uint64_t start = now(), end = 0;
    for (int i = 0; i < iterations; ++i)
      op();
    end = now();
    net_.allreduce<std::uint64_t>(AluOp::min, std::span(&start, 1), std::span(&start, 1));
    net_.allreduce<std::uint64_t>(AluOp::max, std::span(&end, 1), std::span(&end, 1));
    return static_cast<double>(end - start) * 1e-9 / iterations;
  }

  void check(bool ok, const char* what) {
    if (ok) return;
    std::fprintf(stderr, "collnet_bench: rank %u: wrong %s result\n", rt_.rank(), what);
    std::exit(1);
  }

  packet_layer::Runtime& rt_;
  collective_net_emu::CollectiveNetwork net_;
  bench::P2PTree tree_;

  static std::uint64_t now() {
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(bench::Clock::now().time_since_epoch())
            .count());
  }
};

int iterations_for(std::size_t bytes) {
  return static_cast<int>(std::clamp<std::size_t>((256u << 10) / bytes, 1, 16));
}

// One row per size: collnet and p2p MB/s, interleaved round by round.
bench::Table throughput(Bench& b, const Options& o, const std::string& title,
                        const std::function<void(std::size_t, bool)>& run) {
  bench::Table table(title, {"bytes", "collnet MB/s", "p2p tree MB/s", "speedup"});
  for (std::size_t bytes = 256; bytes <= o.max_bytes; bytes *= 4) {
    bench::Samples coll, p2p;
    const int iters = iterations_for(bytes);
    if (std::getenv("COLLNET_BENCH_TRACE"))
      std::fprintf(stderr, "rank %u: %s %zu\n", b.rt_.rank(), title.c_str(), bytes);
    for (int r = 0; r < o.args.rounds; ++r) {
      coll.add(b.timed(iters, [&] { run(bytes, true); }));
      p2p.add(b.timed(iters, [&] { run(bytes, false); }));
    }
    const double c = static_cast<double>(bytes) / coll.median() / 1e6;
    const double p = static_cast<double>(bytes) / p2p.median() / 1e6;
    table.row({static_cast<std::uint64_t>(bytes), c, p, c / p});
  }
  return table;
}

bench::Table allreduce_u64(Bench& b, const Options& o) {
  const int size = b.rt_.size();
  const auto me = static_cast<std::uint64_t>(b.rt_.rank());
  std::vector<std::uint64_t> in(o.max_bytes / 8), out(in.size());
  for (std::size_t i = 0; i < in.size(); ++i)
    in[i] = me + i;
  return throughput(b, o, "allreduce, u64 sum", [&](std::size_t bytes, bool coll) {
    const std::span<const std::uint64_t> src(in.data(), bytes / 8);
    const std::span<std::uint64_t> dst(out.data(), bytes / 8);
    if (coll)
      b.net_.allreduce<std::uint64_t>(AluOp::add, src, dst);
    else
      b.tree_.allreduce<std::uint64_t>(src, dst);
    const auto n = static_cast<std::uint64_t>(size);
    b.check(dst.back() == n * (dst.size() - 1) + n * (n - 1) / 2,
            coll ? "collnet allreduce" : "p2p allreduce");
  });
}

bench::Table allreduce_double(Bench& b, const Options& o) {
  const int size = b.rt_.size();
  std::vector<double> in(o.max_bytes / 8), out(in.size());
  for (std::size_t i = 0; i < in.size(); ++i)
    in[i] = std::ldexp(static_cast<double>(b.rt_.rank() + 1), static_cast<int>(i % 32));
  return throughput(
      b, o, "allreduce, double sum (collnet: two-phase, bit-reproducible)",
      [&](std::size_t bytes, bool coll) {
        const std::span<const double> src(in.data(), bytes / 8);
        const std::span<double> dst(out.data(), bytes / 8);
        if (coll)
          b.net_.allreduce_sum(src, dst);
        else
          b.tree_.allreduce<double>(src, dst);
        const double n = size;
        b.check(dst.back() == std::ldexp(n * (n + 1) / 2, static_cast<int>((dst.size() - 1) % 32)),
                "double allreduce");
      });
}

bench::Table broadcast(Bench& b, const Options& o) {
  std::vector<std::byte> buf(o.max_bytes);
  return throughput(b, o, "broadcast from rank 0", [&](std::size_t bytes, bool coll) {
    const std::span<std::byte> data(buf.data(), bytes);
    const auto stamp = static_cast<std::byte>(bytes / 256);
    if (b.rt_.rank() == 0) data.back() = stamp;
    if (coll)
      b.net_.broadcast(0, data);
    else
      b.tree_.broadcast(data);
    b.check(data.back() == stamp, "broadcast");
    if (b.rt_.rank() != 0) data.back() = std::byte{0};
  });
}

// Barrier latency as the hardware quotes it: from the last task's arrival to the last task's
// departure (one clock for all processes), and the period of back-to-back barriers.
bench::Table barriers(Bench& b, const Options& o) {
  bench::Samples latency[2], period[2];
  const auto n = static_cast<std::size_t>(o.barriers);
  std::vector<std::uint64_t> arrive(n), leave(n);
  for (int r = 0; r < o.args.rounds; ++r) {
    for (const int v : {0, 1}) {
      b.rt_.barrier();
      for (std::size_t i = 0; i < n; ++i) {
        arrive[i] = Bench::now();
        if (v == 0)
          b.net_.barrier();
        else
          b.tree_.barrier();
        leave[i] = Bench::now();
      }
      period[v].add(static_cast<double>(leave[n - 1] - arrive[0]) / 1e3 / static_cast<double>(n));
      b.net_.allreduce<std::uint64_t>(AluOp::max, arrive, arrive);
      b.net_.allreduce<std::uint64_t>(AluOp::max, leave, leave);
      for (std::size_t i = 0; i < n; ++i)
        latency[v].add(static_cast<double>(leave[i] - arrive[i]) / 1e3);
    }
  }
  bench::Table table("barrier: last arrival to last departure (us), and back-to-back period",
                     {"variant", "min", "median", "period"});
  table.row({"global interrupt", latency[0].min(), latency[0].median(), period[0].median()});
  table.row({"p2p dissemination", latency[1].min(), latency[1].median(), period[1].median()});
  return table;
}

int run(int argc, char** argv) {
  auto rt = packet_layer::Runtime::from_environment();
  const Options o = parse(argc, argv);
  Bench b(rt);
  std::vector<bench::Table> tables;
  tables.push_back(allreduce_u64(b, o));
  tables.push_back(broadcast(b, o));
  tables.push_back(allreduce_double(b, o));
  tables.push_back(barriers(b, o));
  if (rt.rank() != 0) return 0;
  const auto& c = rt.machine().config();
  if (o.args.json) {
    nlohmann::json j{{"benchmark", "collnet_bench"},
                     {"tasks", c.ntasks()},
                     {"shape", c.shape.to_string()},
                     {"mode", std::string(job_runtime::to_string(c.mode))},
                     {"rounds", o.args.rounds}};
    for (const auto& t : tables)
      j["tables"].push_back(t.to_json());
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("collnet_bench: %s, %d rounds (median)\n", c.summary().c_str(), o.args.rounds);
    for (const auto& t : tables)
      t.print();
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return bgl::bench::run_main("collnet_bench", run, argc, argv);
}
