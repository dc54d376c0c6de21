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
//
// A slot's sequence number shares the slot's first cache line with the packet header (Vyukov's
// ring keeps them in separate arrays): the consumer that polls the sequence gets the header with
// the same transfer between cores, instead of a second transfer that can start only after the
// first. A slot is 320 bytes (the sequence, the packet, padding to a cache line), so a packet of up
// to 56 bytes (header and 40 payload bytes) arrives in a single cache line.
//
// Unlike Vyukov's ring, a slot's sequence number only says "published" (the position + 1 its
// producer wrote it for); which slots are free is said by the consumer's head, which producers
// read only when the free slots they last saw are used up (a cached limit, private to each
// producer's view of the FIFO). Reading a slot's sequence number before claiming it cost every
// packet a cache miss on the line the consumer had just read, and the consumer's store freeing
// the slot one more transfer; the sequence lines now only go from producer to consumer. The
// producer also prefetches the next slot for writing, so that its stores (and the claim's locked
// instruction, which waits for them) do not wait for the line's transfer.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "bgl/packet_layer/header.hpp"
#include "bgl/virtual_time/clock.hpp"

namespace bgl::packet_layer {

// Shared part of one FIFO: placed at the start of its region, followed by the slots.
struct FifoControl {
  alignas(64) std::atomic<std::uint64_t> tail{0};  // producers
  std::atomic<std::uint64_t> full_events{0};       // producers, rare
  // Consumer: positions before it are free (producers read it when their cached limit runs out).
  alignas(64) std::atomic<std::uint64_t> head{0};
  std::atomic<std::uint64_t> high_water{0};  // consumer
};

// One slot: its sequence number, then the packet, in the same cache line. With virtual time on,
// the packet's stamp (arrival and message origin on the emulated machine) follows it (written and
// read only then, so that without virtual time no further cache line is touched).
struct alignas(64) FifoSlot {
  std::atomic<std::uint64_t> seq;
  Packet packet;
  virtual_time::Stamp stamp;
};

class ReceptionFifo {
 public:
  // The consumer refreshes its high-water mark every this many packets: reading the producers'
  // tail costs a cache miss, too much to pay per packet.
  static constexpr std::uint64_t kHighWaterSampling = 32;
  // How many slots ahead of the one it fills a producer prefetches for writing.
  static constexpr std::uint64_t kPrefetchAhead = 4;

  static std::size_t region_bytes(std::uint32_t capacity);
  // Initialises a zero-filled region of region_bytes(capacity) bytes (as a new segment is);
  // capacity is a power of two.
  static void format(std::byte* region, std::uint32_t capacity);

  ReceptionFifo() = default;
  ReceptionFifo(std::byte* region, std::uint32_t capacity);
  // Called once by the consuming task before front()/pop(): producers never write the head.
  void attach_consumer() { head_ = control_->head.load(std::memory_order_acquire); }

  // Producer: copies the header and the payload (`payload` then `more`) into a free slot. False
  // when the FIFO is full. Inline (like pop()): it is most of the cost of sending a packet.
  bool try_push(const PacketHeader& header, std::span<const std::byte> payload,
                std::span<const std::byte> more = {}) {
    return push<false>(header, payload, more, {});
  }
  // try_push() of a packet with its virtual-time stamp.
  bool try_push_at(virtual_time::Stamp stamp, const PacketHeader& header,
                   std::span<const std::byte> payload, std::span<const std::byte> more = {}) {
    return push<true>(header, payload, more, stamp);
  }
  // The virtual-time stamp of a packet front() returned (with virtual time on).
  static virtual_time::Stamp stamp_of(const Packet& p) {
    return reinterpret_cast<const FifoSlot*>(reinterpret_cast<const std::byte*>(&p) -
                                             offsetof(FifoSlot, packet))
        ->stamp;
  }

 private:
  template <bool kTimed>
  bool push(const PacketHeader& header, std::span<const std::byte> payload,
            std::span<const std::byte> more, virtual_time::Stamp stamp) {
    HeaderWords words;
    std::memcpy(&words, &header, sizeof words);
    return push<kTimed>(words, payload, more, stamp);
  }

