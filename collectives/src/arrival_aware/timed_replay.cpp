#include "bgl/collectives/arrival_aware/timed_replay.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>
#include <tuple>

#include "bgl/torus_emu/distance.hpp"

namespace bgl::collectives {

namespace {
constexpr double kUnknown = std::numeric_limits<double>::quiet_NaN();
}

ReplayResult timed_replay(const Schedule& schedule, const Params& params,
                          std::span<const double> arrival, const CostConstants& k) {
  const int p = schedule.size();
  if (static_cast<int>(arrival.size()) != p) {
    throw std::invalid_argument("timed replay: " + std::to_string(arrival.size()) +
                                " arrival times for " + std::to_string(p) + " ranks");
  }
  // Match sends and receives by (source, destination, tag).
  std::map<std::tuple<int, int, Tag>, StepId> recv_of;
  for (const auto& prog : schedule.programs) {
    for (StepId i = 0; i < prog.size(); ++i) {
      const Step& s = prog.step(i);
      if (s.kind == StepKind::recv) recv_of[{s.peer, prog.rank(), s.tag}] = i;
      if (s.kind != StepKind::send && s.kind != StepKind::recv && s.kind != StepKind::copy &&
          s.kind != StepKind::reduce) {
        throw std::invalid_argument("timed replay: step kind " + std::string(to_string(s.kind)) +
                                    " is not modelled (point-to-point schedules only)");
      }
    }
  }
  auto hops = [&](int a, int b) {
    if (params.topology.mapping == nullptr) return 1;
    const auto& m = *params.topology.mapping;
    return torus_emu::distance(m.shape(), m.shape().coord(params.topology.node(a)),
                               m.shape().coord(params.topology.node(b)));
  };
  std::vector<std::vector<double>> start(static_cast<std::size_t>(p)),
      finish(static_cast<std::size_t>(p));
  // Data arrival time at the receiver per receive step (set when its send starts).
  std::vector<std::vector<double>> data(static_cast<std::size_t>(p));
  for (int r = 0; r < p; ++r) {
    const auto n = schedule.programs[static_cast<std::size_t>(r)].size();
    start[static_cast<std::size_t>(r)].assign(n, kUnknown);
    finish[static_cast<std::size_t>(r)].assign(n, kUnknown);
    data[static_cast<std::size_t>(r)].assign(n, kUnknown);
  }
  // One injection port per rank: a rank's sends are serialized (the CPU drives every packet).
  std::vector<double> send_free(static_cast<std::size_t>(p), 0.0);
  std::size_t remaining = 0;
  for (const auto& prog : schedule.programs)
    remaining += prog.size();
  bool progress = true;
  while (remaining > 0 && progress) {
    progress = false;
    for (int r = 0; r < p; ++r) {
      const auto& prog = schedule.programs[static_cast<std::size_t>(r)];
      auto& st = start[static_cast<std::size_t>(r)];
      auto& fi = finish[static_cast<std::size_t>(r)];
      for (StepId i = 0; i < prog.size(); ++i) {
        if (!std::isnan(fi[i])) continue;
        const Step& s = prog.step(i);
        if (std::isnan(st[i])) {
          double t = arrival[static_cast<std::size_t>(r)];
          bool ready = true;
          for (StepId d : s.deps) {
            if (std::isnan(fi[d])) {
              ready = false;
              break;
            }
            t = std::max(t, fi[d]);
          }
          if (!ready) continue;
          st[i] = t;
          progress = true;
        }
        switch (s.kind) {
          case StepKind::copy:
          case StepKind::reduce:
            fi[i] = st[i] + static_cast<double>(s.dst.bytes) / (k.copy_bytes_per_cycle * k.cpu_hz);
            break;
          case StepKind::send: {
            auto it = recv_of.find({r, s.peer, s.tag});
            if (it == recv_of.end()) {
              throw std::invalid_argument("timed replay: rank " + std::to_string(r) + " sends to " +
                                          std::to_string(s.peer) + " tag " + std::to_string(s.tag) +
                                          " with no matching receive");
            }
            const double dur =
                (k.message_cycles + static_cast<double>(s.src.bytes) / k.link_bytes_per_cycle +
                 hops(r, s.peer) * k.hop_cycles) /
                k.cpu_hz;
            const double begin = std::max(st[i], send_free[static_cast<std::size_t>(r)]);
            send_free[static_cast<std::size_t>(r)] = begin + dur;
            fi[i] = begin + dur;
            data[static_cast<std::size_t>(s.peer)][it->second] = begin + dur;
            break;
          }
          case StepKind::recv: {
            const double arrived = data[static_cast<std::size_t>(r)][i];
            if (std::isnan(arrived)) continue;
            fi[i] = std::max(st[i], arrived);
            break;
          }
          default:
            break;
        }
        --remaining;
        progress = true;
      }
    }
  }
  if (remaining > 0) throw std::invalid_argument("timed replay: the schedule deadlocks");
  ReplayResult out;
  out.first_arrival = *std::min_element(arrival.begin(), arrival.end());
  out.last_exit = out.first_arrival;
  for (int r = 0; r < p; ++r) {
    double e = arrival[static_cast<std::size_t>(r)];
    for (double f : finish[static_cast<std::size_t>(r)])
      e = std::max(e, f);
    out.exit.push_back(e);
    out.last_exit = std::max(out.last_exit, e);
  }
  return out;
}

}  // namespace bgl::collectives
