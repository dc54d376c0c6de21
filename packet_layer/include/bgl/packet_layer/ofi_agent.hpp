#pragma once
// The host side of the libfabric backend: one agent per host (a thread of bglrun) owns the host's
// libfabric endpoint (FI_EP_RDM; tcp;ofi_rxm unless FI_PROVIDER says otherwise) and
//   - drains the local tasks' outbound rings, batching packets per destination host, and sends
//     them when it holds credits for that host (backpressure: without credits the packets wait in
//     the rings, and then in the tasks' injection FIFOs);
//   - receives batches, validates every record (sizes, destination node on this host, FIFO group
//     and class, header check) before it touches the segment, logs and counts rejections, and
//     deposits packets into reception FIFOs in arrival order per FIFO, returning credits as the
//     FIFOs accept them;
//   - carries the local tasks' remote stores (one-sided puts into another host's replica of a
//     segment region, remote_store.hpp) under credits of their own, and validates and applies the
//     inbound ones;
//   - takes part in the job barrier (and carries the bootstrap allgather's slots) across hosts;
//   - watches the other hosts (heartbeats, send errors): a host that disappears is a fault that
//     ends the job with a clear error.
// Order: one message stream per pair of hosts in send order (FI_ORDER_SAS, checked by sequence
// numbers), one queue per reception FIFO at the receiver, so packets of a (source, destination,
// injection FIFO) keep their order; adaptive routing still spreads packets over FIFOs.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "bgl/job_runtime/placement.hpp"
#include "bgl/packet_layer/machine.hpp"

namespace bgl::packet_layer {

struct OfiOptions {
  std::string provider = "tcp;ofi_rxm";  // FI_PROVIDER
  std::string progress = "default";      // BGL_OFI_PROGRESS: default | manual | auto
  std::uint32_t credits = 256;           // BGL_OFI_CREDITS: packets in flight per pair of hosts
  std::uint32_t batch = 32;              // BGL_OFI_BATCH: packets per message at most
  std::chrono::microseconds sleep{50};   // BGL_OFI_SLEEP_US: an idle agent's nap (0: spin)
  // BGL_OFI_SPIN_US: how long an idle agent keeps polling after its last work; unset: 100 us
  // when the job's polling threads fit this machine's cores (Job::busy_threads), else 0.
  std::optional<std::chrono::microseconds> spin;
  std::chrono::milliseconds heartbeat{200};
  std::chrono::milliseconds timeout{10'000};  // BGL_OFI_TIMEOUT_MS: silence that means dead

  static OfiOptions from_environment();  // ConfigError for malformed values
};

struct OfiStats {
  std::uint64_t packets_sent = 0, messages_sent = 0, bytes_sent = 0;
  std::uint64_t packets_received = 0, messages_received = 0;
  std::uint64_t rejected = 0;       // inbound records that failed validation
  std::uint64_t credit_stalls = 0;  // a batch waited for credits
  std::uint64_t fifo_stalls = 0;    // an inbound packet waited for a full reception FIFO
  std::uint64_t stores_sent = 0, stores_applied = 0;  // remote stores (remote_store.hpp)
};

// Virtual time: a host's slowest task at the end (rank -1: none published a clock).
struct SlowestTask {
  std::uint64_t cycles = 0;
  int rank = -1;
};

class OfiAgent {
 public:
  // Opens the fabric and the endpoint bound to this host's address from the placement.
  OfiAgent(const Machine& machine, const job_runtime::Placement& placement, OfiOptions options);
  ~OfiAgent();
  OfiAgent(const OfiAgent&) = delete;
  OfiAgent& operator=(const OfiAgent&) = delete;

  // This endpoint's libfabric address, to publish to the other hosts (before start()).
  std::vector<std::byte> address() const;
  // Every host's address in host order (this host's included); then starts the agent thread.
  void start(const std::vector<std::vector<std::byte>>& addresses);
  // A description of what went wrong across hosts (a host disappeared or failed, a protocol
  // error), once there is one. Thread-safe.
  std::optional<std::string> fault() const;
  // The local tasks have ended with `status`: tells the other hosts and waits until every host
  // has said so too (or a fault). Returns the first non-zero status reported by another host, or
  // 0; a fault is reported through fault().
  int finish(int status);
  OfiStats stats() const;
  // The eventfd that wakes the sleeping agent (job_runtime/agent_wake.hpp), for the tasks to
  // inherit (close-on-exec is set: the launcher clears it in each task).
  int wake_fd() const;
  // Virtual time, after finish(): every other host's slowest task, as its farewell reported it
  // (its tasks' clocks published by then), so that host 0 can predict the whole job's time.
  std::vector<SlowestTask> other_hosts_slowest() const;
  // Provider, fabric, domain, address. Before start(): the endpoint is the agent's afterwards.
  std::string describe() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Hex text of an address (for PMI's key-value store) and back; from_hex throws ConfigError.
std::string to_hex(const std::vector<std::byte>& bytes);
std::vector<std::byte> from_hex(const std::string& text);

}  // namespace bgl::packet_layer
