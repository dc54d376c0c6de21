// Message-layer bandwidth, side by side with the packet-layer
// floor: raw streaming of full packets (240-byte payloads, packet_layer::Endpoint inject/poll, like
// pl_stream) between the same tasks at the same time. Variants are interleaved round by round;
// the best and the median round are reported.
//   Two tasks: one bidirectional link. Both neighbours send each other `count` messages of every
//     size (1 B .. 4 MiB, powers of 4) with a window of W outstanding messages, per protocol
//     (forced with SendMessage::protocol; one-packet only where the data fit a packet); MB/s per
//     direction from the driver's (rank 0's) time.
//   More tasks: 1..6 links at once. The task in the middle of the partition exchanges messages of
//     one size (default 1 MiB) with k of its torus neighbours simultaneously, both directions;
//     aggregate MB/s (sent + received) at the centre. The other tasks wait asleep in the message
//     layer for the driver's next command.
// Idle tasks wait the way an application's progress loop does (MessageLayer::wait, or
// Endpoint::wait for the floor: spin, yield, doorbell sleep), so that two tasks sharing a core
// hand it over instead of spinning out their time slices; --wait spin makes everybody poll.
// The emulator moves a packet to its destination FIFO in one step and models no per-link
// serialisation: a link has no bandwidth of its own, and every number here is what the tasks'
// CPUs (two cores for the whole job) manage to push through the shared-memory FIFOs.
// Usage:
//   bglrun -np 2 --shape 2x1x1 build/bin/ml_bandwidth [--rounds R] [--window W] [--json]
//   bglrun -np 27 --shape 3x3x3 build/bin/ml_bandwidth [--size S] [--messages N] [--links K]
// More options: --bytes B and --max-messages N (one link: B bytes per measurement, at least 2W
// and at most N messages), --wait sleep|spin, --verbose (each measurement's time on stderr).
#include <algorithm>
#include <atomic>
#include <cstring>
#include <deque>
#include <set>
#include <stdexcept>

#include "bench_util.hpp"
#include "bgl/message_layer/session.hpp"
#include "command_channel.hpp"
#include "raw_gate.hpp"

namespace {

using namespace bgl;
using message_layer::Protocol;
using message_layer::Rank;

constexpr message_layer::HandlerId kControlHandler =
    1;  // commands between the driver and its partners
constexpr message_layer::HandlerId kDataHandler = 2;  // the measured messages

enum class Op : std::uint32_t { quit, ready, sync, ml_exchange, raw_exchange };

// A command travels as the user header of a data-less one-packet message.
struct Command {
  Op op = Op::quit;
  std::uint32_t protocol = 0;
  std::uint64_t bytes = 0;  // message size
  std::uint64_t count = 0;  // messages (or packets) per direction and peer
  std::uint32_t window = 0;
  std::uint32_t sleepy = 0;  // wait in the message layer when idle instead of polling
  std::uint64_t gate = 0;    // raw floor: the generation announced through the RawGate
};

// What one measurement does: `count` messages of `bytes` to each peer and from each peer.
struct Exchange {
  Protocol protocol = Protocol::eager;
  std::size_t bytes = 0;
  std::uint64_t count = 0;
  std::uint32_t window = 0;
};

constexpr std::size_t kRawPayload = packet_layer::kMaxPayloadBytes;
constexpr std::size_t kOnePacketLimit =
    packet_layer::kMaxPayloadBytes - 12;  // 240 - First, no user header

std::string size_text(std::size_t b) {
  if (b >= (1u << 20) && b % (1u << 20) == 0) return std::to_string(b >> 20) + " MiB";
  if (b >= 1024 && b % 1024 == 0) return std::to_string(b >> 10) + " KiB";
  return std::to_string(b) + " B";
}

using bench::RawGate;

class Task {
 public:
  Task(message_layer::Session& session, RawGate& gate, std::size_t max_bytes)
      : ml_(session.layer()),
        ep_(session.runtime().endpoint()),
        gate_(gate),
        send_(max_bytes),
        recv_(max_bytes) {
    for (std::size_t i = 0; i < send_.size(); ++i)
      send_[i] = static_cast<std::byte>(i * 7 + 1);
    std::memset(recv_.data(), 0, recv_.size());  // touch every page before measuring
    ml_.register_handler(kDataHandler, &Task::on_data, this);
  }

