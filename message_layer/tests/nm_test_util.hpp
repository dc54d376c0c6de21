#pragma once
// Shared pieces of the node-mode tests (nm_*): message contents (a deterministic pattern per
// message key), guarded buffers placed at a chosen offset from a 32-byte boundary, scatter lists,
// and the expected-eligibility rule of the coprocessor's communication unit. Used by the in-process
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

#include "bgl/msg/protocol.hpp"

namespace bgl::msg::nm {

// Offsets from a 32-byte boundary that the alignment tests use (issue 5).
inline constexpr std::array<std::size_t, 7> kOffsets = {0, 1, 3, 7, 15, 16, 31};

inline std::uint64_t mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

inline std::uint64_t key_of(std::uint32_t source, std::uint32_t dest, std::uint64_t seq) {
  return mix64((std::uint64_t{source} << 44) ^ (std::uint64_t{dest} << 24) ^ seq);
}

// Byte i of the message with `key` is byte (i % 8) of mix64(key + i / 8).
inline void fill(std::span<std::byte> out, std::uint64_t key, std::size_t first = 0) {
  std::size_t pos = first;
  std::size_t i = 0;
  while (i < out.size()) {
    const std::uint64_t word = mix64(key + pos / 8);
    const std::size_t skip = pos % 8;
    const std::size_t n = std::min<std::size_t>(8 - skip, out.size() - i);
    std::memcpy(out.data() + i, reinterpret_cast<const std::byte*>(&word) + skip, n);
    i += n;
    pos += n;
  }
}

inline constexpr std::size_t kNoMismatch = ~std::size_t{0};

// The first byte of `data` that differs from the pattern of `key` (kNoMismatch if none).
inline std::size_t mismatch(std::span<const std::byte> data, std::uint64_t key,
                            std::size_t first = 0) {
  std::vector<std::byte> expected(std::min<std::size_t>(data.size(), 1u << 16));
  for (std::size_t done = 0; done < data.size();) {
    const std::size_t n = std::min(expected.size(), data.size() - done);
    fill({expected.data(), n}, key, first + done);
    if (std::memcmp(expected.data(), data.data() + done, n) != 0)
      for (std::size_t i = 0; i < n; ++i)
        if (expected[i] != data[done + i]) return done + i;
    done += n;
  }
  return kNoMismatch;
}

// FNV-1a over 8-byte words, then the tail and the length.
inline std::uint64_t checksum(std::span<const std::byte> data) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  std::size_t i = 0;
  for (; i + 8 <= data.size(); i += 8) {
    std::uint64_t w;
    std::memcpy(&w, data.data() + i, 8);
    h = (h ^ w) * 0x100000001b3ULL;
  }
  for (; i < data.size(); ++i)
    h = (h ^ static_cast<std::uint8_t>(data[i])) * 0x100000001b3ULL;
  return mix64(h ^ data.size());
}

// `bytes` bytes starting `offset` bytes past a 64-byte (hence 32-byte) boundary, with guard bytes
// on both sides. Contents are uninitialised until fill()/clear().
class Buffer {
 public:
  static constexpr std::size_t kGuard = 64;
  static constexpr std::byte kGuardByte{0x5a};

  Buffer() = default;
  Buffer(std::size_t bytes, std::size_t offset) : bytes_(bytes), offset_(offset) {
    const std::size_t total = kGuard + offset + bytes + kGuard;
    storage_.reset(new (std::align_val_t{64}) std::byte[total]);
    std::memset(storage_.get(), static_cast<int>(kGuardByte), kGuard + offset);
    std::memset(storage_.get() + kGuard + offset + bytes, static_cast<int>(kGuardByte), kGuard);
  }
  std::byte* data() const { return storage_ ? storage_.get() + kGuard + offset_ : nullptr; }
  std::size_t size() const { return bytes_; }
  std::span<std::byte> span() const { return {data(), bytes_}; }
  void fill(std::uint64_t key, std::size_t first = 0) const { nm::fill(span(), key, first); }
  void clear(std::byte v = std::byte{0xee}) const {
    if (bytes_) std::memset(data(), static_cast<int>(v), bytes_);
  }
  bool guards_intact() const {
    if (!storage_) return true;
    const std::byte* s = storage_.get();
    for (std::size_t i = 0; i < kGuard + offset_; ++i)
      if (s[i] != kGuardByte) return false;
    for (std::size_t i = 0; i < kGuard; ++i)
      if (s[kGuard + offset_ + bytes_ + i] != kGuardByte) return false;
    return true;
  }

 private:
  struct Delete {
    void operator()(std::byte* p) const { ::operator delete[](p, std::align_val_t{64}); }
  };
  std::unique_ptr<std::byte[], Delete> storage_;
  std::size_t bytes_ = 0;
  std::size_t offset_ = 0;
};

// A receive destination: one buffer or a scatter list of guarded pieces.
struct Destination {
  Buffer buffer;
  std::vector<Buffer> pieces;
  std::vector<iovec> iov;

  static Destination contiguous(std::size_t bytes, std::size_t offset) {
    Destination d;
    d.buffer = Buffer(bytes, offset);
    d.buffer.clear();
    return d;
  }
  static Destination scatter(const std::vector<std::size_t>& sizes, std::size_t offset) {
    Destination d;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      auto& p = d.pieces.emplace_back(sizes[i], (offset + 5 * i) % 32);
      p.clear();
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
    const auto check = [&](const Buffer& b) {
      for (std::size_t i = 0; i < b.size(); ++i, ++at)
        if (at >= bytes && b.data()[i] != std::byte{0xee}) return false;
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

}  // namespace bgl::msg::nm
