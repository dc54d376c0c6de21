#include "bgl/collectives/wide_area/transfer_model.hpp"

#include <algorithm>
#include <limits>

#include "bgl/torus_emu/error.hpp"

namespace bgl::collectives::wide_area {

namespace {
constexpr double kNever = std::numeric_limits<double>::infinity();
}

TransferModel::TransferModel(const HostNetwork& net, ModelOptions options, int blocks,
                             std::size_t block_bytes, std::vector<int> owner)
    : net_(&net),
      options_(options),
      hosts_(net.hosts()),
      blocks_(blocks),
      block_bytes_(block_bytes),
      link_free_(static_cast<std::size_t>(hosts_) * static_cast<std::size_t>(hosts_), 0.0),
      send_free_(static_cast<std::size_t>(hosts_), 0.0),
      recv_free_(static_cast<std::size_t>(hosts_), 0.0),
      have_(static_cast<std::size_t>(blocks) * static_cast<std::size_t>(hosts_), kNever) {
  if (owner.empty()) {
    if (blocks != hosts_) {
      throw ConfigError("transfer model: " + std::to_string(blocks) +
                        " blocks need an owner list (" + std::to_string(hosts_) + " hosts)");
    }
    for (int d = 0; d < blocks; ++d)
      owner.push_back(d);
  }
  if (static_cast<int>(owner.size()) != blocks) {
    throw ConfigError("transfer model: owner list has " + std::to_string(owner.size()) +
                      " entries for " + std::to_string(blocks) + " blocks");
  }
  for (int d = 0; d < blocks; ++d) {
    const int h = owner[static_cast<std::size_t>(d)];
    if (h < 0 || h >= hosts_) throw ConfigError("transfer model: block owner out of range");
    have_[static_cast<std::size_t>(d) * static_cast<std::size_t>(hosts_) +
          static_cast<std::size_t>(h)] = 0.0;
  }
}

double TransferModel::transfer_time(std::size_t bytes, int from, int to) const {
  return net_->latency(from, to) + static_cast<double>(bytes) / net_->bandwidth(from, to);
}

double TransferModel::have(int block, int host) const {
  return have_[static_cast<std::size_t>(block) * static_cast<std::size_t>(hosts_) +
               static_cast<std::size_t>(host)];
}

Timing TransferModel::evaluate(std::span<const int> blocks, int from, int to) const {
  double start = link_free_[cell(from, to)];
  if (options_.duplex == Duplex::half) {
    start = std::max({start, send_free_[static_cast<std::size_t>(from)],
                      send_free_[static_cast<std::size_t>(to)]});
  } else {
    start = std::max({start, send_free_[static_cast<std::size_t>(from)],
                      recv_free_[static_cast<std::size_t>(to)]});
  }
  if (!options_.paper_literal) {
    for (int d : blocks)
      start = std::max(start, have(d, from));
  }
  return {start, start + transfer_time(block_bytes_ * blocks.size(), from, to)};
}

Timing TransferModel::commit(std::span<const int> blocks, int from, int to) {
  const Timing t = evaluate(blocks, from, to);
  const double transfer = t.finish - t.start;
  const double os = options_.send_overhead.value_or(transfer);
  const double g = options_.gap.value_or(transfer);
  link_free_[cell(from, to)] = t.start + g;
  if (options_.duplex == Duplex::half) {
    send_free_[static_cast<std::size_t>(from)] = t.start + os;
    send_free_[static_cast<std::size_t>(to)] = t.finish;
  } else {
    send_free_[static_cast<std::size_t>(from)] = t.start + os;
    recv_free_[static_cast<std::size_t>(to)] = t.finish;
  }
  for (int d : blocks) {
    double& h = have_[static_cast<std::size_t>(d) * static_cast<std::size_t>(hosts_) +
                      static_cast<std::size_t>(to)];
    h = std::min(h, t.finish);
  }
  makespan_ = std::max(makespan_, t.finish);
  return t;
}

}  // namespace bgl::collectives::wide_area