  template <class Pred>
  void progress(Pred&& pred, bool sleepy) {
    control_.progress(pred, sleepy);
  }
  void send_command(Rank dest, const Command& c) { control_.send(dest, c); }
  std::pair<Rank, Command> next_command(bool sleepy) { return control_.next(sleepy); }
  void expect(Op op, std::size_t n, bool sleepy) { control_.expect(op, n, sleepy); }
  void quiesce(std::span<const Rank> peers, bool sleepy) {
    control_.quiesce(peers, sleepy);
    received_ = 0;  // no data message is in flight now
  }

  // ---- the driver ----

  // Seconds for the driver's side of an exchange with `peers` (which run it too).
  double drive_ml(std::span<const Rank> peers, const Exchange& x, bool sleepy) {
    for (const Rank p : peers)
      send_command(p, {Op::ml_exchange, static_cast<std::uint32_t>(x.protocol), x.bytes, x.count,
                       x.window, sleepy});
    expect(Op::ready, peers.size(), sleepy);
    const bench::TimeSource time(&ep_);
    const double start = time.seconds();
    exchange(peers, x, sleepy);
    const double t = time.seconds() - start;
    quiesce(peers, sleepy);
    return t;
  }

  double drive_raw(std::span<const Rank> peers, std::uint64_t packets, bool sleepy) {
    const std::uint64_t g = ++generation_;
    for (const Rank p : peers)
      send_command(p, {Op::raw_exchange, 0, kRawPayload, packets, 0, sleepy, g});
    for (const Rank p : peers)
      gate_.await(p, 2 * g);  // they poll raw packets from now on
    const bench::TimeSource time(&ep_);
    const double start = time.seconds();
    raw_exchange(peers, packets, sleepy, false);
    const double t = time.seconds() - start;
    for (const Rank p : peers)
      gate_.await(p, 2 * g + 1);  // and are back in the message layer
    return t;
  }

  void finish(int size, Rank me) {
    for (Rank r = 0; r < static_cast<Rank>(size); ++r)
      if (r != me) send_command(r, {Op::quit});
  }

  // ---- everybody else ----

  void serve() {
    for (;;) {
      const auto [from, c] = next_command(true);  // asleep until the driver needs this task
      const Rank peers[] = {from};
      const bool sleepy = c.sleepy != 0;
      switch (c.op) {
        case Op::quit:
          return;
        case Op::ml_exchange:
          send_command(from, {Op::ready});
          exchange(peers, {static_cast<Protocol>(c.protocol), c.bytes, c.count, c.window}, sleepy);
          quiesce(peers, sleepy);
          break;
        case Op::raw_exchange:
          gate_.set(ml_.rank(), 2 * c.gate);
          raw_exchange(peers, c.count, sleepy, true);
          gate_.set(ml_.rank(), 2 * c.gate + 1);
          break;
        default:
          throw std::logic_error("unexpected command " + std::to_string(static_cast<int>(c.op)));
      }
    }
  }

  const message_layer::Statistics& statistics() const { return ml_.statistics(); }

 private:
  struct Flow {
    Rank peer = 0;
    std::uint64_t posted = 0, sent = 0;
  };
  struct Slot {
    message_layer::SendMessage message;
    Task* task = nullptr;
    std::size_t flow = 0;
  };

