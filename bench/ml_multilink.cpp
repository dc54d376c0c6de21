// Multi-link bandwidth in coprocessor mode, with and without the coprocessor receiving rendezvous
// data (BG/L's coprocessor mode: with the coprocessor helping, a node keeps more than 3 links
// busy, without it about 2). The task at the centre of a 3x3x3 torus exchanges large rendezvous
// messages with k = 1..6 of its neighbours at once (both directions); aggregate MB/s = bytes sent
// plus received by the centre per second.
//
// Two receive-buffer variants, interleaved within each round (their order alternates by round):
//   aligned  receive buffers on a 32-byte boundary: the communication unit (the coprocessor) writes
//            the rendezvous data when BGL_ML_COPROCESSOR_RECEIVE=1 (the default);
//   offset8  receive buffers 8 bytes past a 32-byte boundary: not eligible, the main task writes.
// With BGL_ML_COPROCESSOR_RECEIVE=0 both variants are main-task receives: a control that shows what
// the 8-byte offset itself costs. bench/ml_multilink.sh runs both settings, alternating
// invocations, and merges the samples.
//
// Besides MB/s the centre reports how many of its received messages the coprocessor took (its
// coprocessor_messages counter) and its main thread's CPU time per wall time.
//
//   bglrun -np 27 --shape 3x3x3 --mode coprocessor build/bin/ml_multilink
//          [--rounds R] [--size BYTES] [--count N] [--window W] [--links K] [--json]
// --links K measures only k = K (default: every k from 1 to the number of neighbours).
#include <time.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <memory>
#include <new>
#include <optional>
#include <set>

#include "bench_util.hpp"
#include "bgl/message_layer/session.hpp"

namespace {

using namespace bgl;
using message_layer::Rank;

constexpr message_layer::HandlerId kData = 1;

double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

struct AlignedDelete {
  void operator()(std::byte* p) const { ::operator delete[](p, std::align_val_t{64}); }
};
using Storage = std::unique_ptr<std::byte[], AlignedDelete>;
Storage make_storage(std::size_t bytes) {
  Storage s(new (std::align_val_t{64}) std::byte[bytes]);
  std::memset(s.get(), 1, bytes);  // touch every page before measuring
  return s;
}

class Exchanger {
 public:
  Exchanger(message_layer::Session& s, std::size_t bytes, int size)
      : ml_(s.layer()), bytes_(bytes), send_(make_storage(bytes)), slot_of_(size, -1) {
    ml_.register_handler(kData, &Exchanger::on_data, this);
  }

  // Exchanges `count` messages with every peer (at most `window` outstanding per peer), receiving
  // into buffers `offset` bytes past a 32-byte boundary. Returns when everything is done.
  void run(const std::vector<Rank>& peers, std::size_t offset, std::uint64_t count,
           std::uint32_t window) {
    offset_ = offset;
    received_ = 0;
    for (std::size_t i = 0; i < peers.size(); ++i) {
      slot_of_[peers[i]] = static_cast<int>(i);
      if (recv_.size() <= i) recv_.push_back(make_storage(bytes_ + 64));
    }
    flows_.assign(peers.size(), Flow{});
    slots_.clear();
    for (std::size_t f = 0; f < peers.size(); ++f) {
      flows_[f].peer = peers[f];
      for (std::uint32_t w = 0; w < window && flows_[f].posted < count; ++w) {
        Slot& s = slots_.emplace_back();
        s.self = this;
        s.flow = f;
        s.m.dest = peers[f];
        s.m.handler = kData;
        s.m.data.buffer = {send_.get(), bytes_};
        s.m.protocol = message_layer::Protocol::rendezvous;
        s.m.context = &s;
        s.m.done = &Exchanger::on_sent;
        ++flows_[f].posted;
        ml_.post(s.m);
      }
    }
    count_ = count;
    const std::uint64_t expected = count * peers.size();
    const auto finished = [&] {
      if (received_ < expected) return false;
      for (const Flow& f : flows_)
        if (f.sent < count) return false;
      return true;
    };
    while (!finished())
      if (!ml_.advance()) ml_.wait();
  }

  void quiesce() {
    while (!ml_.idle())
      if (!ml_.advance()) ml_.wait();
  }

  message_layer::MessageLayer& layer() { return ml_; }

