#pragma once
// Writing a packet's data at its offset in a message's destination: one buffer, a scatter list, or
// the unexpected pool. Data beyond the destination's size is dropped (and the message reported as
// truncated by its shorter byte count).
#include <sys/uio.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <span>

namespace bgl::message_layer {

inline std::size_t copy_into(std::span<std::byte> dst, std::size_t offset,
                             std::span<const std::byte> src) {
  if (offset >= dst.size() || src.empty()) return 0;
  const std::size_t n = std::min(src.size(), dst.size() - offset);
  std::memcpy(dst.data() + offset, src.data(), n);
  return n;
}

// Calls piece(address, length, position) for the parts of the flattened list `iov` that cover
// [offset, offset + n); position counts from `offset`. Returns the bytes covered.
template <class Piece>
std::size_t for_each_piece(std::span<const iovec> iov, std::size_t offset, std::size_t n,
                           Piece&& piece) {
  std::size_t done = 0;
  for (const iovec& v : iov) {
    if (done == n) break;
    if (offset >= v.iov_len) {
      offset -= v.iov_len;
      continue;
    }
    const std::size_t k = std::min(v.iov_len - offset, n - done);
    piece(static_cast<std::byte*>(v.iov_base) + offset, k, done);
    done += k;
    offset = 0;
  }
  return done;
}

inline std::size_t scatter_into(std::span<const iovec> iov, std::size_t offset,
                                std::span<const std::byte> src) {
  return for_each_piece(iov, offset, src.size(), [&](std::byte* p, std::size_t k, std::size_t at) {
    std::memcpy(p, src.data() + at, k);
  });
}

// Gathers up to dst.size() bytes starting at `offset` of a gather list; returns the count.
inline std::size_t gather_from(std::span<const iovec> iov, std::size_t offset,
                               std::span<std::byte> dst) {
  return for_each_piece(iov, offset, dst.size(),
                        [&](const std::byte* p, std::size_t k, std::size_t at) {
                          std::memcpy(dst.data() + at, p, k);
                        });
}

inline std::size_t iov_bytes(std::span<const iovec> iov) {
  std::size_t n = 0;
  for (const iovec& v : iov)
    n += v.iov_len;
  return n;
}

}  // namespace bgl::message_layer
