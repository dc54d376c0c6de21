// Message-layer latency, side by side with the
// packet-layer floor: a raw ping-pong of one packet carrying one byte (packet_layer::Endpoint
// inject/poll, like pl_pingpong) between the same two tasks. Variants are interleaved round by
// round so that drift in core-to-core latency hits them alike. Each measurement is timed in batches
// of iterations; min and median are over all batches of all rounds.
//   Table 1: the half round trip of a 1-byte message per protocol (forced with
//            SendMessage::protocol) between rank 0 and its nearest neighbour.
//   Self:    the CPU cost of one 1-byte message per protocol, rank 0 sending to itself through its
//            local FIFO: the layer's own work without core-to-core transfers (explains Table 1).
//   Figure 4a: with more than two tasks, the one-packet half round trip between rank 0 and one
//            task at every Manhattan distance, with the least-squares slope per hop.
// Rank 0 drives: it wakes the one partner it needs with a command message; every other task waits
// asleep in the message layer (MessageLayer::wait), so only two processes are busy at a time.
// Usage:
//   bglrun -np 2 --shape 2x1x1 build/bin/ml_pingpong [--rounds R] [--iterations N] [--json]
//   bglrun -np 64 --shape 4x4x4 build/bin/ml_pingpong [--only protocols|self|distance] [...]
// More options: --batch B (iterations per timed batch, 100), --warmup N (untimed iterations per
// measurement, N/10), --protocol P (measure only P, for perf record), --verbose (stderr).
#include <algorithm>
#include <atomic>
#include <cstring>
#include <deque>
#include <map>
#include <stdexcept>

#include "bench_util.hpp"
#include "bgl/message_layer/session.hpp"
#include "bgl/torus_emu/distance.hpp"
#include "command_channel.hpp"
#include "raw_gate.hpp"

namespace {

using namespace bgl;
using message_layer::Protocol;
using message_layer::Rank;

constexpr message_layer::HandlerId kControlHandler =
    1;  // commands between the driver and its partners
constexpr message_layer::HandlerId kDataHandler = 2;  // the measured messages

enum class Op : std::uint32_t { quit, sync, ml_pingpong, raw_pingpong };

// A command travels as the user header of a data-less one-packet message.
struct Command {
  Op op = Op::quit;
  std::uint32_t protocol = 0;
  std::uint64_t count = 0;
  std::uint64_t gate = 0;  // raw floors: the generation announced through the RawGate
};

constexpr Protocol kProtocols[] = {Protocol::one_packet, Protocol::eager, Protocol::adaptive_eager,
                                   Protocol::rendezvous};
// BG/L's measured message-layer latencies (docs/PERFORMANCE.md), cycles at 700 MHz.
constexpr int kPaperCycles[] = {1600, 2700, 3300, 12000};

// Times batches of `batch` iterations after `warmup` untimed ones. On a shared, noisy machine a
// preempted batch spoils only itself: the best batch shows the undisturbed latency and the median
// batch the typical one. `per_iteration` divides a batch's time (2 for a half round trip).
class BatchTimer {
 public:
  BatchTimer(const bench::TimeSource& time, int warmup, int batch, double per_iteration)
      : time_(&time), warmup_(warmup), batch_(batch), divisor_(batch * per_iteration) {}
  // Call at the top of iteration i, and once more with i == warmup + iterations at the end.
  void at(int i) {
    if (i < warmup_ || (i - warmup_) % batch_ != 0) return;
    const double now = time_->seconds();
    if (i > warmup_) times_.push_back((now - start_) / divisor_);
    start_ = now;
  }
  std::vector<double> times() && { return std::move(times_); }

 private:
  const bench::TimeSource* time_;
  int warmup_, batch_;
  double divisor_;
  double start_ = 0;
  std::vector<double> times_;
};

// All timed batches of one variant, and each round's median batch. The machine's core-to-core
// latency drifts (between rounds, not within one), so a variant is best compared with the floor
// measured next to it: by_round() is the median over rounds of the per-round ratio.
struct Series {
  bench::Samples batches;
  std::vector<double> rounds;