  // Sends x.count messages to every peer, at most x.window outstanding per peer, and takes
  // x.count from every peer. A finished send is posted again from its completion callback.
  void exchange(std::span<const Rank> peers, const Exchange& x, bool sleepy) {
    if (x.bytes > send_.size()) throw std::invalid_argument("message larger than the buffers");
    flows_.assign(peers.size(), Flow{});
    const std::size_t window = std::max<std::uint32_t>(1, x.window);
    slots_.clear();
    slots_.resize(peers.size() * window);  // stable from here on
    count_ = x.count;
    for (std::size_t f = 0; f < peers.size(); ++f) {
      flows_[f].peer = peers[f];
      for (std::size_t w = 0; w < window && flows_[f].posted < x.count; ++w) {
        Slot& s = slots_[f * window + w];
        s.task = this;
        s.flow = f;
        auto& m = s.message;
        m.dest = peers[f];
        m.handler = kDataHandler;
        m.data.buffer = std::span<const std::byte>(send_.data(), x.bytes);
        m.protocol = x.protocol;
        m.context = &s;
        m.done = &Task::on_sent;
        ++flows_[f].posted;
        ml_.post(m);
      }
    }
    const std::uint64_t expected = x.count * peers.size();
    progress(
        [&] {
          if (received_ < expected) return false;
          for (const Flow& f : flows_)
            if (f.sent < count_) return false;
          return true;
        },
        sleepy);
  }

  static void on_sent(message_layer::SendMessage& m) {
    auto& s = *static_cast<Slot*>(m.context);
    Task& self = *s.task;
    Flow& f = self.flows_[s.flow];
    ++f.sent;
    if (f.posted < self.count_) {
      ++f.posted;
      self.ml_.post(m);
    }
  }

  // The floor: `packets` full packets to every peer and from every peer, straight through the
  // packet layer (injection FIFO per peer, so that one full reception FIFO does not stall the
  // rest). A partner injects only after the driver's first packet has come: until then the driver
  // may still be inside the message layer, which must not see raw packets.
  void raw_exchange(std::span<const Rank> peers, std::uint64_t packets, bool sleepy, bool partner) {
    std::vector<packet_layer::PacketSpec> specs;
    for (const Rank p : peers)
      specs.push_back({.dest = ep_.destination_of(p)});
    std::vector<std::uint64_t> sent(peers.size(), 0);
    const std::uint64_t expected = packets * peers.size();
    std::uint64_t received = 0, total_sent = 0;
    const std::span<const std::byte> payload(send_.data(), kRawPayload);
    std::byte buffer[packet_layer::kMaxPayloadBytes];
    while (total_sent < expected || received < expected || !ep_.injection_idle()) {
      bool any = false;
      for (std::size_t i = 0; i < peers.size() && (!partner || received > 0); ++i) {
        for (int burst = 0; burst < 16 && sent[i] < packets; ++burst) {
          if (ep_.inject(static_cast<int>(i % 6), specs[i], payload) !=
              packet_layer::InjectStatus::ok)
            break;
          ++sent[i];
          ++total_sent;
          any = true;
        }
      }
      for (int burst = 0; burst < 16 && received < expected; ++burst) {
        const auto f = ep_.poll();
        if (!f) break;
        if (ep_.peek(*f).dispatch != 0)
          throw std::logic_error("message-layer packet during a raw exchange");
        ep_.receive(*f, buffer);
        ++received;
        any = true;
      }
      if (!any) {
        ep_.advance();
        if (sleepy) ep_.wait();
      }
    }
  }

  // Every message lands in the same receive buffer (the benchmark does not look at the data).
  static message_layer::RecvTarget on_data(void* context, const message_layer::Arrival& a) {
    auto& self = *static_cast<Task*>(context);
    return message_layer::RecvTarget::into(
        {self.recv_.data(), std::min<std::size_t>(a.bytes, self.recv_.size())}, &Task::on_data_done,
        context);
  }
  static void on_data_done(void* context, std::uint32_t, std::size_t) {
    ++static_cast<Task*>(context)->received_;
  }

