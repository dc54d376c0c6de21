#include "bgl/collective_net_emu/alu.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

namespace bgl::collective_net_emu {
namespace {

using Packet = std::array<std::byte, kPacketBytes>;

Packet random_packet(std::mt19937_64& rng) {
  Packet p;
  for (std::size_t i = 0; i < kPacketBytes; i += 8) {
    const std::uint64_t v = rng();
    std::memcpy(p.data() + i, &v, 8);
  }
  return p;
}

template <class T>
T lane(const Packet& p, std::size_t i) {
  T v;
  std::memcpy(&v, p.data() + i * sizeof(T), sizeof(T));
  return v;
}

// The reference of one lane op, written independently of the ALU's kernels.
template <class T>
T reference(AluOp op, T a, T b) {
  using U = std::make_unsigned_t<T>;
  switch (op) {
    case AluOp::add:
      return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
    case AluOp::max:
      return a > b ? a : b;
    case AluOp::min:
      return a < b ? a : b;
    case AluOp::bit_and:
      return a & b;
    case AluOp::bit_or:
      return a | b;
    case AluOp::bit_xor:
      return a ^ b;
  }
  return 0;
}

template <class T>
void expect_lanes(AluOp op, const Packet& a, const Packet& b, const Packet& r) {
  for (std::size_t i = 0; i < kPacketBytes / sizeof(T); ++i)
    ASSERT_EQ(lane<T>(r, i), reference<T>(op, lane<T>(a, i), lane<T>(b, i))) << "lane " << i;
}

void expect_op(Op op, const Packet& a, const Packet& b, const Packet& r) {
  switch (op.lane) {
    case Lane::i32:
      return expect_lanes<std::int32_t>(op.alu, a, b, r);
    case Lane::u32:
      return expect_lanes<std::uint32_t>(op.alu, a, b, r);
    case Lane::i64:
      return expect_lanes<std::int64_t>(op.alu, a, b, r);
    default:
      return expect_lanes<std::uint64_t>(op.alu, a, b, r);
  }
}

// Byte-wise little-endian addition with carry: the reference for wide lanes.
Packet wide_reference(const Packet& a, const Packet& b, std::size_t lane_bytes) {
  Packet r{};
  const std::size_t lanes = kPacketBytes / lane_bytes;
  for (std::size_t l = 0; l < lanes; ++l) {
    unsigned carry = 0;
    for (std::size_t i = l * lane_bytes; i < (l + 1) * lane_bytes; ++i) {
      const unsigned s = std::to_integer<unsigned>(a[i]) + std::to_integer<unsigned>(b[i]) + carry;
      r[i] = static_cast<std::byte>(s & 0xff);
      carry = s >> 8;
    }
  }
  // The tail a 192-bit lane leaves over adds as 64-bit lanes.
  for (std::size_t i = lanes * lane_bytes; i < kPacketBytes; i += 8) {
    const auto v = lane<std::uint64_t>(a, i / 8) + lane<std::uint64_t>(b, i / 8);
    std::memcpy(r.data() + i, &v, 8);
  }
  return r;
}

constexpr Lane kNarrow[] = {Lane::i32, Lane::u32, Lane::i64, Lane::u64};
constexpr Lane kWide[] = {Lane::w128, Lane::w192, Lane::w256};
constexpr AluOp kAll[] = {AluOp::add,     AluOp::max,    AluOp::min,
                          AluOp::bit_and, AluOp::bit_or, AluOp::bit_xor};

TEST(Alu, EveryOperationOnEveryNarrowLaneMatchesTheReference) {
  std::mt19937_64 rng(1);
  for (const AluOp alu : kAll) {
    for (const Lane l : kNarrow) {
      const Op op{alu, l};
      ASSERT_TRUE(op.valid());
      for (int round = 0; round < 50; ++round) {
        const Packet a = random_packet(rng), b = random_packet(rng);
        Packet r;
        combine(op, r, a, b);
        SCOPED_TRACE(to_string(op));
        expect_op(op, a, b, r);
      }
    }
  }
}

TEST(Alu, SignednessMattersForMaxAndMinOnly) {
  Packet a{}, b{};
  const std::int32_t minus_one = -1, one = 1;
  std::memcpy(a.data(), &minus_one, 4);
  std::memcpy(b.data(), &one, 4);
  Packet r;
  combine({AluOp::max, Lane::i32}, r, a, b);
  EXPECT_EQ(lane<std::int32_t>(r, 0), 1);
  combine({AluOp::max, Lane::u32}, r, a, b);
  EXPECT_EQ(lane<std::uint32_t>(r, 0), 0xffffffffu);
  Packet s, u;
  combine({AluOp::add, Lane::i32}, s, a, b);
  combine({AluOp::add, Lane::u32}, u, a, b);
  EXPECT_EQ(s, u);
  EXPECT_EQ(lane<std::int32_t>(s, 0), 0);
}

TEST(Alu, WideAddsMatchAByteWiseReference) {
  std::mt19937_64 rng(2);
  for (const Lane l : kWide) {
    for (int round = 0; round < 200; ++round) {
      const Packet a = random_packet(rng), b = random_packet(rng);
      Packet r;
      combine({AluOp::add, l}, r, a, b);
      ASSERT_EQ(r, wide_reference(a, b, lane_bytes(l))) << to_string(Op{AluOp::add, l});
    }
  }
}

TEST(Alu, WideAddCarriesAcrossEveryWord) {
  for (const std::size_t words : {2u, 3u, 4u}) {
    std::vector<std::uint64_t> a(words, ~std::uint64_t{0}), one(words, 0), sum(words);
    one[0] = 1;
    add_wide(sum, a, one);  // -1 + 1 = 0: the carry ripples out of the top word
    EXPECT_EQ(sum, std::vector<std::uint64_t>(words, 0));
    std::vector<std::uint64_t> low(words, 0), expect(words, 0);
    low[0] = ~std::uint64_t{0};
    expect[1] = 1;
    add_wide(sum, low, one);  // 2^64 - 1 + 1 = 2^64
    EXPECT_EQ(sum, expect);
    std::vector<std::uint64_t> minus_two(words, ~std::uint64_t{0});
    minus_two[0] -= 1;
    std::vector<std::uint64_t> three(words, 0);
    three[0] = 3;
    add_wide(sum, minus_two, three);  // -2 + 3 = 1
    EXPECT_EQ(sum, one);
  }
}

TEST(Alu, WideLanesAreIndependent) {
  Packet a{}, b{};
  const std::uint64_t ones = ~std::uint64_t{0};
  // Lane 0 of w128: all ones; adding 1 must not carry into lane 1.
  std::memcpy(a.data(), &ones, 8);
  std::memcpy(a.data() + 8, &ones, 8);
  const std::uint64_t one = 1;
  std::memcpy(b.data(), &one, 8);
  Packet r;
  combine({AluOp::add, Lane::w128}, r, a, b);
  EXPECT_EQ(r, Packet{});
}

TEST(Alu, OperationsAreOrderIndependent) {
  std::mt19937_64 rng(3);
  std::vector<Packet> inputs;
  for (int i = 0; i < 7; ++i)
    inputs.push_back(random_packet(rng));
  for (const AluOp alu : kAll) {
    for (const Lane l : {Lane::i32, Lane::u64, Lane::w192}) {
      const Op op{alu, l};
      if (!op.valid()) continue;
      std::vector<int> order{0, 1, 2, 3, 4, 5, 6};
      Packet first{};
      for (int perm = 0; perm < 20; ++perm) {
        std::shuffle(order.begin(), order.end(), rng);
        Packet acc = inputs[static_cast<std::size_t>(order[0])];
        for (std::size_t i = 1; i < order.size(); ++i)
          combine_into(op, acc, inputs[static_cast<std::size_t>(order[i])]);
        if (perm == 0) first = acc;
        ASSERT_EQ(acc, first) << to_string(op);
      }
    }
  }
}

TEST(Alu, ValidityAndNames) {
  EXPECT_FALSE((Op{AluOp::max, Lane::w128}.valid()));
  EXPECT_FALSE((Op{AluOp::min, Lane::w256}.valid()));
  EXPECT_TRUE((Op{AluOp::bit_xor, Lane::w192}.valid()));
  EXPECT_EQ(to_string(Op{AluOp::add, Lane::w128}), "add.w128");
  EXPECT_EQ(to_string(Op{AluOp::max, Lane::i32}), "max.i32");
  for (const AluOp alu : kAll)
    for (const Lane l :
         {Lane::i32, Lane::u32, Lane::i64, Lane::u64, Lane::w128, Lane::w192, Lane::w256})
      EXPECT_EQ(Op::from_code(Op{alu, l}.code()), (Op{alu, l}));
  EXPECT_EQ(lanes_per_packet(Lane::w192), 10u);
}

}  // namespace
}  // namespace bgl::collective_net_emu
