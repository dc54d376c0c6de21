#include "bgl/packet_layer/segment_monitor.hpp"

#include <algorithm>
#include <cstring>

namespace bgl::packet_layer {
namespace {

// FIFO slots read per check: about a millisecond, however large the job.
constexpr std::size_t kSlotsPerCheck = 1 << 17;

std::string fifo_name(int index) {
  if (index < kLinkFifos)
    return std::string(torus_emu::to_string(static_cast<torus_emu::Direction>(index)));
  return index == kLocalFifo ? "local" : "high priority";
}

}  // namespace

SegmentMonitor::SegmentMonitor(const Machine& machine,
                               std::vector<job_runtime::ControlPart> constant,
                               Clock::duration interval)
    : machine_(machine), parts_(machine.job().description()), interval_(interval) {
  for (auto& p : constant)
    parts_.push_back(std::move(p));
  for (const auto& p : parts_)
    copies_.emplace_back(p.bytes.begin(), p.bytes.end());
}

std::optional<std::string> SegmentMonitor::poll() {
  const auto now = Clock::now();
  if (now - last_ < interval_) return std::nullopt;
  last_ = now;
  return check();
}

std::optional<std::string> SegmentMonitor::check() {
  for (std::size_t i = 0; i < parts_.size(); ++i)
    if (std::memcmp(parts_[i].bytes.data(), copies_[i].data(), copies_[i].size()) != 0)
      return parts_[i].name;
  if (auto why = machine_.job().check_description()) return why;
  const std::uint32_t arrived = machine_.job().barrier().arrived.load(std::memory_order_acquire);
  if (arrived > machine_.job().barrier_participants())
    return "job barrier (" + std::to_string(arrived) + " tasks arrived of " +
           std::to_string(machine_.job().barrier_participants()) + ")";
  return check_fifos(kSlotsPerCheck);
}

std::optional<std::string> SegmentMonitor::check_fifos(std::size_t budget) {
  const auto& shape = machine_.shape();
  const auto nodes = machine_.job().occupied_nodes();
  const std::size_t fifos = nodes.size() * kFifoGroups * kReceptionFifos;
  const std::size_t per_fifo = machine_.config().fifo_packets;
  const std::size_t rounds = std::max<std::size_t>(1, std::min(fifos, budget / per_fifo));
  for (std::size_t k = 0; k < rounds; ++k, next_fifo_ = (next_fifo_ + 1) % fifos) {
    const auto slot =
        static_cast<job_runtime::NodeSlot>(next_fifo_ / (kFifoGroups * kReceptionFifos));
    const int group = static_cast<int>(next_fifo_ / kReceptionFifos % kFifoGroups);
    const int index = static_cast<int>(next_fifo_ % kReceptionFifos);
    const torus_emu::NodeId node = nodes[slot];
    if (!machine_.placement().local(node)) continue;  // another host's segment has it
    if (const char* why = machine_.fifo_in_slot(slot, group, index).check_consistency())
      return "reception FIFO " + fifo_name(index) + " of node " +
             torus_emu::to_string(shape.coord(node)) + " group " + std::to_string(group) + " (" +
             why + ")";
  }
  return std::nullopt;
}

}  // namespace bgl::packet_layer