  void add(const std::vector<double>& v) {
    if (v.empty()) return;
    batches.values.insert(batches.values.end(), v.begin(), v.end());
    rounds.push_back(bench::Samples{v}.median());
  }
  bool empty() const { return rounds.empty(); }
  double min() const { return batches.min(); }
  double median() const { return batches.median(); }
};

double by_round(const Series& a, const Series& b) {
  bench::Samples r;
  for (std::size_t i = 0; i < a.rounds.size() && i < b.rounds.size(); ++i)
    r.add(a.rounds[i] / b.rounds[i]);
  return r.median();
}

using bench::RawGate;

// One task: its message layer, the commands other tasks sent it, and the ping-pong counters.
class Task {
 public:
  Task(message_layer::Session& session, RawGate& gate)
      : ml_(session.layer()),
        ep_(session.runtime().endpoint()),
        gate_(gate),
        time_(&session.runtime().endpoint()) {
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

  // ---- the driver's side (rank 0) ----

  std::vector<double> ml_half_rtt(Rank partner, Protocol p, int warmup, int iterations) {
    send_command(partner, {Op::ml_pingpong, static_cast<std::uint32_t>(p),
                           static_cast<std::uint64_t>(warmup + iterations)});
    auto ping = data_message(partner, p);
    bool done = true;
    ping.context = &done;
    BatchTimer timer(time_, warmup, batch_, 2);
    for (int i = 0; i < warmup + iterations; ++i) {
      timer.at(i);
      while (!done)
        ml_.advance();
      done = false;
      ml_.post(ping);
      while (received_ <= static_cast<std::uint64_t>(i))
        ml_.advance();
    }
    timer.at(warmup + iterations);
    while (!done)
      ml_.advance();
    const Rank peers[] = {partner};
    quiesce(peers, false);
    return std::move(timer).times();
  }

  std::vector<double> raw_half_rtt(Rank partner, int warmup, int iterations) {
    const std::uint64_t g = ++generation_;
    send_command(partner,
                 {Op::raw_pingpong, 0, static_cast<std::uint64_t>(warmup + iterations), g});
    gate_.await(partner, 2 * g);  // the partner polls raw packets from now on
    const packet_layer::PacketSpec spec{.dest = ep_.destination_of(partner)};
    BatchTimer timer(time_, warmup, batch_, 2);
    for (int i = 0; i < warmup + iterations; ++i) {
      timer.at(i);
      raw_send(spec);
      raw_receive();
    }
    timer.at(warmup + iterations);
    gate_.await(partner, 2 * g + 1);
    return std::move(timer).times();
  }

  // Rank 0 to itself through its local reception FIFO: the CPU cost of one message (post, inject,
  // poll, dispatch, completion) without any core-to-core transfer.
  std::vector<double> ml_self(Rank me, Protocol p, int warmup, int iterations) {
    auto m = data_message(me, p);
    bool done = true;
    m.context = &done;
    BatchTimer timer(time_, warmup, batch_, 1);
    for (int i = 0; i < warmup + iterations; ++i) {
      timer.at(i);
      while (!done)
        ml_.advance();
      done = false;
      ml_.post(m);
      while (received_ <= static_cast<std::uint64_t>(i))
        ml_.advance();
    }
    timer.at(warmup + iterations);
    progress([&] { return done && ml_.idle(); }, false);
    for (int i = 0; i < 64; ++i)
      ml_.advance();  // trailing fins and tokens to ourselves
    received_ = 0;
    return std::move(timer).times();
  }

  std::vector<double> raw_self(Rank me, int warmup, int iterations) {
    const packet_layer::PacketSpec spec{.dest = ep_.destination_of(me)};
    BatchTimer timer(time_, warmup, batch_, 1);
    for (int i = 0; i < warmup + iterations; ++i) {
      timer.at(i);
      raw_send(spec);
      raw_receive();
    }
    timer.at(warmup + iterations);
    return std::move(timer).times();
  }

  void set_batch(int batch) { batch_ = batch; }

  void finish(int size) {
    for (Rank r = 1; r < static_cast<Rank>(size); ++r)
      send_command(r, {Op::quit});
  }

  // ---- everybody else ----

  void serve() {
    for (;;) {
      const auto [from, c] = next_command(true);  // asleep until rank 0 needs this task
      switch (c.op) {
        case Op::quit:
          return;
        case Op::ml_pingpong:
          serve_ml(from, static_cast<Protocol>(c.protocol), c.count);
          break;
        case Op::raw_pingpong:
          gate_.set(ml_.rank(), 2 * c.gate);
          serve_raw(from, c.count);
          gate_.set(ml_.rank(), 2 * c.gate + 1);
          break;
        default:
          throw std::logic_error("unexpected command " + std::to_string(static_cast<int>(c.op)));
      }
    }
  }

 private:
  message_layer::SendMessage data_message(Rank dest, Protocol p) {
    message_layer::SendMessage m;
    m.dest = dest;
    m.handler = kDataHandler;
    m.data.buffer = std::span<const std::byte>(&send_byte_, 1);
    m.protocol = p;
    m.done = [](message_layer::SendMessage& s) { *static_cast<bool*>(s.context) = true; };
    return m;
  }

  void serve_ml(Rank from, Protocol p, std::uint64_t n) {
    auto pong = data_message(from, p);
    bool done = true;
    pong.context = &done;
    for (std::uint64_t i = 0; i < n; ++i) {
      while (received_ <= i)
        ml_.advance();
      while (!done)
        ml_.advance();
      done = false;
      ml_.post(pong);
    }
    while (!done)
      ml_.advance();
    const Rank peers[] = {from};
    quiesce(peers, false);
  }

  void serve_raw(Rank from, std::uint64_t n) {
    const packet_layer::PacketSpec spec{.dest = ep_.destination_of(from)};
    for (std::uint64_t i = 0; i < n; ++i) {
      raw_receive();
      raw_send(spec);
    }
  }

  void raw_send(const packet_layer::PacketSpec& spec) {
    while (ep_.inject(0, spec, std::span<const std::byte>(&send_byte_, 1)) !=
           packet_layer::InjectStatus::ok) {
    }
  }
  void raw_receive() {
    for (;;) {
      if (auto f = ep_.poll()) {
        if (ep_.peek(*f).dispatch != 0)
          throw std::logic_error("message-layer packet during a raw ping-pong");
        ep_.receive(*f, raw_buffer_);
        return;
      }
    }
  }

  static message_layer::RecvTarget on_data(void* context, const message_layer::Arrival& a) {
    auto& self = *static_cast<Task*>(context);
    return message_layer::RecvTarget::into({&self.recv_byte_, std::min<std::size_t>(a.bytes, 1)},
                                           &Task::on_data_done, context);
  }
  static void on_data_done(void* context, std::uint32_t, std::size_t) {
    ++static_cast<Task*>(context)->received_;
  }

  message_layer::MessageLayer& ml_;
  packet_layer::Endpoint& ep_;
  RawGate& gate_;
  bench::TimeSource time_;
  std::uint64_t generation_ = 0;
  bench::CommandChannel<Command, Op::sync> control_{ml_, kControlHandler};
  std::uint64_t received_ = 0;
  std::byte send_byte_{0x5a};
  std::byte recv_byte_{};
  std::byte raw_buffer_[packet_layer::kMaxPayloadBytes] = {};
  int batch_ = 100;
};

struct Partner {
  int distance;
  Rank rank;
};

// The lowest rank at every distance from rank 0 that occurs in the job.
std::vector<Partner> partners(const torus_emu::Mapping& mapping) {
  std::map<int, Rank> by_distance;
  const auto me = mapping.coord(0);
  for (Rank r = 1; r < static_cast<Rank>(mapping.size()); ++r)
    by_distance.try_emplace(torus_emu::distance(mapping.shape(), me, mapping.coord(r)), r);
  std::vector<Partner> out;
  for (const auto& [d, r] : by_distance)
    out.push_back({d, r});
  return out;
}

// Least squares y = a + b x.
std::pair<double, double> fit(const std::vector<double>& x, const std::vector<double>& y) {
  const double n = static_cast<double>(x.size());
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    sx += x[i];
    sy += y[i];
    sxx += x[i] * x[i];
    sxy += x[i] * y[i];
  }
  const double den = n * sxx - sx * sx;
  if (x.size() < 2 || den == 0) return {x.empty() ? 0 : sy / n, 0};
  const double b = (n * sxy - sx * sy) / den;
  return {(sy - b * sx) / n, b};
}

std::string coord_text(const torus_emu::Mapping& m, Rank r) {
  return torus_emu::to_string(m.coord(r));
}

int run(int argc, char** argv) {
  const auto args = bench::Args::parse(argc, argv, 7);
  const int batch = static_cast<int>(args.number("--batch", 100, 1, 1 << 20));
  int iterations = static_cast<int>(args.number("--iterations", 5000, 1, 1 << 28));
  iterations = (iterations + batch - 1) / batch * batch;
  const int warmup = static_cast<int>(
      args.number("--warmup", std::max(10, iterations / 10), 0, 1 << 28));  // untimed iterations
  const std::string only = args.text("--only", "");
  if (!only.empty() && only != "protocols" && only != "self" && only != "distance")
    throw ConfigError("--only '" + only + "': expected protocols, self or distance");

  // For profiling one protocol (perf record): the tables then show only that one.
  std::optional<Protocol> only_protocol;
  if (const auto text = args.text("--protocol", ""); !text.empty()) {
    only_protocol = message_layer::parse_protocol(text);
    if (!only_protocol)
      throw ConfigError("--protocol '" + text +
                        "': expected one_packet, eager, adaptive_eager or rendezvous");
  }
  const auto wanted = [&](Protocol p) { return !only_protocol || *only_protocol == p; };

  auto session = message_layer::Session::from_launcher();
  if (session->size() < 2)
    throw ConfigError("ml_pingpong needs at least 2 tasks (bglrun -np 2 --shape 2x1x1)");
  RawGate gate(session->runtime());
  Task task(*session, gate);
  task.set_batch(batch);
  session->runtime().barrier();
  if (session->rank() != 0) {
    task.serve();
    return 0;
  }

  const auto& mapping = session->mapping();
  const auto all = partners(mapping);
  // Table 1 partner: the nearest other task (a torus neighbour unless two tasks share a node).
  const auto near =
      std::find_if(all.begin(), all.end(), [](const Partner& p) { return p.distance > 0; });
  const Partner nearest = near != all.end() ? *near : all.front();
  const bool do_protocols = only.empty() || only == "protocols";
  const bool do_self = only.empty() || only == "self";
  const bool do_distance = (only.empty() || only == "distance") && all.size() > 1;

  Series floor, self_floor;
  std::vector<Series> proto(std::size(kProtocols)), self_ml(std::size(kProtocols));
  std::vector<Series> dist_raw(all.size()), dist_ml(all.size());
  const bool verbose =
      std::find(args.rest.begin(), args.rest.end(), "--verbose") != args.rest.end();
  // Each measurement's wall time and batch distribution on stderr with --verbose.
  const auto timed = [&](const char* what, int round, auto&& measure) {
    const auto start = bench::Clock::now();
    auto v = measure();
    if (verbose && !v.empty()) {
      auto w = v;
      std::sort(w.begin(), w.end());
      double sum = 0;
      for (const double x : w)
        sum += x;
      std::fprintf(
          stderr,
          "round %d %s: %.3f s; batches (ns) p10 %.0f p50 %.0f p90 %.0f max %.0f mean %.0f\n",
          round, what, bench::seconds_since(start), w[w.size() / 10] * 1e9, w[w.size() / 2] * 1e9,
          w[w.size() * 9 / 10] * 1e9, w.back() * 1e9, sum / static_cast<double>(w.size()) * 1e9);
    }
    return v;
  };
  task.raw_half_rtt(nearest.rank, warmup, batch);  // warm up both processes
  for (int round = 0; round < args.rounds; ++round) {
    if (do_protocols) {
      floor.add(timed("packet floor", round,
                      [&] { return task.raw_half_rtt(nearest.rank, warmup, iterations); }));
      for (std::size_t p = 0; p < std::size(kProtocols); ++p)
        if (wanted(kProtocols[p]))
          proto[p].add(timed(message_layer::to_string(kProtocols[p]).data(), round, [&] {
            return task.ml_half_rtt(nearest.rank, kProtocols[p], warmup, iterations);
          }));
    }
    if (do_self) {
      self_floor.add(
          timed("self packet floor", round, [&] { return task.raw_self(0, warmup, iterations); }));
      for (std::size_t p = 0; p < std::size(kProtocols); ++p)
        if (wanted(kProtocols[p]))
          self_ml[p].add(timed("self", round,
                               [&] { return task.ml_self(0, kProtocols[p], warmup, iterations); }));
    }
    if (do_distance) {
      for (std::size_t i = 0; i < all.size(); ++i) {
        dist_raw[i].add(task.raw_half_rtt(all[i].rank, warmup, iterations));
        dist_ml[i].add(task.ml_half_rtt(all[i].rank, Protocol::one_packet, warmup, iterations));
      }
    }
  }
  task.finish(session->size());

  const std::string where =
      mapping.shape().to_string() + ", " + std::to_string(session->size()) + " tasks";
  const std::string runs = std::to_string(args.rounds) + " rounds x " + std::to_string(iterations) +
                           " iterations in batches of " + std::to_string(batch) +
                           "; min and median batch";
  nlohmann::json out{{"benchmark", "ml_pingpong"}, {"tables", nlohmann::json::array()}};
  std::vector<bench::Table> tables;
  if (do_protocols) {
    bench::Table t("half round trip of a 1-byte message, rank 0 <-> rank " +
                       std::to_string(nearest.rank) + " " + coord_text(mapping, nearest.rank) +
                       " on " + where + " (" + runs +
                       "; ns; vs_packet = ratio of medians, _min = of minima, _rounds = median of "
                       "per-round ratios; paper = seed 004 Table 1, message layer)",
                   {"variant", "min_ns", "median_ns", "vs_packet", "vs_packet_min",
                    "vs_packet_rounds", "vs_one_packet", "paper_cycles", "paper_vs_one_packet"});
    const double base = floor.median();
    const Series& one = proto[0].empty() ? floor : proto[0];
    t.row({"packet floor", floor.min() * 1e9, base * 1e9, 1.0, 1.0, 1.0, base / one.median(), "-",
           "-"});
    for (std::size_t p = 0; p < std::size(kProtocols); ++p)
      if (wanted(kProtocols[p]))
        t.row({std::string(message_layer::to_string(kProtocols[p])), proto[p].min() * 1e9,
               proto[p].median() * 1e9, proto[p].median() / base, proto[p].min() / floor.min(),
               by_round(proto[p], floor), proto[p].median() / one.median(), kPaperCycles[p],
               static_cast<double>(kPaperCycles[p]) / kPaperCycles[0]});
    tables.push_back(std::move(t));
    const bench::TimeSource time(&session->runtime().endpoint());
    if (time.is_virtual()) {
      // With virtual time every iteration takes the same BG/L time: min = median.
      const double hz = session->runtime().endpoint().vt_params()->cpu_hz;
      bench::Table v(
          "BG/L prediction (virtual time): half round trip of a 1-byte message, rank 0 "
          "<-> rank " +
              std::to_string(nearest.rank) + " (cycles at " +
              std::to_string(static_cast<int>(hz / 1e6)) + " MHz)",
          {"protocol", "predicted_cycles", "paper_cycles", "predicted_vs_paper"});
      for (std::size_t p = 0; p < std::size(kProtocols); ++p)
        if (wanted(kProtocols[p]))
          v.row({std::string(message_layer::to_string(kProtocols[p])), proto[p].median() * hz,
                 kPaperCycles[p], proto[p].median() * hz / kPaperCycles[p]});
      tables.push_back(std::move(v));
    }

    bool ordered = !only_protocol;
    for (std::size_t p = 1; p < std::size(kProtocols); ++p)
      ordered &= proto[p].median() > proto[p - 1].median();
    bench::Table c("targets", {"target", "value", "met"});
    c.row({"latency order one_packet < eager < adaptive_eager < rendezvous (medians)",
           ordered ? "in order" : "out of order", ordered ? "yes" : "no"});
    const auto check = [&](const std::string& what, double ratio) {
      c.row({"one_packet / packet floor <= 1.5, " + what, ratio, ratio <= 1.5 ? "yes" : "no"});
    };
    check("ratio of medians", one.median() / base);
    check("median of per-round ratios", by_round(one, floor));
    check("ratio of minima (fastest core-to-core regime)", one.min() / floor.min());
    tables.push_back(std::move(c));
  }
  if (do_self) {
    bench::Table self(
        "CPU cost of one 1-byte message, rank 0 to itself through its local FIFO (no core-to-core "
        "transfer; " +
            runs + "; ns per message)",
        {"variant", "min_ns", "median_ns", "vs_packet", "extra_ns_vs_packet"});
    const double sbase = self_floor.median();
    self.row({"packet floor", self_floor.min() * 1e9, sbase * 1e9, 1.0, 0.0});
    for (std::size_t p = 0; p < std::size(kProtocols); ++p)
      if (wanted(kProtocols[p]))
        self.row({std::string(message_layer::to_string(kProtocols[p])), self_ml[p].min() * 1e9,
                  self_ml[p].median() * 1e9, self_ml[p].median() / sbase,
                  (self_ml[p].median() - sbase) * 1e9});
    tables.push_back(std::move(self));
  }
  if (do_distance) {
    bench::Table t("half round trip vs Manhattan distance from rank 0 " + coord_text(mapping, 0) +
                       " on " + where + ", one-packet protocol (" + runs + "; ns)",
                   {"hops", "rank", "coord", "packet_min_ns", "packet_median_ns",
                    "one_packet_min_ns", "one_packet_median_ns", "vs_packet", "vs_packet_rounds"});
    std::vector<double> x, yr, ym;
    for (std::size_t i = 0; i < all.size(); ++i) {
      t.row({all[i].distance, all[i].rank, coord_text(mapping, all[i].rank),
             dist_raw[i].min() * 1e9, dist_raw[i].median() * 1e9, dist_ml[i].min() * 1e9,
             dist_ml[i].median() * 1e9, dist_ml[i].median() / dist_raw[i].median(),
             by_round(dist_ml[i], dist_raw[i])});
      if (all[i].distance == 0) continue;
      x.push_back(all[i].distance);
      yr.push_back(dist_raw[i].median() * 1e9);
      ym.push_back(dist_ml[i].median() * 1e9);
    }
    tables.push_back(std::move(t));
    bench::Table f(
        "least-squares fit of the medians over distances >= 1 (paper, MPI: 3350 ns + 90 ns per "
        "hop)",
        {"variant", "intercept_ns", "slope_ns_per_hop"});
    const auto [ar, br] = fit(x, yr);
    const auto [am, bm] = fit(x, ym);
    f.row({"packet floor", ar, br});
    f.row({"one_packet", am, bm});
    tables.push_back(std::move(f));
  }
  for (const auto& t : tables) {
    if (args.json)
      out["tables"].push_back(t.to_json());
    else
      t.print();
  }
  if (args.json) std::printf("%s\n", out.dump(1).c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return bgl::bench::run_main("ml_pingpong", run, argc, argv);
}
