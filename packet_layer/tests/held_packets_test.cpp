// The packets a conservatively synchronised task holds: per FIFO in order of arrival, ties by
// source, one source's packets never overtaking each other, entries that stay put while held.
#include "bgl/packet_layer/held_packets.hpp"

#include <gtest/gtest.h>

#include <cstring>

namespace bgl::packet_layer {
namespace {

Packet from(std::uint32_t source, std::uint8_t tag) {
  Packet p{};
  p.header.source = {static_cast<std::uint8_t>(source), static_cast<std::uint8_t>(source >> 8),
                     static_cast<std::uint8_t>(source >> 16)};
  p.payload[0] = std::byte{tag};
  return p;
}

std::uint8_t tag_of(const Packet* p) {
  return std::to_integer<std::uint8_t>(p->payload[0]);
}

TEST(HeldPackets, EachFifoComesOutByArrivalThenSource) {
  HeldPackets held(8);
  held.add(2, from(5, 1), {300, 0});
  held.add(2, from(3, 2), {100, 0});
  held.add(2, from(6, 3), {200, 0});
  held.add(2, from(1, 4), {200, 0});  // the same arrival as tag 3: the lower source first
  held.add(4, from(7, 5), {50, 0});
  EXPECT_EQ(held.size(), 5u);
  EXPECT_EQ(tag_of(held.front(4)), 5);
  for (const int tag : {2, 4, 3, 1}) {
    ASSERT_NE(held.front(2), nullptr);
    EXPECT_EQ(tag_of(held.front(2)), tag);
    held.pop(2);
  }
  EXPECT_EQ(held.front(2), nullptr);
  EXPECT_EQ(HeldPackets::stamp_of(*held.front(4)).arrival, 50u);
  held.pop(4);
  EXPECT_TRUE(held.empty());
}

TEST(HeldPackets, OneSourcesPacketsKeepTheirOrder) {
  HeldPackets held(4);
  held.add(0, from(2, 1), {500, 0});
  held.add(0, from(2, 2), {400, 0});  // sent later, stamped earlier: still after the first
  held.add(0, from(3, 3), {450, 0});
  EXPECT_EQ(tag_of(held.front(0)), 3);
  held.pop(0);
  EXPECT_EQ(tag_of(held.front(0)), 1);
  held.pop(0);
  EXPECT_EQ(tag_of(held.front(0)), 2);
  EXPECT_EQ(HeldPackets::stamp_of(*held.front(0)).arrival, 400u);  // its own stamp is kept
}

TEST(HeldPackets, AnEntryStaysPutWhileOthersArrive) {
  HeldPackets held(2);
  held.add(1, from(0, 9), {10, 0});
  const Packet* first = held.front(1);
  for (int i = 0; i < 1000; ++i)
    held.add(1, from(1, 0), {1000 + static_cast<virtual_time::Tick>(i), 0});
  EXPECT_EQ(held.front(1), first);
  EXPECT_EQ(tag_of(first), 9);
}

TEST(HeldPackets, AMalformedSourceDoesNotReachOutside) {
  HeldPackets held(2);
  held.add(0, from(0xffffff, 7), {5, 0});
  EXPECT_EQ(tag_of(held.front(0)), 7);
}

}  // namespace
}  // namespace bgl::packet_layer