  message_layer::MessageLayer& ml_;
  packet_layer::Endpoint& ep_;
  RawGate& gate_;
  std::uint64_t generation_ = 0;
  std::vector<std::byte> send_, recv_;
  bench::CommandChannel<Command, Op::sync> control_{ml_, kControlHandler};
  std::vector<Flow> flows_;
  std::vector<Slot> slots_;
  std::uint64_t count_ = 0;
  std::uint64_t received_ = 0;
};

constexpr Protocol kAll[] = {Protocol::one_packet, Protocol::eager, Protocol::adaptive_eager,
                             Protocol::rendezvous};

struct Settings {
  int rounds;
  std::uint32_t window;
  std::uint64_t bytes;         // per measurement, direction and peer
  std::uint64_t max_messages;  // cap for small messages
  std::uint64_t messages;      // multi-link: messages per link and direction
  std::size_t size;            // multi-link message size
  bool sleepy;                 // everybody waits in the layer's wait() when idle (false: polls)
  bool verbose;                // each measurement's time on stderr
};

std::uint64_t messages_for(const Settings& s, std::size_t bytes) {
  return std::clamp<std::uint64_t>(s.bytes / bytes, 2ull * s.window,
                                   std::max<std::uint64_t>(2ull * s.window, s.max_messages));
}

std::vector<bench::Table> one_link(Task& task, Rank peer, const Settings& s,
                                   const std::string& where) {
  std::vector<std::size_t> sizes;
  for (std::size_t b = 1; b <= (4u << 20); b *= 4)
    sizes.push_back(b);
  const std::uint64_t raw_packets = std::max<std::uint64_t>(1, s.bytes / kRawPayload);
  const Rank peers[] = {peer};
  std::vector<std::vector<bench::Samples>> ml(sizes.size(),
                                              std::vector<bench::Samples>(std::size(kAll)));
  std::vector<bench::Samples> floor(sizes.size());
  task.drive_raw(peers, raw_packets / 4, s.sleepy);  // warm up
  for (int round = 0; round < s.rounds; ++round) {
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      floor[i].add(task.drive_raw(peers, raw_packets, s.sleepy));
      if (s.verbose)
        std::fprintf(stderr, "round %d size %zu floor %.6f s\n", round, sizes[i],
                     floor[i].values.back());
      for (std::size_t p = 0; p < std::size(kAll); ++p) {
        if (kAll[p] == Protocol::one_packet && sizes[i] > kOnePacketLimit) continue;
        ml[i][p].add(task.drive_ml(peers, {kAll[p], sizes[i], messages_for(s, sizes[i]), s.window},
                                   s.sleepy));
        if (s.verbose)
          std::fprintf(stderr, "round %d size %zu %s %.6f s\n", round, sizes[i],
                       message_layer::to_string(kAll[p]).data(), ml[i][p].values.back());
      }
    }
  }
  const double raw_bytes = static_cast<double>(raw_packets * kRawPayload);
  bench::Table t(
      "bandwidth per direction on one bidirectional link, " + where + ", window " +
          std::to_string(s.window) + " (" + std::to_string(s.rounds) +
          " rounds; MB/s = 1e6 B/s of user data from the best and the median round, Mmsg/s from "
          "the "
          "median; floor: raw full packets both ways, 240-byte payloads, measured next to each "
          "size)",
      {"size", "protocol", "messages", "MBps_best", "MBps_median", "Mmsgps_median",
       "floor_MBps_median", "floor_Mpktps_median", "vs_floor"});
  bench::Table summary(
      "per protocol: peak of the median MB/s over sizes, and the smallest size reaching half of "
      "it (paper, MPI: 310 MB/s net limit, half at ~500 B)",
      {"protocol", "peak_MBps", "peak_at", "half_peak_at", "MBps_at_4MiB"});
  for (std::size_t p = 0; p < std::size(kAll); ++p) {
    double peak = 0;
    std::size_t peak_at = 0;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      if (ml[i][p].values.empty()) continue;
      const double data = static_cast<double>(messages_for(s, sizes[i]) * sizes[i]);
      const double median = data / ml[i][p].median() / 1e6;
      const double floor_median = raw_bytes / floor[i].median() / 1e6;
      t.row({size_text(sizes[i]), std::string(message_layer::to_string(kAll[p])),
             messages_for(s, sizes[i]), data / ml[i][p].min() / 1e6, median,
             static_cast<double>(messages_for(s, sizes[i])) / ml[i][p].median() / 1e6, floor_median,
             static_cast<double>(raw_packets) / floor[i].median() / 1e6, median / floor_median});
      if (median > peak) peak = median, peak_at = sizes[i];
    }
    std::string half = "-";
    double at_max = 0;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      if (ml[i][p].values.empty()) continue;
      const double median =
          static_cast<double>(messages_for(s, sizes[i]) * sizes[i]) / ml[i][p].median() / 1e6;
      if (half == "-" && median >= peak / 2) half = size_text(sizes[i]);
      at_max = median;
    }
    summary.row({std::string(message_layer::to_string(kAll[p])), peak, size_text(peak_at), half,
                 sizes.back() <= kOnePacketLimit || kAll[p] != Protocol::one_packet
                     ? nlohmann::json(at_max)
                     : nlohmann::json("-")});
  }
  return {t, summary};
}

