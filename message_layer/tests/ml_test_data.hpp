#pragma once
// Message contents for the message layer's tests, shared by the in-process unit tests and the task
// programs run by bglrun: a deterministic pattern (byte i of the message with key k), a checksum,
// and buffers placed at a chosen offset from a 32-byte boundary with guard bytes on both sides, so
// that an overflow or underflow of the destination is detected.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <span>
#include <vector>

namespace bgl::message_layer::test {

// The offsets from a 32-byte boundary that alignment tests place buffers at.
inline constexpr std::array<std::size_t, 7> kAlignments = {0, 1, 3, 7, 15, 16, 31};

inline std::uint64_t mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// A key that names one message: its source, destination and number.
inline std::uint64_t message_key(std::uint32_t source, std::uint32_t dest, std::uint64_t seq) {
  return mix64((std::uint64_t{source} << 40) ^ (std::uint64_t{dest} << 20) ^ seq);
}

// Byte i of the message with `key` is byte (i % 8) of mix64(key + i / 8).
inline void fill_pattern(std::span<std::byte> out, std::uint64_t key, std::size_t first_byte = 0) {
  std::byte* p = out.data();
  std::size_t left = out.size();
  std::size_t pos = first_byte;
  if (left == 0) return;
  if (const std::size_t skip = pos % 8; skip != 0) {  // the first, partial word
    const std::uint64_t word = mix64(key + pos / 8);
    const std::size_t n = std::min<std::size_t>(8 - skip, left);
    std::memcpy(p, reinterpret_cast<const std::byte*>(&word) + skip, n);
    p += n, pos += n, left -= n;
  }
  for (; left >= 8; p += 8, pos += 8, left -= 8) {
    const std::uint64_t word = mix64(key + pos / 8);
    std::memcpy(p, &word, 8);
  }
  if (left > 0) {
    const std::uint64_t word = mix64(key + pos / 8);
    std::memcpy(p, &word, left);
  }
}

inline constexpr std::size_t kNoMismatch = ~std::size_t{0};

// The first byte of `data` that differs from the pattern (kNoMismatch when none does).
inline std::size_t find_mismatch(std::span<const std::byte> data, std::uint64_t key,
                                 std::size_t first_byte = 0) {
  std::array<std::byte, 65536> expected;
  for (std::size_t done = 0; done < data.size();) {
    const std::size_t n = std::min(expected.size(), data.size() - done);
    fill_pattern({expected.data(), n}, key, first_byte + done);
    if (std::memcmp(expected.data(), data.data() + done, n) != 0) {
      for (std::size_t i = 0; i < n; ++i)
        if (expected[i] != data[done + i]) return done + i;
    }
    done += n;
  }
  return kNoMismatch;
}

// A 64-bit checksum of any byte string (FNV-1a over 8-byte words, then the tail and the length).
inline std::uint64_t checksum(std::span<const std::byte> data) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  constexpr std::uint64_t kPrime = 0x100000001b3ULL;
  std::size_t i = 0;
  for (; i + 8 <= data.size(); i += 8) {
    std::uint64_t w;
    std::memcpy(&w, data.data() + i, 8);
    h = (h ^ w) * kPrime;
  }
  for (; i < data.size(); ++i)
    h = (h ^ static_cast<std::uint8_t>(data[i])) * kPrime;
  return mix64(h ^ data.size());
}

// `bytes` bytes starting `offset` bytes past a 32-byte boundary, with guard bytes before and after.
// The contents are left uninitialised (a 1 GiB buffer should not be written twice).
class GuardedBuffer {
 public:
  static constexpr std::size_t kGuard = 64;
  static constexpr std::byte kGuardByte{0xa5};

  GuardedBuffer() = default;
  GuardedBuffer(std::size_t bytes, std::size_t offset) : bytes_(bytes), offset_(offset) {
    const std::size_t total = kGuard + offset + bytes + kGuard;
    storage_.reset(new (std::align_val_t{64}) std::byte[total]);
    std::memset(storage_.get(), static_cast<int>(kGuardByte), kGuard + offset);
    std::memset(storage_.get() + kGuard + offset + bytes, static_cast<int>(kGuardByte), kGuard);
  }

  std::span<std::byte> span() const { return {data(), bytes_}; }
  std::byte* data() const { return storage_ ? storage_.get() + kGuard + offset_ : nullptr; }
  std::size_t size() const { return bytes_; }
  std::size_t offset() const { return offset_; }
  // True when nothing outside span() was written.
  bool guards_intact() const {
    if (!storage_) return true;
    const std::byte* s = storage_.get();
    for (std::size_t i = 0; i < kGuard + offset_; ++i)
      if (s[i] != kGuardByte) return false;
    for (std::size_t i = 0; i < kGuard; ++i)
      if (s[kGuard + offset_ + bytes_ + i] != kGuardByte) return false;
    return true;
  }
  void fill(std::uint64_t key) const { fill_pattern(span(), key); }
  void clear(std::byte value = std::byte{0}) const {
    if (bytes_) std::memset(data(), static_cast<int>(value), bytes_);
  }

 private:
  struct Delete {
    void operator()(std::byte* p) const { ::operator delete[](p, std::align_val_t{64}); }
  };
  std::unique_ptr<std::byte[], Delete> storage_;
  std::size_t bytes_ = 0;
  std::size_t offset_ = 0;
};

// The sizes that probe every packet boundary of the protocols for a user header of `header`
// bytes: 0, 1, the one-packet capacity +-1, 239..241, the eager first packet plus k data packets
// (240 bytes each) +-1, rendezvous chunks (236 bytes each) +-1, and the default eager limit +-1.
inline std::vector<std::size_t> boundary_sizes(std::size_t header, std::size_t max_bytes) {
  const std::size_t one = 240 - 12 - header;
  std::vector<std::size_t> s = {0, 1, one - 1, one, one + 1, 239, 240, 241};
  for (std::size_t k : {1u, 2u, 5u}) {
    for (std::size_t base : {one + 240 * k, 240 * (k + 1), 236 * (k + 1)}) {
      s.push_back(base - 1);
      s.push_back(base);
      s.push_back(base + 1);
    }
  }
  for (std::size_t b : {std::size_t{4096}, std::size_t{16383}, std::size_t{16384},
                        std::size_t{16385}, std::size_t{65536 + 7}})
    s.push_back(b);
  std::sort(s.begin(), s.end());
  s.erase(std::unique(s.begin(), s.end()), s.end());
  std::erase_if(s, [&](std::size_t b) { return b > max_bytes; });
  return s;
}

}  // namespace bgl::message_layer::test
