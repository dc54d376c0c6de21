#include "deadlock_watch.hpp"

#include <unistd.h>

#include <fstream>
#include <map>
#include <sstream>

#include "bgl/torus_emu/mapping.hpp"

namespace bgl::bglrun {
namespace {

constexpr std::chrono::milliseconds kSampleEvery{100};

// User plus system time of a process (all its threads), in clock ticks; 0 when it cannot be read.
std::uint64_t cpu_ticks(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  std::getline(in, text);
  // The command name (field 2) may hold spaces and parentheses: fields count from the last ')'.
  const auto close = text.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream fields(text.substr(close + 2));
  std::string skip;
  for (int field = 3; field < 14; ++field)
    fields >> skip;
  std::uint64_t user = 0, system = 0;
  fields >> user >> system;
  return user + system;
}

// "0-3,5,9-10"
std::string rank_list(const std::vector<int>& ranks) {
  std::string out;
  for (std::size_t i = 0; i < ranks.size();) {
    std::size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1)
      ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(ranks[i]);
    if (j > i) out += '-' + std::to_string(ranks[j]);
    i = j + 1;
  }
  return out;
}

}  // namespace

DeadlockWatch::DeadlockWatch(const packet_layer::Machine& machine,
                             const job_runtime::Segment& segment, std::chrono::milliseconds window)
    : machine_(machine), segment_(segment), window_(window) {}

bool DeadlockWatch::all_asleep(const std::vector<pid_t>& pids) const {
  bool any = false;
  for (std::size_t r = 0; r < pids.size(); ++r) {
    if (pids[r] <= 0) continue;
    any = true;
    if (machine_.job()
            .task(static_cast<torus_emu::Rank>(r))
            .wait.asleep.load(std::memory_order_acquire) == 0)
      return false;
  }
  return any;
}

std::optional<std::string> DeadlockWatch::check(Clock::time_point now,
                                                const std::vector<pid_t>& pids) {
  if (now < next_sample_) return std::nullopt;
  next_sample_ = now + kSampleEvery;
  if (!all_asleep(pids)) {
    since_.reset();
    return std::nullopt;
  }
  const auto snapshot = [&] {
    std::vector<Seen> seen(pids.size());
    for (std::size_t r = 0; r < pids.size(); ++r) {
      if (pids[r] <= 0) continue;
      const auto& w = machine_.job().task(static_cast<torus_emu::Rank>(r)).wait;
      seen[r] = {w.sleeps.load(std::memory_order_acquire), w.wakes.load(std::memory_order_acquire),
                 cpu_ticks(pids[r])};
    }
    return seen;
  };
  if (!since_) {
    since_ = now;
    base_ = snapshot();
    return std::nullopt;
  }
  if (now - *since_ < window_) {
    // Any work seen starts the window again (cheap: no /proc reads).
    for (std::size_t r = 0; r < pids.size(); ++r)
      if (pids[r] > 0 && machine_.job()
                                 .task(static_cast<torus_emu::Rank>(r))
                                 .wait.wakes.load(std::memory_order_acquire) != base_[r].wakes) {
        since_.reset();
        return std::nullopt;
      }
    return std::nullopt;
  }
  const auto latest = snapshot();
  const double window_ticks = std::chrono::duration<double>(now - *since_).count() *
                              static_cast<double>(sysconf(_SC_CLK_TCK));
  for (std::size_t r = 0; r < pids.size(); ++r) {
    if (pids[r] <= 0) continue;
    const bool worked = latest[r].wakes != base_[r].wakes;
    // A task whose sleeps stopped is not in the wait it published (it sleeps or blocks elsewhere,
    // or computes); one that used a fifth of a core computes (another thread of it, perhaps).
    const bool still_sleeping = latest[r].sleeps != base_[r].sleeps;
    const bool computing =
        static_cast<double>(latest[r].cpu_ticks - base_[r].cpu_ticks) > 0.2 * window_ticks;
    if (worked || !still_sleeping || computing) {
      since_ = now;
      base_ = latest;
      return std::nullopt;
    }
  }
  const double seconds = std::chrono::duration<double>(now - *since_).count();
  std::ostringstream why;
  why.precision(2);
  why << std::fixed << "deadlock: every task has been waiting for " << seconds
      << " s and none has made progress (nothing they wait for can come)";
  return why.str();
}

