#include "bgl/pkt/header.hpp"

#include <cstdio>

namespace bgl::pkt {

std::uint8_t PacketHeader::compute_check() const {
  std::uint8_t bytes[7];
  std::memcpy(bytes, this, sizeof bytes);
  std::uint8_t c = 0x5a;
  for (std::uint8_t b : bytes) c ^= b;
  return c;
}

std::optional<std::string> PacketHeader::validate(const torus::Shape& shape, int groups) const {
  if (check != compute_check()) return "header check byte mismatch";
  if (chunks < 1 || chunks > kMaxPacketBytes / kChunkBytes) return "size is not 1..8 chunks";
  if (payload_bytes > packet_bytes() - kHeaderBytes) return "payload larger than the packet";
  if (!shape.contains(destination())) return "destination outside the partition";
  if (dest_group >= groups) return "FIFO group out of range";
  if (deposit() && (adaptive() || ((flags >> kLineDirShift) & 7u) >= torus::kDirections))
    return "invalid deposit-bit line";
  return std::nullopt;
}

std::string PacketHeader::describe() const {
  char text[160];
  std::snprintf(text, sizeof text,
                "dest=(%u,%u,%u) group=%u flags=0x%02x chunks=%u payload=%u dispatch=%u source=%u "
                "word=%u",
                dest[0], dest[1], dest[2], dest_group, flags, chunks, payload_bytes, dispatch,
                source_rank(), word);
  return text;
}

}  // namespace bgl::pkt
