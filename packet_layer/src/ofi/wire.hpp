#pragma once
// The messages agents exchange (docs/PACKETS.md, "Several hosts"). Hosts of one job run the same
// build on the same architecture, so fields travel in host byte order; every field is checked on
// arrival anyway, because a message from the network is untrusted input.
#include <cstddef>
#include <cstdint>

#include "bgl/packet_layer/header.hpp"
#include "bgl/packet_layer/machine.hpp"
#include "bgl/virtual_time/clock.hpp"

namespace bgl::packet_layer::wire {

inline constexpr std::uint32_t kMagic = 0x57474c42;  // "BGLW"
inline constexpr std::uint8_t kVersion = 3;
inline constexpr std::size_t kBufferBytes = 16384;

enum class Kind : std::uint8_t {
  data = 1,          // `count` packet records
  credit = 2,        // only returns credits
  exchange = 3,      // `count` exchange entries of the sender's tasks (barrier / allgather)
  barrier_done = 4,  // the sender's tasks all arrived at barrier generation `value` (virtual
                     // time: followed by their latest clock, 8 bytes)
  heartbeat = 5,
  bye = 6,    // the sender's tasks ended; `value` is its exit status, `count` 1 when it stopped
              // them because of another host's fault (virtual time: followed by a Slowest)
  store = 7,  // `count` store records (remote_store.hpp)
};

struct Header {
  std::uint32_t magic;
  std::uint8_t kind;
  std::uint8_t version;
  std::uint16_t src_host;
  std::uint32_t seq;      // per pair of hosts, in send order
  std::uint32_t count;    // records or entries that follow
  std::uint32_t credits;  // packets the sender deposited for the receiver since its last message
  std::uint32_t value;    // generation (barrier_done) or status (bye)
  std::uint32_t store_credits;  // stores the sender applied for the receiver since its last message
  std::uint32_t flags;          // kStamped: the job runs in virtual time
};

// Every message of a job in virtual time says so; packet records then carry their stamps.
inline constexpr std::uint32_t kStamped = 1;
static_assert(sizeof(Header) == 32);

// A packet record: this, then (virtual time) the packet's stamp, then the 16-byte header and
// payload_bytes payload, padded to 8 bytes.
struct Record {
  std::uint32_t node;   // the node whose reception FIFO gets the packet
  std::uint8_t group;   // FIFO group there
  std::uint8_t fifo;    // reception FIFO index 0..7
  std::uint16_t bytes;  // header + payload
};
static_assert(sizeof(Record) == 8);

constexpr std::size_t record_bytes(std::size_t payload, bool stamped = false) {
  return (sizeof(Record) + (stamped ? sizeof(virtual_time::Stamp) : 0) + kHeaderBytes + payload +
          7) /
         8 * 8;
}

// A store record: this, then `bytes` bytes, padded to 8 bytes.
struct StoreRecord {
  std::uint8_t region;
  std::uint8_t reserved;
  std::uint16_t bytes;
  std::uint32_t reserved2;
  std::uint64_t offset, word, value, bell;
};
static_assert(sizeof(StoreRecord) == 40);

constexpr std::size_t store_record_bytes(std::size_t bytes) {
  return (sizeof(StoreRecord) + bytes + 7) / 8 * 8;
}

// Virtual time: the sending host's slowest task at the end.
struct Slowest {
  static constexpr std::uint32_t kNone = ~std::uint32_t{0};
  std::uint64_t cycles = 0;
  std::uint32_t rank = kNone;
  std::uint32_t reserved = 0;
};
static_assert(sizeof(Slowest) == 16);

struct Exchange {
  std::uint32_t rank;
  std::uint32_t bytes;
  std::byte data[job_runtime::kExchangeBytes];
};

inline constexpr std::size_t kMaxExchangePerMessage =
    (kBufferBytes - sizeof(Header)) / sizeof(Exchange);

}  // namespace bgl::packet_layer::wire