 private:
  struct Flow {
    Rank peer = 0;
    std::uint64_t posted = 0, sent = 0;
  };
  struct Slot {
    message_layer::SendMessage m;
    Exchanger* self = nullptr;
    std::size_t flow = 0;
  };

  static void on_sent(message_layer::SendMessage& m) {
    auto& s = *static_cast<Slot*>(m.context);
    Exchanger& self = *s.self;
    Flow& f = self.flows_[s.flow];
    ++f.sent;
    if (f.posted < self.count_) {
      ++f.posted;
      self.ml_.post(m);
    }
  }
  static message_layer::RecvTarget on_data(void* ctx, const message_layer::Arrival& a) {
    auto& self = *static_cast<Exchanger*>(ctx);
    const int slot = self.slot_of_.at(a.source);
    if (slot < 0 || a.bytes > self.bytes_) throw std::logic_error("unexpected message");
    // Every message from one peer lands in that peer's buffer (the data are not looked at).
    return message_layer::RecvTarget::into(
        {self.recv_[static_cast<std::size_t>(slot)].get() + self.offset_, a.bytes},
        &Exchanger::on_received, ctx);
  }
  static void on_received(void* ctx, std::uint32_t, std::size_t) {
    ++static_cast<Exchanger*>(ctx)->received_;
  }

