#pragma once
// Shared pieces of the node-mode tests (node_modes_*), over the message-layer tests' data helpers
// (ml_test_data.hpp): receive destinations (one guarded buffer or a scatter list), the
// eligibility rule of the coprocessor's communication unit. Used by the in-process
// unit tests and by the task programs that bglrun runs.
#include <sys/uio.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "bgl/message_layer/protocol.hpp"
#include "ml_test_data.hpp"

namespace bgl::message_layer::node_modes {

// What clear() leaves in a receive buffer: bytes a truncated receive must not touch.
inline constexpr std::byte kUnwritten{0xee};

// A receive destination: one buffer or a scatter list of guarded pieces.
struct Destination {
  test::GuardedBuffer buffer;
  std::vector<test::GuardedBuffer> pieces;
  std::vector<iovec> iov;

  static Destination contiguous(std::size_t bytes, std::size_t offset) {
    Destination d;
    d.buffer = test::GuardedBuffer(bytes, offset);
    d.buffer.clear(kUnwritten);
    return d;
  }
  static Destination scatter(const std::vector<std::size_t>& sizes, std::size_t offset) {
    Destination d;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      auto& p = d.pieces.emplace_back(sizes[i], (offset + 5 * i) % 32);
      p.clear(kUnwritten);
    }
    for (auto& p : d.pieces)
      d.iov.push_back({p.data(), p.size()});
    return d;
  }
  bool is_scatter() const { return !iov.empty() || !pieces.empty(); }
  std::size_t capacity() const {
    if (!is_scatter()) return buffer.size();
    std::size_t n = 0;
    for (const auto& p : pieces)
      n += p.size();
    return n;
  }
  // The first `bytes` delivered bytes, flattened.
  std::vector<std::byte> contents(std::size_t bytes) const {
    std::vector<std::byte> all;
    if (!is_scatter()) {
      all.assign(buffer.data(), buffer.data() + std::min(bytes, buffer.size()));
    } else {
      for (const auto& p : pieces) {
        const std::size_t n = std::min(p.size(), bytes - all.size());
        all.insert(all.end(), p.data(), p.data() + n);
        if (all.size() == bytes) break;
      }
    }
    return all;
  }
  // Whether bytes beyond the delivered prefix are untouched (truncation and short messages).
  bool tail_untouched(std::size_t bytes) const {
    std::size_t at = 0;
    const auto check = [&](const test::GuardedBuffer& b) {
      for (std::size_t i = 0; i < b.size(); ++i, ++at)
        if (at >= bytes && b.data()[i] != kUnwritten) return false;
      return true;
    };
    if (!is_scatter()) return check(buffer);
    for (const auto& p : pieces)
      if (!check(p)) return false;
    return true;
  }
  bool guards_intact() const {
    if (!buffer.guards_intact()) return false;
    for (const auto& p : pieces)
      if (!p.guards_intact()) return false;
    return true;
  }
};

// The rule the coprocessor's communication unit must follow (docs/MESSAGE_LAYER.md, node modes):
// a rendezvous message is received by the coprocessor exactly when the job is in coprocessor mode
// with the communication unit enabled, the message has data, and its destination is one
// contiguous, 32-byte aligned buffer that holds all of it.
inline bool coprocessor_should_receive(bool coprocessor_mode, bool unit_enabled, bool rendezvous,
                                       std::size_t bytes, bool contiguous, const void* buffer,
                                       std::size_t capacity) {
  return coprocessor_mode && unit_enabled && rendezvous && bytes > 0 && contiguous &&
         capacity >= bytes && reinterpret_cast<std::uintptr_t>(buffer) % 32 == 0;
}

// Rendezvous data packets of a message of `bytes` bytes (236 data bytes per packet).
inline std::uint64_t rendezvous_packets(std::uint64_t bytes) {
  return (bytes + 235) / 236;
}

// One message of the coprocessor-path tests: a rendezvous (unless `protocol` says otherwise) into
// a destination that does or does not meet the communication unit's conditions.
struct PathCase {
  std::string name;
  std::size_t bytes;
  std::size_t offset;                   // receive buffer offset from a 32-byte boundary
  std::optional<std::size_t> capacity;  // contiguous buffer size (default: bytes)
  std::vector<std::size_t> scatter;     // scatter list piece sizes (empty: contiguous)
  bool unexpected = false;              // answered later(), accepted afterwards
  std::optional<Protocol> protocol = Protocol::rendezvous;  // nullopt: the layer's choice

  Destination destination() const {
    return scatter.empty() ? Destination::contiguous(capacity.value_or(bytes), offset)
                           : Destination::scatter(scatter, offset);
  }
};

inline std::vector<PathCase> path_cases() {
  std::vector<PathCase> v;
  // (a) eligible: aligned, contiguous, big enough
  for (std::size_t b : {std::size_t{1}, std::size_t{235}, std::size_t{236}, std::size_t{237},
                        std::size_t{4096}, std::size_t{65537}, std::size_t{1} << 20})
    v.push_back({"aligned_" + std::to_string(b), b, 0, {}, {}});
  v.push_back({"aligned_larger_buffer", 10000, 0, 10000 + 77, {}});
  v.push_back({"aligned_auto_rendezvous", 100000, 0, {}, {}, false, std::nullopt});
  v.push_back({"aligned_unexpected_accepted", 30000, 0, {}, {}, true});
  // (b) not eligible: misaligned, scatter lists, truncation, no data, other protocols
  for (std::size_t off = 1; off < 32; ++off)
    v.push_back({"misaligned_" + std::to_string(off), 5000 + off, off, {}, {}});
  v.push_back({"misaligned_unexpected_accepted", 30000, 8, {}, {}, true});
  v.push_back({"iov_one_aligned_piece", 20000, 0, {}, {20000}});
  v.push_back({"iov_pieces", 20000, 0, {}, {1, 4095, 236, 15668}});
  v.push_back({"iov_unexpected_accepted", 20000, 0, {}, {10000, 10000}, true});
  v.push_back({"truncated_by_one", 20000, 0, 19999, {}});
  v.push_back({"truncated_to_half", 20000, 0, 10000, {}});
  v.push_back({"truncated_to_nothing", 20000, 0, 0, {}});
  v.push_back({"zero_bytes", 0, 0, {}, {}});
  v.push_back({"zero_bytes_unexpected", 0, 0, {}, {}, true});
  v.push_back({"eager_aligned", 5000, 0, {}, {}, false, Protocol::eager});
  v.push_back({"adaptive_eager_aligned", 5000, 0, {}, {}, false, Protocol::adaptive_eager});
  v.push_back({"one_packet_aligned", 100, 0, {}, {}, false, Protocol::one_packet});
  return v;
}

}  // namespace bgl::message_layer::node_modes