 public:
  // The two 8-byte words of a header (PacketHeader's bytes 0..7 and 8..15): a producer that builds
  // a header in registers stores it without a round trip through memory (reading a header built by
  // byte stores back as words waits for those stores, and they wait for the previous packet's).
  struct HeaderWords {
    std::uint64_t hardware, software;
  };
  bool try_push(HeaderWords header, std::span<const std::byte> payload,
                std::span<const std::byte> more = {}) {
    return push<false>(header, payload, more, {});
  }

 private:
  template <bool kTimed>
  bool push(HeaderWords header, std::span<const std::byte> payload, std::span<const std::byte> more,
            virtual_time::Stamp stamp) {
    std::uint64_t pos = control_->tail.load(std::memory_order_relaxed);
    do {
      if (pos >= limit_) [[unlikely]] {
        // Acquire: the consumer's reads of the slots it freed happen before our writes to them.
        limit_ = control_->head.load(std::memory_order_acquire) + mask_ + 1;
        if (pos >= limit_) {
          control_->full_events.fetch_add(1, std::memory_order_relaxed);
          return false;
        }
      }
    } while (!control_->tail.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed));
    FifoSlot* cell = &slots_[pos & mask_];
    std::byte* packet = reinterpret_cast<std::byte*>(&cell->packet);
    std::memcpy(packet, &header.hardware, 8);
    std::memcpy(packet + 8, &header.software, 8);
    Packet& slot = cell->packet;
    copy_packet_bytes(slot.payload.data(), payload.data(), payload.size());
    if (!more.empty())
      copy_packet_bytes(slot.payload.data() + payload.size(), more.data(), more.size());
    if constexpr (kTimed) cell->stamp = stamp;
    cell->seq.store(pos + 1, std::memory_order_release);
    // A slot this producer is likely to fill a few packets from now, if it is known to be free
    // (so the consumer is done with it and will not read it before it is published): its lines up
    // to the size of this packet, so that they are ours by the time we write them. A few packets
    // ahead, because taking a line from the other core takes longer than one packet.
    if (pos + kPrefetchAhead < limit_) {
      const auto* next =
          reinterpret_cast<const std::byte*>(&slots_[(pos + kPrefetchAhead) & mask_]);
      const std::size_t used =
          offsetof(FifoSlot, packet) + kHeaderBytes + payload.size() + more.size();
      for (std::size_t line = 0; line < used; line += 64)
        prefetch_for_write(next + line);
    }
    return true;
  }

  static void prefetch_for_write(const std::byte* p) {
#if defined(__x86_64__)
    asm volatile("prefetchw %0" : : "m"(*p));  // PREFETCHW: the line exclusive, ready to write
#else
    __builtin_prefetch(p, 1, 3);
#endif
  }

 public:
  // Consumer: the packet at the head, or nullptr when none is (completely) published yet.
  const Packet* front() const {
    const std::uint64_t pos = head_;
    const FifoSlot& cell = slots_[pos & mask_];
    if (cell.seq.load(std::memory_order_acquire) != pos + 1) return nullptr;
    return &cell.packet;
  }
  void pop() {
    const std::uint64_t pos = head_;
    // Sample the depth before freeing the slot: afterwards a producer may already reuse it, and the
    // depth would read one more than the FIFO can hold.
    if ((pos + 1) % kHighWaterSampling == 0) [[unlikely]] {
      const std::uint64_t depth = control_->tail.load(std::memory_order_relaxed) - pos;
      if (depth > control_->high_water.load(std::memory_order_relaxed))
        control_->high_water.store(depth, std::memory_order_relaxed);
    }
    head_ = pos + 1;
    // Release: our reads of the slot happen before a producer, having read this, refills it.
    control_->head.store(head_, std::memory_order_release);
  }

  std::uint32_t capacity() const {
    return mask_ + 1;
  }
  // For a watcher outside the job's tasks (the launcher), while producers and the consumer run:
  // what in the FIFO's indices and sequence numbers no run of the protocol can produce, or
  // nullptr. Reads tail, head, the slots' sequence numbers and tail again, in that order, so that
  // the checks hold for any interleaving with the tasks.
  const char* check_consistency() const;
  const FifoControl& control() const {
    return *control_;
  }

 private:
  FifoControl* control_ = nullptr;
  FifoSlot* slots_ = nullptr;
  std::uint32_t mask_ = 0;
  std::uint64_t head_ = 0;  // consumer's private copy of control_->head
  // Producer's private bound: positions below it were free when it last read the head.
  std::uint64_t limit_ = 0;
};

}  // namespace bgl::packet_layer