  message_layer::MessageLayer& ml_;
  std::size_t bytes_;
  Storage send_;
  std::vector<Storage> recv_;
  std::vector<int> slot_of_;
  std::vector<Flow> flows_;
  std::deque<Slot> slots_;
  std::size_t offset_ = 0;
  std::uint64_t count_ = 0;
  std::uint64_t received_ = 0;
};

struct Variant {
  const char* name;
  std::size_t offset;
};
constexpr Variant kVariants[] = {{"aligned", 0}, {"offset8", 8}};

int run(int argc, char** argv) {
  const auto args = bench::Args::parse(argc, argv, 3);
  const auto bytes = static_cast<std::size_t>(args.number("--size", 1 << 20, 1, 1LL << 30));
  const auto count = static_cast<std::uint64_t>(args.number("--count", 8, 1, 1 << 20));
  const auto window = static_cast<std::uint32_t>(args.number("--window", 4, 1, 1024));
  const auto only_links = static_cast<std::size_t>(args.number("--links", 0, 0, 6));

  auto session = message_layer::Session::from_launcher();
  const auto& mapping = session->mapping();
  const auto& shape = mapping.shape();
  const Rank me = session->rank();
  const torus_emu::Coord middle{shape.extent(torus_emu::Dim::x) / 2,
                                shape.extent(torus_emu::Dim::y) / 2,
                                shape.extent(torus_emu::Dim::z) / 2};
  const auto centre_at = mapping.rank_at(shape.node_id(middle), 0);
  if (!centre_at) throw ConfigError("no task at the middle of the partition");
  const Rank centre = *centre_at;
  std::vector<Rank> neighbours;
  std::set<Rank> seen;
  for (int d = 0; d < torus_emu::kDirections; ++d) {
    const auto n = shape.neighbour(shape.node_id(middle), static_cast<torus_emu::Direction>(d));
    if (!n) continue;
    const auto r = mapping.rank_at(*n, 0);
    if (r && *r != centre && seen.insert(*r).second) neighbours.push_back(*r);
  }
  if (neighbours.empty()) throw ConfigError("the centre has no neighbour (use --shape 3x3x3)");
  const bool unit = session->layer().config().coprocessor_receive;
  const bool co_mode = session->mode() == job_runtime::NodeMode::coprocessor;

  Exchanger ex(*session, bytes, session->size());
  auto& rt = session->runtime();
  // BG/L time with bglrun --virtual-time (the centre's clock), the host's otherwise.
  const bench::TimeSource time(&rt.endpoint());
  const std::size_t links = neighbours.size();
  // [variant][k-1]
  std::vector<std::vector<bench::Samples>> mbps(2, std::vector<bench::Samples>(links));
  std::vector<std::vector<bench::Samples>> cpu(2, std::vector<bench::Samples>(links));
  std::vector<std::vector<bench::Samples>> on_co(2, std::vector<bench::Samples>(links));

  const auto measure = [&](std::size_t k, const Variant& v) -> std::optional<double> {
    std::vector<Rank> peers;
    const bool centre_task = me == centre;
    if (centre_task) {
      peers.assign(neighbours.begin(), neighbours.begin() + static_cast<long>(k));
    } else {
      const auto it = std::find(neighbours.begin(), neighbours.begin() + static_cast<long>(k), me);
      if (it != neighbours.begin() + static_cast<long>(k)) peers = {centre};
    }
    rt.barrier();
    const auto co_before = ex.layer().statistics().coprocessor_messages;
    const double cpu_before = thread_cpu_seconds();
    const double start = time.seconds();
    if (!peers.empty()) ex.run(peers, v.offset, count, window);
    const double seconds = time.seconds() - start;
    const double cpu_seconds = thread_cpu_seconds() - cpu_before;
    if (!peers.empty()) ex.quiesce();
    rt.barrier();
    if (!centre_task) return std::nullopt;
    const auto vi = static_cast<std::size_t>(&v - kVariants);
    mbps[vi][k - 1].add(2.0 * static_cast<double>(k * count * bytes) / seconds / 1e6);
    cpu[vi][k - 1].add(cpu_seconds / seconds);
    on_co[vi][k - 1].add(
        static_cast<double>(ex.layer().statistics().coprocessor_messages - co_before) /
        static_cast<double>(k * count));
    return seconds;
  };

  measure(1, kVariants[0]);  // warm up (first touch of buffers, page faults)
  for (auto& per_variant : mbps)
    for (auto& s : per_variant)
      s.values.clear();
  for (auto& per_variant : cpu)
    for (auto& s : per_variant)
      s.values.clear();
  for (auto& per_variant : on_co)
    for (auto& s : per_variant)
      s.values.clear();
  for (int round = 0; round < args.rounds; ++round)
    for (std::size_t k = 1; k <= links; ++k)
      for (int i = 0; i < 2; ++i)
        if (only_links == 0 || k == only_links) measure(k, kVariants[(i + round) % 2]);

  if (me != centre) return 0;
  const std::string setting =
      std::string(job_runtime::to_string(session->mode())) +
      (co_mode ? (unit ? ", BGL_ML_COPROCESSOR_RECEIVE=1" : ", BGL_ML_COPROCESSOR_RECEIVE=0") : "");
  bench::Table t("aggregate bandwidth (" + std::string(time.name()) + ") at the centre task " +
                     torus_emu::to_string(middle) + " of " + shape.to_string() + " (" + setting +
                     "), " + std::to_string(bytes) + "-byte rendezvous messages, " +
                     std::to_string(count) + " per link and direction, window " +
                     std::to_string(window) + ", " + std::to_string(args.rounds) +
                     " rounds; MB/s = 1e6 B/s sent + received; main_cpu = centre main thread CPU "
                     "time / wall time; on_coprocessor = share of the centre's received messages "
                     "the coprocessor took",
                 {"variant", "links", "MBps_min", "MBps_median", "MBps_max", "main_cpu_median",
                  "on_coprocessor"});
  nlohmann::json samples = nlohmann::json::object();
  for (std::size_t vi = 0; vi < 2; ++vi) {
    for (std::size_t k = 1; k <= links; ++k) {
      const auto& s = mbps[vi][k - 1];
      if (s.values.empty()) continue;  // not measured (--links)
      t.row({kVariants[vi].name, k, s.min(), s.median(), s.max(), cpu[vi][k - 1].median(),
             on_co[vi][k - 1].median()});
      samples[kVariants[vi].name][std::to_string(k)] = {
          {"MBps", s.values},
          {"main_cpu", cpu[vi][k - 1].values},
          {"on_coprocessor", on_co[vi][k - 1].values}};
    }
  }
  if (args.json) {
    nlohmann::json out{{"benchmark", "ml_multilink"},
                       {"mode", std::string(job_runtime::to_string(session->mode()))},
                       {"coprocessor_receive", co_mode && unit},
                       {"time", time.name()},
                       {"bytes", bytes},
                       {"count", count},
                       {"window", window},
                       {"tables", {t.to_json()}},
                       {"samples", samples}};
    std::printf("%s\n", out.dump(1).c_str());
  } else {
    t.print();
    std::printf(
        "\nThe emulator's links have no bandwidth of their own: these are CPU-bound figures of the "
        "machine's cores (see docs/PERFORMANCE.md, \"Node modes (issue 5)\").\n");
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return bgl::bench::run_main("ml_multilink", run, argc, argv);
}
