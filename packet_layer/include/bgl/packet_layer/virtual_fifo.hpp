#pragma once
// Virtual-node mode's virtual FIFOs (BG/L's virtual torus device): per node one ring from
// task 0 to task 1 and one back, in the node's scratchpad. Each has exactly one producer and one
// consumer, which is what boost::lockfree::spsc_queue guarantees; with a compile-time capacity its
// storage is inline and its indices are integers, so it is valid in memory shared between
// processes mapped at different addresses.
#include <array>
#include <atomic>
#include <boost/lockfree/spsc_queue.hpp>
#include <cstddef>
#include <cstdint>

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

// Virtual-node mode's shared cells: per node and direction, message buffers in the node's memory.
// The sending task copies a whole message into a free cell and announces it with a packet in the
// virtual FIFO; the receiving task copies it out and frees the cell. Two copies through memory both
// tasks see, as between the two cores of a BG/L node, without a system call or a round trip.
inline constexpr std::size_t kVirtualCells = 8;
inline constexpr std::size_t kVirtualCellBytes = 16 * 1024;

struct alignas(64) VirtualCell {
  // 0: free, the sender may fill it; 1: holds a message until the receiver has copied it out.
  // Zero-filled segment memory is a free cell.
  std::atomic<std::uint32_t> full;
  alignas(64) std::array<std::byte, kVirtualCellBytes> data;
};

struct VirtualCells {
  std::array<VirtualCell, kVirtualCells> cell;
};

}  // namespace bgl::packet_layer