std::vector<bench::Table> multi_link(Task& task, std::span<const Rank> neighbours,
                                     const Settings& s, const std::string& where) {
  constexpr Protocol kProtocols[] = {Protocol::eager, Protocol::adaptive_eager,
                                     Protocol::rendezvous};
  const std::size_t links = neighbours.size();
  const std::uint64_t count = s.messages;
  const std::uint64_t raw_packets = std::max<std::uint64_t>(1, count * s.size / kRawPayload);
  std::vector<std::vector<bench::Samples>> ml(links,
                                              std::vector<bench::Samples>(std::size(kProtocols)));
  std::vector<bench::Samples> floor(links);
  task.drive_raw(neighbours.first(1), raw_packets / 4, s.sleepy);  // warm up
  for (int round = 0; round < s.rounds; ++round) {
    for (std::size_t k = 1; k <= links; ++k) {
      const auto peers = neighbours.first(k);
      floor[k - 1].add(task.drive_raw(peers, raw_packets, s.sleepy));
      if (s.verbose)
        std::fprintf(stderr, "round %d links %zu floor %.6f s\n", round, k,
                     floor[k - 1].values.back());
      for (std::size_t p = 0; p < std::size(kProtocols); ++p) {
        ml[k - 1][p].add(task.drive_ml(peers, {kProtocols[p], s.size, count, s.window}, s.sleepy));
        if (s.verbose)
          std::fprintf(stderr, "round %d links %zu %s %.6f s\n", round, k,
                       message_layer::to_string(kProtocols[p]).data(), ml[k - 1][p].values.back());
      }
    }
  }
  bench::Table t("1.." + std::to_string(links) +
                     " bidirectional links at once from the centre task, " + where + ", " +
                     size_text(s.size) + " messages, " + std::to_string(count) +
                     " per link and direction, window " + std::to_string(s.window) + ", partners " +
                     (s.sleepy ? "tasks wait in the layers' wait()" : "tasks poll") + " (" +
                     std::to_string(s.rounds) +
                     " rounds; aggregate = sent + received at the centre, MB/s = 1e6 B/s; floor: "
                     "raw full packets)",
                 {"protocol", "links", "aggregate_MBps_best", "aggregate_MBps_median",
                  "per_link_direction_MBps", "floor_aggregate_MBps", "vs_floor"});
  for (std::size_t p = 0; p < std::size(kProtocols); ++p) {
    for (std::size_t k = 1; k <= links; ++k) {
      const double data = 2.0 * static_cast<double>(k * count * s.size);
      const double raw = 2.0 * static_cast<double>(k * raw_packets * kRawPayload);
      const double median = data / ml[k - 1][p].median() / 1e6;
      const double floor_median = raw / floor[k - 1].median() / 1e6;
      t.row({std::string(message_layer::to_string(kProtocols[p])), k,
             data / ml[k - 1][p].min() / 1e6, median, median / static_cast<double>(2 * k),
             floor_median, median / floor_median});
    }
  }
  return {t};
}

