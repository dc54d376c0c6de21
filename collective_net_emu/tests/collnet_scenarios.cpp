// Task program for the collective network's multi-process tests. Usage under bglrun:
//   collnet_scenarios ops SEED DELAY_US    every ALU operation and lane width, several sizes,
//   random
//                                          inputs, random per-task delays < DELAY_US; checked
//                                          against a sequential reference; reduce to a root
//   collnet_scenarios stream SEED          packet-level streaming with random per-packet delays
//   collnet_scenarios fp DATA DELAY N      sum of N doubles (inputs from DATA, delays from DELAY):
//                                          correctly rounded (inputs span < 40 binades), identical
//                                          on all tasks; prints a hash that must not depend on
//                                          DELAY
//   collnet_scenarios special              NaN / infinity / overflow statuses
//   collnet_scenarios long MIB             MIB-MiB integer and FP allreduce, broadcasts from 3
//   roots collnet_scenarios bcast SEED           broadcasts of several sizes from several roots
//   collnet_scenarios barrier N DELAY_US   N global-interrupt barriers: nobody leaves early
//   collnet_scenarios wires                OR / AND wires
//   collnet_scenarios p2p N                every task sends N packets to the tree root, which
//   answers collnet_scenarios classes              both combining classes interleaved
//   collnet_scenarios endless              print the pid, then allreduce and barrier forever (a
//                                          test kills a host meanwhile)
#include <time.h>
#include <unistd.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "bgl/collective_net_emu/collective_network.hpp"
#include "bgl/packet_layer/runtime.hpp"
#include "bgl/torus_emu/error.hpp"
#include "exact_sum.hpp"
#include "rank_check.hpp"

