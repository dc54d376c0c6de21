#pragma once
// The per-pair transfer model that Min3 schedules with and that every grid
// schedule (Min3 and its baselines) is timed with. Links are directional; a host is single-port,
// half-duplex (one send or one receive at a time) or full-duplex (one send and one receive).
#include <cstddef>
#include <optional>
#include <span>
#include <vector>

#include "bgl/collectives/wide_area/host_network.hpp"

namespace bgl::collectives::wide_area {

enum class Duplex { half, full };

struct ModelOptions {
  Duplex duplex = Duplex::full;
  // The paper's equations never require the sender to hold the block already; true drops the
  // causality term (Have) for comparisons with the literal equations.
  bool paper_literal = false;
  // Send overhead os and gap g in seconds. Unset: a single-port host is busy sending for the whole
  // transfer and a link carries one message at a time (os = g = transfer time), the reading under
  // which the paper's Figure 1 yields 4 versus 2 time units.
  std::optional<double> send_overhead;
  std::optional<double> gap;
};

struct Timing {
  double start = 0;
  double finish = 0;
};

class TransferModel {
 public:
  // `blocks` blocks of `block_bytes` bytes each; block d is initially held only by host
  // `owner[d]` (by default host d, the allgather case).
  TransferModel(const HostNetwork& net, ModelOptions options, int blocks, std::size_t block_bytes,
                std::vector<int> owner = {});

  const HostNetwork& network() const { return *net_; }
  const ModelOptions& options() const { return options_; }
  std::size_t block_bytes() const { return block_bytes_; }
  int blocks() const { return blocks_; }

  // Eq. (1): latency + bytes / bandwidth.
  double transfer_time(std::size_t bytes, int from, int to) const;

  // Eqs. (2)/(3) for a message carrying `blocks` from `from` to `to`, without committing.
  Timing evaluate(std::span<const int> blocks, int from, int to) const;
  Timing evaluate(int block, int from, int to) const { return evaluate({&block, 1}, from, to); }
  // Evaluates and commits (updates link, host and Have times).
  Timing commit(std::span<const int> blocks, int from, int to);
  Timing commit(int block, int from, int to) { return commit({&block, 1}, from, to); }

  // When `host` holds `block` (+inf if not yet), and the latest such time over everything.
  double have(int block, int host) const;
  double makespan() const { return makespan_; }

 private:
  std::size_t cell(int a, int b) const {
    return static_cast<std::size_t>(a) * static_cast<std::size_t>(hosts_) +
           static_cast<std::size_t>(b);
  }
  const HostNetwork* net_;
  ModelOptions options_;
  int hosts_;
  int blocks_;
  std::size_t block_bytes_;
  std::vector<double> link_free_;  // [from][to]
  std::vector<double> send_free_;  // per host; the only host variable in half-duplex mode
  std::vector<double> recv_free_;  // per host (full duplex)
  std::vector<double> have_;       // [block][host]
  double makespan_ = 0;
};

}  // namespace bgl::collectives::wide_area
