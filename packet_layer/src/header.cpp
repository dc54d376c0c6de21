#include "bgl/packet_layer/header.hpp"

#include <cstdio>

namespace bgl::packet_layer {

PacketHeader::Problem PacketHeader::validate(const torus_emu::Shape& shape, int groups) const {
  if (check != compute_check()) return Problem::check_byte;
  if (chunks < 1 || chunks > kMaxPacketBytes / kChunkBytes) return Problem::size;
  if (payload_bytes > packet_bytes() - kHeaderBytes) return Problem::payload_size;
  if (!shape.contains(destination())) return Problem::destination;
  if (dest_group >= groups) return Problem::group;
  if (deposit() && (adaptive() || ((flags >> kLineDirShift) & 7u) >= torus_emu::kDirections))
    return Problem::deposit;
  return Problem::none;
}

std::string_view to_string(PacketHeader::Problem p) {
  switch (p) {
    case PacketHeader::Problem::none:
      return "well formed";
    case PacketHeader::Problem::check_byte:
      return "header check byte mismatch";
    case PacketHeader::Problem::size:
      return "size is not 1..8 chunks";
    case PacketHeader::Problem::payload_size:
      return "payload larger than the packet";
    case PacketHeader::Problem::destination:
      return "destination outside the partition";
    case PacketHeader::Problem::group:
      return "FIFO group out of range";
    case PacketHeader::Problem::deposit:
      return "invalid deposit-bit line";
    case PacketHeader::Problem::wrong_node:
      return "packet for another node";
    case PacketHeader::Problem::wrong_group:
      return "packet for another FIFO group";
  }
  return "?";
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

}  // namespace bgl::packet_layer