int run(int argc, char** argv) {
  const auto args = bench::Args::parse(argc, argv, 5);
  Settings s{};
  s.rounds = args.rounds;
  s.window = static_cast<std::uint32_t>(args.number("--window", 8, 1, 1024));
  s.bytes = static_cast<std::uint64_t>(args.number("--bytes", 2 << 20, 1, 1LL << 34));
  s.max_messages = static_cast<std::uint64_t>(args.number("--max-messages", 2000, 1, 1LL << 30));
  s.messages = static_cast<std::uint64_t>(args.number("--messages", s.window, 1, 1LL << 30));
  s.size = static_cast<std::size_t>(args.number("--size", 1 << 20, 1, 1LL << 30));
  const std::string wait = args.text("--wait", "sleep");
  if (wait != "sleep" && wait != "spin")
    throw ConfigError("--wait '" + wait + "': expected sleep or spin");
  s.sleepy = wait == "sleep";
  s.verbose = std::find(args.rest.begin(), args.rest.end(), "--verbose") != args.rest.end();

  auto session = message_layer::Session::from_launcher();
  const int size = session->size();
  if (size < 2)
    throw ConfigError("ml_bandwidth needs at least 2 tasks (bglrun -np 2 --shape 2x1x1)");
  const auto& mapping = session->mapping();
  const auto& shape = mapping.shape();

  // Two tasks: rank 0 drives, rank 1 is its partner. More: the task nearest the middle of the
  // partition drives, with its distinct torus neighbours as partners.
  Rank driver = 0;
  std::vector<Rank> neighbours;
  if (size == 2) {
    neighbours.push_back(1);
  } else {
    const torus_emu::Coord middle{shape.extent(torus_emu::Dim::x) / 2,
                                  shape.extent(torus_emu::Dim::y) / 2,
                                  shape.extent(torus_emu::Dim::z) / 2};
    const auto at = mapping.rank_at(shape.node_id(middle), 0);
    if (!at)
      throw ConfigError("no task at the middle of the partition " + torus_emu::to_string(middle));
    driver = *at;
    std::set<Rank> seen;
    for (int d = 0; d < torus_emu::kDirections; ++d) {
      const auto n = shape.neighbour(shape.node_id(middle), static_cast<torus_emu::Direction>(d));
      if (!n) continue;
      const auto r = mapping.rank_at(*n, 0);
      if (r && seen.insert(*r).second) neighbours.push_back(*r);
    }
    if (neighbours.empty()) throw ConfigError("the middle task has no torus neighbour with a task");
    neighbours.resize(std::min<std::size_t>(
        neighbours.size(), static_cast<std::size_t>(args.number("--links", 6, 1, 6))));
  }

  const std::size_t max_bytes = size == 2 ? (4u << 20) : s.size;
  RawGate gate(session->runtime());
  Task task(*session, gate, max_bytes);
  session->runtime().barrier();
  if (session->rank() != driver) {
    task.serve();
    return 0;
  }

  const std::string where = shape.to_string() + ", " + std::to_string(size) +
                            " tasks, driver rank " + std::to_string(driver) + " " +
                            torus_emu::to_string(mapping.coord(driver));
  auto tables =
      size == 2 ? one_link(task, neighbours[0], s, where) : multi_link(task, neighbours, s, where);
  task.finish(size, driver);

  bench::Table c("driver's message-layer counters over the whole run",
                 {"early_adaptive_packets", "token_waits", "pool_waits", "unexpected_messages",
                  "control_packets_sent"});
  const auto& st = task.statistics();
  c.row({st.early_adaptive_packets, st.token_waits, st.pool_waits, st.unexpected_messages,
         st.control_packets_sent});
  tables.push_back(c);
  if (args.json) {
    nlohmann::json out{{"benchmark", "ml_bandwidth"}, {"tables", nlohmann::json::array()}};
    for (const auto& t : tables)
      out["tables"].push_back(t.to_json());
    std::printf("%s\n", out.dump(1).c_str());
  } else {
    for (const auto& t : tables)
      t.print();
    std::printf(
        "\nThe emulator models no per-link serialisation: these are CPU-bound figures of the two "
        "cores.\n");
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return bgl::bench::run_main("ml_bandwidth", run, argc, argv);
}
