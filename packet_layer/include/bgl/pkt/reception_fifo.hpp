#pragma once
// A bounded, lock-free, multi-producer single-consumer packet FIFO that lives in shared memory.
//
// Why not boost::lockfree::queue: its nodes are linked through a freelist whose storage is obtained
// from a process-local allocator and addressed by pointers (or, fixed-sized, by indices into an
// array whose base pointer is a member), so an instance is not valid in a second process that maps
// the segment at another address. This is D. Vyukov's bounded MPMC ring (one sequence number per
// slot, producers claim slots with a CAS on the tail), specialised to one consumer: all state is
// offsets and integers, so it is position independent. Producers never wait for each other except
// for the CAS; a full ring is reported, never overwritten.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>

#include "bgl/pkt/header.hpp"

namespace bgl::pkt {

// Shared part of one FIFO: placed at the start of its region, followed by the sequence array and
// the slots.
struct FifoControl {
  alignas(64) std::atomic<std::uint64_t> tail{0};  // producers
  std::atomic<std::uint64_t> full_events{0};       // producers, rare
  alignas(64) std::atomic<std::uint64_t> head{0};  // consumer (read by statistics)
  std::atomic<std::uint64_t> high_water{0};        // consumer
};

class ReceptionFifo {
 public:
  static std::size_t region_bytes(std::uint32_t capacity);
  // Initialises a region of region_bytes(capacity) bytes; capacity is a power of two.
  static void format(std::byte* region, std::uint32_t capacity);

  ReceptionFifo() = default;
  ReceptionFifo(std::byte* region, std::uint32_t capacity);
  // Called once by the consuming task before front()/pop(): producers never touch the head.
  void attach_consumer() { head_ = control_->head.load(std::memory_order_acquire); }

  // Producer: copies the header and the payload (`payload` then `more`) into a free slot. False
  // when the FIFO is full.
  bool try_push(const PacketHeader& header, std::span<const std::byte> payload,
                std::span<const std::byte> more = {});

  // Consumer: the packet at the head, or nullptr when none is (completely) published yet.
  const Packet* front() const {
    const std::uint64_t pos = head_;
    if (seq_[pos & mask_].load(std::memory_order_acquire) != pos + 1) return nullptr;
    return &slots_[pos & mask_];
  }
  void pop();

  std::uint32_t capacity() const { return mask_ + 1; }
  const FifoControl& control() const { return *control_; }

 private:
  FifoControl* control_ = nullptr;
  std::atomic<std::uint64_t>* seq_ = nullptr;
  Packet* slots_ = nullptr;
  std::uint32_t mask_ = 0;
  std::uint64_t head_ = 0;  // consumer's private copy of control_->head
};

}  // namespace bgl::pkt