namespace {

using namespace bgl;
using namespace bgl::collective_net_emu;

std::uint64_t mix(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

struct Context {
  packet_layer::Runtime& rt;
  CollectiveNetwork net;
  int me, size;
  std::uint64_t delay_state;
  int max_delay_us;

  Context(packet_layer::Runtime& r, std::uint64_t delay_seed, int delay_us)
      : rt(r),
        net(r.machine().job(), r.rank(), r.wait_policy()),
        me(static_cast<int>(r.rank())),
        size(r.size()),
        delay_state(mix(delay_seed * 1000003 + r.rank())),
        max_delay_us(delay_us) {}
  void delay() {
    delay_state = mix(delay_state);
    if (max_delay_us > 0)
      usleep(static_cast<useconds_t>(delay_state % static_cast<std::uint64_t>(max_delay_us)));
  }
};

std::vector<std::byte> input_bytes(std::uint64_t seed, int rank, std::size_t op, std::size_t n) {
  std::vector<std::byte> v(n);
  for (std::size_t i = 0; i < n; i += 8) {
    const std::uint64_t w = mix(seed ^ (std::uint64_t(rank) << 40) ^ (op << 24) ^ i);
    std::memcpy(v.data() + i, &w, std::min<std::size_t>(8, n - i));
  }
  return v;
}

// The sequential reference: fold the tasks' inputs in rank order, lane by lane.
template <class T>
void fold_lanes(AluOp alu, std::vector<std::byte>& acc, const std::vector<std::byte>& in) {
  using U = std::make_unsigned_t<T>;
  for (std::size_t off = 0; off + sizeof(T) <= acc.size(); off += sizeof(T)) {
    T a, b;
    std::memcpy(&a, acc.data() + off, sizeof a);
    std::memcpy(&b, in.data() + off, sizeof b);
    T r = alu == AluOp::add       ? static_cast<T>(static_cast<U>(a) + static_cast<U>(b))
          : alu == AluOp::max     ? std::max(a, b)
          : alu == AluOp::min     ? std::min(a, b)
          : alu == AluOp::bit_and ? T(a & b)
          : alu == AluOp::bit_or  ? T(a | b)
                                  : T(a ^ b);
    std::memcpy(acc.data() + off, &r, sizeof r);
  }
}

void fold_wide(std::vector<std::byte>& acc, const std::vector<std::byte>& in, std::size_t lane) {
  // A partial last lane holds the low bytes: its sum is the full sum modulo its width.
  for (std::size_t l = 0; l < acc.size(); l += lane) {
    unsigned carry = 0;
    for (std::size_t i = l; i < std::min(l + lane, acc.size()); ++i) {
      const unsigned s =
          std::to_integer<unsigned>(acc[i]) + std::to_integer<unsigned>(in[i]) + carry;
      acc[i] = static_cast<std::byte>(s);
      carry = s >> 8;
    }
  }
}

std::vector<std::byte> reference(Op op, std::uint64_t seed, std::size_t index, std::size_t n,
                                 int size) {
  auto acc = input_bytes(seed, 0, index, n);
  for (int r = 1; r < size; ++r) {
    const auto in = input_bytes(seed, r, index, n);
    switch (op.lane) {
      case Lane::i32:
        fold_lanes<std::int32_t>(op.alu, acc, in);
        break;
      case Lane::u32:
        fold_lanes<std::uint32_t>(op.alu, acc, in);
        break;
      case Lane::i64:
        fold_lanes<std::int64_t>(op.alu, acc, in);
        break;
      case Lane::u64:
        fold_lanes<std::uint64_t>(op.alu, acc, in);
        break;
      default:
        fold_wide(acc, in, lane_bytes(op.lane));
        break;
    }
  }
  return acc;
}

std::vector<Op> all_ops() {
  std::vector<Op> ops;
  for (int a = 0; a <= static_cast<int>(AluOp::bit_xor); ++a)
    for (const Lane l : {Lane::i32, Lane::u32, Lane::i64, Lane::u64})
      ops.push_back({static_cast<AluOp>(a), l});
  for (const Lane l : {Lane::w128, Lane::w192, Lane::w256})
    ops.push_back({AluOp::add, l});
  return ops;
}

int ops(Context& c, std::uint64_t seed) {
  const auto list = all_ops();
  // One packet or less, several, and sizes that end in a partial packet or lane.
  const std::size_t sizes[] = {96, 240, 960, 4 * 240 + 96 * 3};
  std::size_t index = 0, checked = 0;
  for (const Op op : list) {
    for (const std::size_t n : sizes) {
      ++index;
      c.delay();
      const auto in = input_bytes(seed, c.me, index, n);
      std::vector<std::byte> out(n);
      BGL_CHECK(c.net.allreduce(op, in, out) == Status::ok, c.me);
      if (out != reference(op, seed, index, n, c.size))
        std::fprintf(stderr, "rank %d: %s of %zu bytes differs from the reference\n", c.me,
                     to_string(op).c_str(), n);
      BGL_CHECK(out == reference(op, seed, index, n, c.size), c.me);
      ++checked;
    }
  }
  // Reduce to a root (the others discard), roots spread over the job.
  for (int k = 0; k < 3; ++k) {
    const auto root = static_cast<torus_emu::Rank>((k * 7) % c.size);
    const Op op{AluOp::add, Lane::i64};
    ++index;
    c.delay();
    const auto in = input_bytes(seed, c.me, index, 2000);
    std::vector<std::byte> out(c.me == static_cast<int>(root) ? 2000 : 0);
    BGL_CHECK(c.net.reduce(root, op, in, out) == Status::ok, c.me);
    if (c.me == static_cast<int>(root))
      BGL_CHECK(out == reference(op, seed, index, 2000, c.size), c.me);
    ++checked;
  }
  if (c.me == 0) std::printf("ops: %zu reductions on %d tasks: ok\n", checked, c.size);
  return 0;
}

int stream(Context& c, std::uint64_t seed) {
  auto& tree = c.net.tree();
  constexpr std::size_t kPackets = 600;
  const Op op{AluOp::add, Lane::u64};
  std::size_t injected = 0, received = 0;
  const Seq base = c.net.next_seq();
  std::uint64_t state = mix(seed + static_cast<std::uint64_t>(c.me));
  while (received < kPackets) {
    state = mix(state);
    if (state % 16 == 0) usleep(static_cast<useconds_t>(state % 300));
    if (injected < kPackets) {
      std::uint64_t words[32];
      for (int i = 0; i < 32; ++i)
        words[i] =
            (static_cast<std::uint64_t>(c.me) + 1) * (injected * 32 + static_cast<std::size_t>(i));
      if (tree.inject(RouteClass::combine0, base + injected, op, std::as_bytes(std::span(words))) ==
          InjectStatus::ok) {
        ++injected;
        continue;
      }
    }
    std::uint64_t words[32];
    if (!tree.receive(RouteClass::combine0, base + received,
                      std::as_writable_bytes(std::span(words)))) {
      tree.wait_result(RouteClass::combine0, base + received);
      continue;
    }
    const std::uint64_t ranks =
        static_cast<std::uint64_t>(c.size) * (static_cast<std::uint64_t>(c.size) + 1) / 2;
    for (int i = 0; i < 32; ++i)
      BGL_CHECK(words[i] == ranks * (received * 32 + static_cast<std::size_t>(i)), c.me);
    ++received;
    BGL_CHECK(injected <= received + tree.ring(), c.me);
  }
  if (c.me == 0)
    std::printf("stream: %zu packets, ring %u, %llu window-full answers at rank 0: ok\n", kPackets,
                tree.ring(), static_cast<unsigned long long>(tree.counters().window_full));
  return 0;
}

// Checks that every task holds the same 64-bit value, with the network itself.
bool same_everywhere(Context& c, std::uint64_t value) {
  std::uint64_t lo = value, hi = value;
  c.net.allreduce<std::uint64_t>(AluOp::min, std::span(&lo, 1), std::span(&lo, 1));
  c.net.allreduce<std::uint64_t>(AluOp::max, std::span(&hi, 1), std::span(&hi, 1));
  return lo == value && hi == value;
}

std::uint64_t hash_of(std::span<const double> v) {
  std::uint64_t h = 0;
  for (const double x : v)
    h = mix(h ^ std::bit_cast<std::uint64_t>(x));
  return h;
}

double fp_input(std::uint64_t seed, int rank, std::size_t i, int span) {
  const std::uint64_t r = mix(seed ^ (std::uint64_t(rank) << 40) ^ i);
  const double m = 1.0 + static_cast<double>(r >> 11) * 0x1.0p-53;
  const double v =
      std::ldexp(m, static_cast<int>((r >> 3) % static_cast<std::uint64_t>(span)) - span / 2);
  return (r & 1) ? -v : v;
}

int fp(Context& c, std::uint64_t data_seed, std::size_t n) {
  std::vector<double> in(n), out(n);
  for (std::size_t i = 0; i < n; ++i)
    in[i] = fp_input(data_seed, c.me, i, 39);
  c.delay();
  BGL_CHECK(c.net.allreduce_sum(in, out) == Status::ok, c.me);
  for (std::size_t i = 0; i < n; ++i) {
    collective_net_emu::test::ExactSum s;
    for (int r = 0; r < c.size; ++r)
      s.add(fp_input(data_seed, r, i, 39));
    BGL_CHECK(std::bit_cast<std::uint64_t>(out[i]) == std::bit_cast<std::uint64_t>(s.to_double()),
              c.me);
  }
  // Inputs over 1200 binades: rounded to the grid, still identical everywhere and in every run.
  std::vector<double> wide(n), wide_out(n);
  for (std::size_t i = 0; i < n; ++i)
    wide[i] = fp_input(data_seed + 1, c.me, i, 1200);
  c.delay();
  BGL_CHECK(c.net.allreduce_sum(wide, wide_out) == Status::ok, c.me);
  std::vector<double> mx(n), mn(n);
  BGL_CHECK(c.net.allreduce_max(wide, mx) == Status::ok, c.me);
  BGL_CHECK(c.net.allreduce_min(wide, mn) == Status::ok, c.me);
  const std::uint64_t h =
      hash_of(out) ^ mix(hash_of(wide_out)) ^ mix(mix(hash_of(mx) + hash_of(mn)));
  BGL_CHECK(same_everywhere(c, h), c.me);
  if (c.me == 0)
    std::printf("fp: %zu doubles on %d tasks, hash %016llx\n", n, c.size,
                static_cast<unsigned long long>(h));
  return 0;
}

int special(Context& c) {
  constexpr double inf = std::numeric_limits<double>::infinity();
  constexpr double big = std::numeric_limits<double>::max();
  const int last = c.size - 1;
  // 0: finite, 1: a NaN, 2: +inf and -inf (NaN), 3: -inf, 4: overflow, 5: finite.
  std::vector<double> v{1.0, 1.0, 1.0, 1.0, big, 2.0};
  if (c.me == last) v[1] = std::nan("");
  if (c.me == 0) v[2] = inf;
  if (c.me == last && c.size > 1) v[2] = -inf;
  if (c.me == 0) v[3] = -inf;
  std::vector<double> out(v.size());
  BGL_CHECK(c.net.allreduce_sum(v, out) == Status::not_finite, c.me);
  BGL_CHECK(out[0] == c.size && std::isnan(out[1]) && out[5] == 2.0 * c.size && out[3] == -inf,
            c.me);
  BGL_CHECK(c.size == 1 ? out[2] == inf : std::isnan(out[2]), c.me);
  BGL_CHECK(c.size == 1 || out[4] == inf, c.me);  // NaN elsewhere dominates the status
  std::vector<double> o{big, -big, 1.0};
  out.resize(o.size());
  BGL_CHECK(c.net.allreduce_sum(o, out) == (c.size == 1 ? Status::ok : Status::overflow), c.me);
  if (c.size > 1) BGL_CHECK(out[0] == inf && out[1] == -inf && out[2] == c.size, c.me);
  std::vector<double> m{1.0, static_cast<double>(c.me)};
  if (c.me == last) m[0] = std::nan("");
  out.resize(m.size());
  BGL_CHECK(c.net.allreduce_max(m, out) == Status::not_finite, c.me);
  BGL_CHECK(std::isnan(out[0]) && out[1] == last, c.me);
  if (c.me == 0)
    std::printf("special: NaN, infinities and overflow reported on %d tasks\n", c.size);
  return 0;
}

int long_messages(Context& c, std::size_t mib) {
  const std::size_t words = mib << 17;
  std::vector<std::uint64_t> in(words), out(words);
  const auto factor = static_cast<std::uint64_t>(c.me) + 1;
  for (std::size_t i = 0; i < words; ++i)
    in[i] = factor * mix(i);
  BGL_CHECK(c.net.allreduce<std::uint64_t>(AluOp::add, in, out) == Status::ok, c.me);
  const std::uint64_t ranks =
      static_cast<std::uint64_t>(c.size) * (static_cast<std::uint64_t>(c.size) + 1) / 2;
  for (std::size_t i = 0; i < words; ++i)
    BGL_CHECK(out[i] == ranks * mix(i), c.me);
  // Doubles with 20-bit significands: the exact sum is representable.
  std::vector<double> d(words), dout(words);
  for (std::size_t i = 0; i < words; ++i)
    d[i] = static_cast<double>(factor) *
           std::ldexp(static_cast<double>(mix(i) >> 44), static_cast<int>(i % 64) - 32);
  BGL_CHECK(c.net.allreduce_sum(d, dout) == Status::ok, c.me);
  for (std::size_t i = 0; i < words; ++i)
    BGL_CHECK(dout[i] == static_cast<double>(ranks) * std::ldexp(static_cast<double>(mix(i) >> 44),
                                                                 static_cast<int>(i % 64) - 32),
              c.me);
  for (const int root : {0, c.size - 1, c.size / 2}) {
    std::vector<std::uint64_t> b(words, 0);
    if (c.me == root)
      for (std::size_t i = 0; i < words; ++i)
        b[i] = mix(i ^ static_cast<std::uint64_t>(root));
    c.net.broadcast(static_cast<torus_emu::Rank>(root), std::as_writable_bytes(std::span(b)));
    for (std::size_t i = 0; i < words; ++i)
      BGL_CHECK(b[i] == mix(i ^ static_cast<std::uint64_t>(root)), c.me);
  }
  if (c.me == 0)
    std::printf("long: %zu MiB allreduce (u64, double) and broadcasts on %d tasks: ok\n", mib,
                c.size);
  return 0;
}

int bcast(Context& c, std::uint64_t seed) {
  int count = 0;
  for (const std::size_t n : {1ul, 255ul, 256ul, 257ul, 5000ul, 70000ul}) {
    for (int root : {0, c.size - 1, c.size / 2, c.size / 3}) {
      c.delay();
      std::vector<std::byte> b(n, std::byte{0});
      if (c.me == root) b = input_bytes(seed, root, n, n);
      c.net.broadcast(static_cast<torus_emu::Rank>(root), b);
      BGL_CHECK(b == input_bytes(seed, root, n, n), c.me);
      ++count;
    }
  }
  if (c.me == 0) std::printf("bcast: %d broadcasts on %d tasks: ok\n", count, c.size);
  return 0;
}

std::uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);  // one clock for every process of the machine
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

int barrier(Context& c, std::size_t rounds) {
  std::vector<std::uint64_t> arrive(rounds), leave(rounds);
  auto& gi = c.net.interrupt();
  gi.barrier();  // everybody has started
  const auto start = now_ns();
  for (std::size_t k = 0; k < rounds; ++k) {
    if (k % 8 == 0) c.delay();
    arrive[k] = now_ns();
    gi.barrier();
    leave[k] = now_ns();
  }
  const auto took = now_ns() - start;
  // Nobody may leave barrier k before the last task arrived at it.
  BGL_CHECK(c.net.allreduce<std::uint64_t>(AluOp::max, arrive, arrive) == Status::ok, c.me);
  BGL_CHECK(c.net.allreduce<std::uint64_t>(AluOp::min, leave, leave) == Status::ok, c.me);
  for (std::size_t k = 0; k < rounds; ++k)
    BGL_CHECK(arrive[k] <= leave[k], c.me);
  if (c.me == 0)
    std::printf("barrier: %zu barriers on %d tasks, %.1f us each, %llu sleeps at rank 0: ok\n",
                rounds, c.size, static_cast<double>(took) / 1e3 / static_cast<double>(rounds),
                static_cast<unsigned long long>(gi.sleeps()));
  return 0;
}

int wires(Context& c) {
  auto& gi = c.net.interrupt();
  for (int round = 0; round < 20; ++round) {
    gi.barrier();
    BGL_CHECK(!gi.wire_any(1), c.me);
    gi.barrier();  // everybody looked before anybody raises
    if (c.me == round % c.size) gi.set_wire(1, true);
    gi.wait_wire(1, WireLevel::any_raised);  // one task's input makes the OR rise everywhere
    gi.set_wire(2, true);
    gi.wait_wire(2, WireLevel::all_raised);
    gi.barrier();
    gi.set_wire(1, false);
    gi.set_wire(2, false);
    gi.wait_wire(2, WireLevel::none_raised);
  }
  if (c.me == 0) std::printf("wires: OR and AND on %d tasks: ok\n", c.size);
  return 0;
}

int p2p(Context& c, std::uint32_t n) {
  auto& tree = c.net.tree();
  const torus_emu::Rank root = tree.root_rank();
  if (c.rt.rank() == root) {
    std::vector<std::uint32_t> next(static_cast<std::size_t>(c.size), 0);
    for (std::uint64_t got = 0; got < std::uint64_t{n} * static_cast<std::uint64_t>(c.size - 1);
         ++got) {
      while (!tree.peek_inbox())
        tree.wait_inbox();
      const Incoming in = *tree.peek_inbox();
      BGL_CHECK(in.tag == next[in.source]++ && in.data.size() == 256, c.me);
      BGL_CHECK(in.data[0] == static_cast<std::byte>(in.source) &&
                    in.data[255] == static_cast<std::byte>(in.tag),
                c.me);
      const torus_emu::Rank to = in.source;
      const std::uint32_t tag = in.tag;
      tree.pop_inbox();
      if (tag % 10 == 9) {
        while (tree.send(to, tag, {}) == InjectStatus::full)
          tree.wait_send_space(to);
      }
    }
  } else {
    std::array<std::byte, 256> packet{};
    packet[0] = static_cast<std::byte>(c.me);
    for (std::uint32_t i = 0; i < n; ++i) {
      packet[255] = static_cast<std::byte>(i);
      while (tree.send(root, i, packet) == InjectStatus::full)
        tree.wait_send_space(root);
      if (i % 10 == 9) {
        while (!tree.peek_inbox())
          tree.wait_inbox();
        BGL_CHECK(tree.peek_inbox()->tag == i, c.me);
        tree.pop_inbox();
      }
    }
  }
  c.net.barrier();
  if (c.me == 0)
    std::printf("p2p: %u packets from each of %d tasks to the root: ok\n", n, c.size - 1);
  return 0;
}

int classes(Context& c) {
  CollectiveNetwork other(c.rt.machine().job(), c.rt.rank(), c.rt.wait_policy(),
                          RouteClass::combine1);
  std::vector<std::uint32_t> a(5000, static_cast<std::uint32_t>(c.me)), b(5000, 1), ra(5000),
      rb(5000);
  for (int round = 0; round < 10; ++round) {
    BGL_CHECK(c.net.allreduce<std::uint32_t>(AluOp::max, a, ra) == Status::ok, c.me);
    BGL_CHECK(other.allreduce<std::uint32_t>(AluOp::add, b, rb) == Status::ok, c.me);
    for (std::size_t i = 0; i < ra.size(); ++i)
      BGL_CHECK(ra[i] == static_cast<std::uint32_t>(c.size - 1) &&
                    rb[i] == static_cast<std::uint32_t>(c.size),
                c.me);
  }
  if (c.me == 0) std::printf("classes: two route classes on %d tasks: ok\n", c.size);
  return 0;
}

[[noreturn]] void endless(Context& c) {
  std::printf("pid %d %d\n", c.me, static_cast<int>(getpid()));
  std::fflush(stdout);
  std::vector<std::uint64_t> in(4096, static_cast<std::uint64_t>(c.me)), out(in.size());
  for (;;) {
    c.net.allreduce<std::uint64_t>(AluOp::add, in, out);
    c.net.barrier();
  }
}

int run(int argc, char** argv) {
  if (argc < 2)
    throw ConfigError(
        "usage: collnet_scenarios "
        "ops|stream|fp|special|long|bcast|barrier|wires|p2p|classes|endless ...");
  auto rt = packet_layer::Runtime::from_environment();
  const std::string_view what = argv[1];
  const auto arg = [&](int i, std::uint64_t fallback) {
    return argc > i ? static_cast<std::uint64_t>(std::stoull(argv[i])) : fallback;
  };
  if (what == "ops") {
    Context c(rt, arg(2, 1) + 7, static_cast<int>(arg(3, 300)));
    return ops(c, arg(2, 1));
  }
  if (what == "fp") {
    Context c(rt, arg(3, 1), 2000);
    return fp(c, arg(2, 1), arg(4, 1000));
  }
  if (what == "barrier") {
    Context c(rt, 5, static_cast<int>(arg(3, 100)));
    return barrier(c, arg(2, 1000));
  }
  Context c(rt, arg(2, 1), 300);
  if (what == "stream") return stream(c, arg(2, 1));
  if (what == "special") return special(c);
  if (what == "long") return long_messages(c, arg(2, 1));
  if (what == "bcast") return bcast(c, arg(2, 1));
  if (what == "wires") return wires(c);
  if (what == "p2p") return p2p(c, static_cast<std::uint32_t>(arg(2, 100)));
  if (what == "classes") return classes(c);
  if (what == "endless") endless(c);
  throw ConfigError("unknown scenario '" + std::string(what) + "'");
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "collnet_scenarios: %s\n", e.what());
    return 2;
  }
}
