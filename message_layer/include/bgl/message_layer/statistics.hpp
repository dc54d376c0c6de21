#pragma once
#include <array>
#include <cstdint>
#include <string>

#include "bgl/message_layer/protocol.hpp"
#include "bgl/virtual_time/latency_histogram.hpp"

namespace bgl::message_layer {

struct ProtocolCounters {
  std::uint64_t messages_sent = 0;
  std::uint64_t packets_sent = 0;
  std::uint64_t bytes_sent = 0;  // user data bytes
  std::uint64_t messages_received = 0;
  std::uint64_t packets_received = 0;
  std::uint64_t bytes_received = 0;
};

struct Statistics {
  std::array<ProtocolCounters, kProtocols> protocol{};
  std::uint64_t control_packets_sent = 0;  // acks, fins, tokens
  std::uint64_t unexpected_messages = 0;
  std::uint64_t unexpected_depth = 0;  // messages waiting for accept() now
  std::uint64_t unexpected_depth_max = 0;
  std::uint64_t pool_bytes_limit = 0;  // this task's share (half the node's in virtual-node mode)
  std::uint64_t pool_bytes_in_use = 0;
  std::uint64_t pool_bytes_max = 0;
  std::uint64_t pool_waits = 0;        // an unexpected message waited (backpressure) for pool space
  std::uint64_t table_waits = 0;       // a first packet waited for a receive-table entry
  std::uint64_t held_packets = 0;      // packets in the stall queues now
  std::uint64_t held_packets_max = 0;  // ... at most
  std::uint64_t hold_full_waits = 0;   // a packet stayed in its FIFO: the stall queues were full
  std::uint64_t early_adaptive_packets = 0;  // adaptive-eager data that overtook its first packet
  std::uint64_t early_adaptive_bytes = 0;    // ... kept now, waiting for their first packets
  std::uint64_t early_adaptive_bytes_max = 0;
  std::uint64_t malformed_packets = 0;     // a peer's packets discarded as inconsistent
  std::uint64_t token_waits = 0;           // a send waited for an adaptive-eager token
  std::uint64_t coprocessor_messages = 0;  // rendezvous data received by the coprocessor
  std::uint64_t coprocessor_packets = 0;
  std::uint64_t coherence_operations = 0;  // software-coherence steps after coprocessor receives
  // Virtual time only: per protocol, each received message's latency from its sender's post() to
  // its data being complete here, in cycles.
  std::array<virtual_time::LatencyHistogram, kProtocols> latency{};

  std::string to_json() const;
};

}  // namespace bgl::message_layer