std::string DeadlockWatch::describe_bell(std::uint64_t offset, torus_emu::Rank rank) const {
  const std::byte* base = segment_.bytes().data();
  const auto at = [&](const void* p) {
    return static_cast<std::uint64_t>(static_cast<const std::byte*>(p) - base);
  };
  const auto& m = machine_.mapping();
  const auto me = m.location(rank);
  if (offset == at(&machine_.doorbell(me.node, me.t))) return "its reception doorbell";
  if (offset == at(&machine_.job().barrier().bell)) return "the job barrier's doorbell";
  for (int i = 0; i < machine_.job().region_count(); ++i) {
    const auto region = machine_.job().region(i);
    if (!region.empty() && offset >= at(region.data()) &&
        offset < at(region.data()) + region.size())
      return "a doorbell in the segment's region " + std::to_string(i) + " (+" +
             std::to_string(offset - at(region.data())) + ")";
  }
  for (const auto node : machine_.job().occupied_nodes())
    for (int g = 0; g < 2; ++g)
      if (offset == at(&machine_.doorbell(node, g)))
        return "the doorbell of FIFO group " + std::to_string(g) + " of node " +
               torus_emu::to_string(machine_.shape().coord(node));
  return "a doorbell at segment offset " + std::to_string(offset);
}

std::string DeadlockWatch::describe_wait(torus_emu::Rank rank) const {
  const auto& w = machine_.job().task(rank).wait;
  const auto kind = static_cast<job_runtime::WaitKind>(w.kind.load(std::memory_order_acquire));
  const auto detail = w.detail.load(std::memory_order_acquire);
  const auto bell = describe_bell(w.bell.load(std::memory_order_acquire), rank);
  switch (kind) {
    case job_runtime::WaitKind::packets:
      return "packets (asleep on " + bell + ")";
    case job_runtime::WaitKind::injection_room:
      return "room in a peer's reception FIFO for the packets in its injection FIFOs (the peer "
             "does not receive)";
    case job_runtime::WaitKind::job_barrier: {
      const auto& b = machine_.job().barrier();
      return "the job barrier (generation " + std::to_string(detail) + "; " +
             std::to_string(b.arrived.load(std::memory_order_acquire)) + " of " +
             std::to_string(machine_.job().barrier_participants()) + " arrived)";
    }
    case job_runtime::WaitKind::global_interrupt:
      return "the global-interrupt barrier (its barrier number " + std::to_string(detail) + ")";
    case job_runtime::WaitKind::wire:
      return "global-interrupt wire " + std::to_string(detail);
    case job_runtime::WaitKind::tree:
      return "a collective-network (tree) operation";
    case job_runtime::WaitKind::unspecified:
      break;
  }
  return "a wake-up on " + bell;
}

std::string DeadlockWatch::states(const std::vector<pid_t>& pids) const {
  std::map<std::string, std::vector<int>> groups;
  for (std::size_t r = 0; r < pids.size(); ++r)
    if (pids[r] > 0)
      groups[describe_wait(static_cast<torus_emu::Rank>(r))].push_back(static_cast<int>(r));
  std::string out;
  for (const auto& [what, ranks] : groups)
    out += std::string("  ") + (ranks.size() == 1 ? "rank " : "ranks ") + rank_list(ranks) +
           (ranks.size() == 1 ? " waits for " : " wait for ") + what + "\n";
  if (!out.empty()) out.pop_back();
  return out;
}

}  // namespace bgl::bglrun
