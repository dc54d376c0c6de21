#pragma once
// Virtual-node mode's virtual FIFOs (seed 004, "virtual torus device"): per node one ring from
// task 0 to task 1 and one back, in the node's scratchpad. Each has exactly one producer and one
// consumer, which is what boost::lockfree::spsc_queue guarantees; with a compile-time capacity its
// storage is inline and its indices are integers, so it is valid in memory shared between
// processes mapped at different addresses.
#include <boost/lockfree/spsc_queue.hpp>

#include "bgl/packet_layer/header.hpp"
#include "bgl/virtual_time/clock.hpp"

namespace bgl::packet_layer {

inline constexpr std::size_t kVirtualFifoPackets = 128;

// A packet with its virtual-time stamp (set only with virtual time on).
struct VirtualPacket {
  Packet packet;
  virtual_time::Stamp stamp;
};

using VirtualFifo =
    boost::lockfree::spsc_queue<VirtualPacket, boost::lockfree::capacity<kVirtualFifoPackets>>;

}  // namespace bgl::packet_layer
