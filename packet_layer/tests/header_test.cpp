#include "bgl/packet_layer/header.hpp"
#include "bgl/packet_layer/reception_fifo.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <cstring>
#include <ostream>
#include <string>
#include <type_traits>

namespace bgl::packet_layer {

// Lets GoogleTest print a Problem by name.
[[maybe_unused]] static void PrintTo(PacketHeader::Problem p, std::ostream* os) {
  *os << to_string(p);
}

namespace {

using ::testing::HasSubstr;
using Problem = PacketHeader::Problem;

// A well-formed, sealed header for `shape` addressed to `c`.
PacketHeader good_header(torus_emu::Coord c, std::uint8_t payload = 100) {
  PacketHeader h;
  h.dest = {static_cast<std::uint8_t>(c.x), static_cast<std::uint8_t>(c.y),
            static_cast<std::uint8_t>(c.z)};
  h.dest_group = 1;
  h.flags = PacketHeader::kHighPriority;
  h.chunks = chunks_for(payload);
  h.payload_bytes = payload;
  h.dispatch = 7;
  h.source = {0x34, 0x12, 0x00};
  h.word = 0xdeadbeef;
  h.seal();
  return h;
}

TEST(ChunksFor, CountsHeaderPlusPayloadIn32ByteChunks) {
  static_assert(chunks_for(0) == 1);
  EXPECT_EQ(chunks_for(0), 1);
  EXPECT_EQ(chunks_for(1), 1);
  EXPECT_EQ(chunks_for(16), 1);
  EXPECT_EQ(chunks_for(17), 2);
  EXPECT_EQ(chunks_for(48), 2);
  EXPECT_EQ(chunks_for(49), 3);
  EXPECT_EQ(chunks_for(239), 8);
  EXPECT_EQ(chunks_for(240), 8);
  EXPECT_EQ(chunks_for(kMaxPayloadBytes), kMaxPacketBytes / kChunkBytes);
}

TEST(PacketHeader, IsSixteenBytesWithTheDocumentedLayout) {
  EXPECT_EQ(sizeof(PacketHeader), 16u);
  EXPECT_TRUE(std::is_standard_layout_v<PacketHeader>);
  EXPECT_EQ(offsetof(PacketHeader, dest), 0u);
  EXPECT_EQ(offsetof(PacketHeader, dest_group), 3u);
  EXPECT_EQ(offsetof(PacketHeader, flags), 4u);
  EXPECT_EQ(offsetof(PacketHeader, chunks), 5u);
  EXPECT_EQ(offsetof(PacketHeader, payload_bytes), 6u);
  EXPECT_EQ(offsetof(PacketHeader, check), 7u);
  EXPECT_EQ(offsetof(PacketHeader, dispatch), 8u);
  EXPECT_EQ(offsetof(PacketHeader, source), 9u);
  EXPECT_EQ(offsetof(PacketHeader, word), 12u);
  EXPECT_EQ(kMaxPayloadBytes, 240u);
}

TEST(Packet, Is256BytesAndFollowsAFifoSequenceWordDirectly) {
  EXPECT_EQ(sizeof(Packet), 256u);
  EXPECT_EQ(alignof(Packet), 8u);
  EXPECT_EQ(offsetof(FifoSlot, packet), 8u);
  EXPECT_EQ(sizeof(FifoSlot), 320u);
  EXPECT_EQ(offsetof(Packet, payload), kHeaderBytes);
}

TEST(PacketHeader, SourceRankIsStored24BitLittleEndian) {
  PacketHeader h;
  h.source = {0xff, 0xff, 0x01};
  EXPECT_EQ(h.source_rank(), 131071u);
  h.source = {0xff, 0xff, 0xff};
  EXPECT_EQ(h.source_rank(), 16777215u);
  EXPECT_EQ(h.source_rank(), kMaxSourceRank);
  h.source = {0x03, 0x02, 0x01};
  EXPECT_EQ(h.source_rank(), 0x010203u);

  std::byte raw[sizeof(PacketHeader)];
  std::memcpy(raw, &h, sizeof h);
  EXPECT_EQ(raw[9], std::byte{0x03});
  EXPECT_EQ(raw[10], std::byte{0x02});
  EXPECT_EQ(raw[11], std::byte{0x01});
}

TEST(PacketHeader, SourceRankRoundTripsEvery24BitBoundary) {
  for (std::uint32_t rank : {0u, 1u, 255u, 256u, 65535u, 65536u, 131071u, 16777214u, 16777215u}) {
    PacketHeader h;
    h.source = {static_cast<std::uint8_t>(rank), static_cast<std::uint8_t>(rank >> 8),
                static_cast<std::uint8_t>(rank >> 16)};
    EXPECT_EQ(h.source_rank(), rank);
  }
}

TEST(PacketHeader, CheckByteIsXorOfHardwareBytesAnd5a) {
  const PacketHeader h = good_header({1, 2, 3}, 33);
  std::uint8_t raw[sizeof(PacketHeader)];
  std::memcpy(raw, &h, sizeof h);
  std::uint8_t expected = 0x5a;
  for (int i = 0; i < 7; ++i)
    expected ^= raw[i];
  EXPECT_EQ(h.check, expected);
  EXPECT_EQ(raw[7], expected);
  EXPECT_EQ(h.compute_check(), expected);
}

TEST(PacketHeader, CheckByteIgnoresTheSoftwareHeader) {
  PacketHeader h = good_header({1, 1, 1});
  const std::uint8_t check = h.check;
  h.dispatch = 99;
  h.source = {1, 2, 3};
  h.word = 12345;
  EXPECT_EQ(h.compute_check(), check);
}

TEST(PacketHeader, ValidateAcceptsASealedHeader) {
  const torus_emu::Shape shape = torus_emu::Shape::parse("4x4x2");
  EXPECT_EQ(good_header({3, 3, 1}).validate(shape, 2), Problem::none);
  EXPECT_EQ(good_header({0, 0, 0}, 0).validate(shape, 2), Problem::none);
  EXPECT_EQ(good_header({0, 0, 0}, 240).validate(shape, 2), Problem::none);
}

TEST(PacketHeader, ValidateRejectsCorruptedCheckByte) {
  const torus_emu::Shape shape = torus_emu::Shape::parse("4x4x2");
  PacketHeader h = good_header({1, 1, 1});
  h.check ^= 0x01;
  EXPECT_EQ(h.validate(shape, 2), Problem::check_byte);

  // Any change to a hardware byte after sealing is caught.
  for (int byte = 0; byte < 7; ++byte) {
    PacketHeader g = good_header({1, 1, 1});
    auto* raw = reinterpret_cast<std::uint8_t*>(&g);
    raw[byte] ^= 0x40;
    EXPECT_EQ(g.validate(shape, 2), Problem::check_byte) << "byte " << byte;
  }
}

TEST(PacketHeader, ValidateRejectsChunkCountsOutside1To8) {
  const torus_emu::Shape shape = torus_emu::Shape::parse("4x4x2");
  for (std::uint8_t chunks : {0, 9, 255}) {
    PacketHeader h = good_header({1, 1, 1}, 0);
    h.chunks = chunks;
    h.seal();
    EXPECT_EQ(h.validate(shape, 2), Problem::size) << "chunks " << int{chunks};
  }
  for (std::uint8_t chunks = 1; chunks <= 8; ++chunks) {
    PacketHeader h = good_header({1, 1, 1}, 0);
    h.chunks = chunks;
    h.seal();
    EXPECT_EQ(h.validate(shape, 2), Problem::none) << "chunks " << int{chunks};
  }
}

TEST(PacketHeader, ValidateRejectsPayloadLargerThanThePacket) {
  const torus_emu::Shape shape = torus_emu::Shape::parse("4x4x2");
  PacketHeader h = good_header({1, 1, 1}, 16);
  EXPECT_EQ(h.chunks, 1);
  EXPECT_EQ(h.validate(shape, 2), Problem::none);
  h.payload_bytes = 17;  // one chunk carries 16 payload bytes
  h.seal();
  EXPECT_EQ(h.validate(shape, 2), Problem::payload_size);

  PacketHeader full = good_header({1, 1, 1}, 240);
  full.payload_bytes = 241;
  full.seal();
  EXPECT_EQ(full.validate(shape, 2), Problem::payload_size);
}

TEST(PacketHeader, ValidateRejectsDestinationOutsideTheShape) {
  const torus_emu::Shape shape = torus_emu::Shape::parse("4x4x2");
  for (torus_emu::Coord c : {torus_emu::Coord{4, 0, 0}, torus_emu::Coord{0, 4, 0},
                             torus_emu::Coord{0, 0, 2}, torus_emu::Coord{255, 255, 255}}) {
    EXPECT_EQ(good_header(c).validate(shape, 2), Problem::destination) << torus_emu::to_string(c);
  }
  EXPECT_EQ(good_header({3, 3, 1}).validate(shape, 2), Problem::none);
}

TEST(PacketHeader, ValidateRejectsFifoGroupOutOfRange) {
  const torus_emu::Shape shape = torus_emu::Shape::parse("2x2x2");
  PacketHeader h = good_header({1, 1, 1});
  h.dest_group = 2;
  h.seal();
  EXPECT_EQ(h.validate(shape, 2), Problem::group);
  h.dest_group = 1;
  h.seal();
  EXPECT_EQ(h.validate(shape, 2), Problem::none);
  EXPECT_EQ(h.validate(shape, 1), Problem::group);
}

TEST(PacketHeader, ValidateRejectsDepositTogetherWithAdaptive) {
  const torus_emu::Shape shape = torus_emu::Shape::parse("8x1x1");
  PacketHeader h = good_header({5, 0, 0});
  h.flags = PacketHeader::kDeposit |
            (torus_emu::index_of(torus_emu::Direction::x_plus) << PacketHeader::kLineDirShift);
  h.seal();
  EXPECT_EQ(h.validate(shape, 2), Problem::none);
  EXPECT_TRUE(h.deposit());
  EXPECT_EQ(h.line_direction(), torus_emu::Direction::x_plus);

  h.flags |= PacketHeader::kAdaptive;
  h.seal();
  EXPECT_EQ(h.validate(shape, 2), Problem::deposit);
}

TEST(PacketHeader, ValidateRejectsDepositLineWithoutADirection) {
  const torus_emu::Shape shape = torus_emu::Shape::parse("8x1x1");
  for (unsigned dir : {6u, 7u}) {
    PacketHeader h = good_header({5, 0, 0});
    h.flags =
        static_cast<std::uint8_t>(PacketHeader::kDeposit | (dir << PacketHeader::kLineDirShift));
    h.seal();
    EXPECT_EQ(h.validate(shape, 2), Problem::deposit) << dir;
  }
}

TEST(PacketHeader, ProblemsHaveReadableNames) {
  EXPECT_EQ(to_string(Problem::none), "well formed");
  EXPECT_EQ(to_string(Problem::check_byte), "header check byte mismatch");
  EXPECT_EQ(to_string(Problem::size), "size is not 1..8 chunks");
  EXPECT_EQ(to_string(Problem::payload_size), "payload larger than the packet");
  EXPECT_EQ(to_string(Problem::destination), "destination outside the partition");
  EXPECT_EQ(to_string(Problem::group), "FIFO group out of range");
  EXPECT_EQ(to_string(Problem::deposit), "invalid deposit-bit line");
  EXPECT_EQ(to_string(Problem::wrong_node), "packet for another node");
  EXPECT_EQ(to_string(Problem::wrong_group), "packet for another FIFO group");
}

TEST(PacketHeader, ValidateReportsTheFirstProblemInCheckOrder) {
  const torus_emu::Shape shape = torus_emu::Shape::parse("2x2x2");
  PacketHeader h = good_header({5, 5, 5});
  h.dest_group = 3;
  h.seal();
  EXPECT_EQ(h.validate(shape, 2), Problem::destination);
  h.check ^= 1;
  EXPECT_EQ(h.validate(shape, 2), Problem::check_byte) << "the check byte is checked first";
}

TEST(PacketHeader, FlagAccessorsReadTheirBits) {
  PacketHeader h;
  EXPECT_FALSE(h.adaptive());
  EXPECT_FALSE(h.deposit());
  EXPECT_FALSE(h.high_priority());
  h.flags = PacketHeader::kAdaptive;
  EXPECT_TRUE(h.adaptive());
  h.flags = PacketHeader::kHighPriority;
  EXPECT_TRUE(h.high_priority());
  EXPECT_FALSE(h.adaptive());
  h.flags = static_cast<std::uint8_t>(
      PacketHeader::kDeposit |
      (torus_emu::index_of(torus_emu::Direction::z_minus) << PacketHeader::kLineDirShift));
  EXPECT_TRUE(h.deposit());
  EXPECT_EQ(h.line_direction(), torus_emu::Direction::z_minus);
  h.chunks = 3;
  EXPECT_EQ(h.packet_bytes(), 96u);
}

TEST(PacketHeader, DescribeMentionsEveryField) {
  PacketHeader h = good_header({3, 2, 1}, 100);
  h.source = {0xff, 0xff, 0x01};
  h.word = 424242;
  h.seal();
  const std::string text = h.describe();
  EXPECT_THAT(text, HasSubstr("dest=(3,2,1)"));
  EXPECT_THAT(text, HasSubstr("group=1"));
  EXPECT_THAT(text, HasSubstr("flags=0x04"));
  EXPECT_THAT(text, HasSubstr("chunks=4"));
  EXPECT_THAT(text, HasSubstr("payload=100"));
  EXPECT_THAT(text, HasSubstr("dispatch=7"));
  EXPECT_THAT(text, HasSubstr("source=131071"));
  EXPECT_THAT(text, HasSubstr("word=424242"));
}

TEST(PacketHeader, DescribeFitsTheLargestValues) {
  PacketHeader h;
  h.dest = {255, 255, 255};
  h.dest_group = 255;
  h.flags = 255;
  h.chunks = 255;
  h.payload_bytes = 255;
  h.check = 255;
  h.dispatch = 255;
  h.source = {255, 255, 255};
  h.word = 0xffffffffu;
  const std::string text = h.describe();
  EXPECT_THAT(text, HasSubstr("source=16777215"));
  EXPECT_THAT(text, HasSubstr("word=4294967295"));  // not truncated
}

// Every size a packet can carry is copied exactly: no byte missing, none written past the end
// (the blocks overlap inside the range, never outside it), from and to any alignment.
TEST(PacketBytes, CopyIsExactForEverySizeAndAlignment) {
  for (std::size_t n = 0; n <= kMaxPacketBytes; ++n) {
    for (std::size_t shift : {0u, 1u, 7u}) {
      std::array<std::byte, kMaxPacketBytes + 16> src{}, dst{};
      for (std::size_t i = 0; i < src.size(); ++i)
        src[i] = static_cast<std::byte>(i * 13 + n);
      dst.fill(std::byte{0xee});
      copy_packet_bytes(dst.data() + shift, src.data() + 8 - shift, n);
      for (std::size_t i = 0; i < dst.size(); ++i) {
        const bool inside = i >= shift && i < shift + n;
        ASSERT_EQ(dst[i], inside ? src[i - shift + 8 - shift] : std::byte{0xee})
            << "size " << n << " shift " << shift << " byte " << i;
      }
    }
  }
}

// A header built as words (PacketHeader::check_of on the hardware word) seals like seal().
TEST(PacketHeader, CheckOfTheHardwareWordIsTheSealedCheckByte) {
  for (unsigned v = 0; v < 4096; ++v) {
    PacketHeader h;
    h.dest = {static_cast<std::uint8_t>(v), static_cast<std::uint8_t>(v >> 3), 5};
    h.dest_group = static_cast<std::uint8_t>(v & 1);
    h.flags = static_cast<std::uint8_t>(v >> 5);
    h.chunks = static_cast<std::uint8_t>(1 + v % 8);
    h.payload_bytes = static_cast<std::uint8_t>(v % 241);
    h.check = static_cast<std::uint8_t>(v * 7);  // ignored
    std::uint64_t word;
    std::memcpy(&word, &h, sizeof word);
    h.seal();
    EXPECT_EQ(PacketHeader::check_of(word), h.check) << v;
  }
}

}  // namespace
}  // namespace bgl::packet_layer
