// The element-wise reduction kernels: every type and operation MPI's predefined ones map to,
// wrap-around integer arithmetic, logical operations yielding 0/1, misaligned buffers, and the
// errors for undefined combinations and mismatched sizes.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "bgl/collectives/reduce_ops.hpp"

namespace bgl::collectives {
namespace {

template <class T>
std::vector<T> reduce(DataType t, ReduceOp op, std::vector<T> a, const std::vector<T>& b) {
  // One byte of offset: the kernels must not assume alignment.
  std::vector<std::byte> d(a.size() * sizeof(T) + 1), s(b.size() * sizeof(T) + 1);
  std::memcpy(d.data() + 1, a.data(), a.size() * sizeof(T));
  std::memcpy(s.data() + 1, b.data(), b.size() * sizeof(T));
  apply_reduce(t, op, std::span(d).subspan(1), std::span<const std::byte>(s).subspan(1));
  std::memcpy(a.data(), d.data() + 1, a.size() * sizeof(T));
  return a;
}

TEST(ReduceOps, SixteenBitIntegers) {
  using V = std::vector<std::int16_t>;
  EXPECT_EQ(reduce<std::int16_t>(DataType::i16, ReduceOp::sum, {1, -5, 32767}, {2, 3, 1}),
            (V{3, -2, -32768}));
  EXPECT_EQ(reduce<std::int16_t>(DataType::i16, ReduceOp::min, {1, -5}, {2, -7}), (V{1, -7}));
  using U = std::vector<std::uint16_t>;
  EXPECT_EQ(reduce<std::uint16_t>(DataType::u16, ReduceOp::max, {1, 65535}, {2, 3}), (U{2, 65535}));
  EXPECT_EQ(reduce<std::uint16_t>(DataType::u16, ReduceOp::bxor, {0xff00}, {0x0ff0}), (U{0xf0f0}));
}

TEST(ReduceOps, LogicalOperationsYieldZeroOrOne) {
  using V = std::vector<std::int32_t>;
  EXPECT_EQ(reduce<std::int32_t>(DataType::i32, ReduceOp::land, {5, 5, 0, 0}, {7, 0, 7, 0}),
            (V{1, 0, 0, 0}));
  EXPECT_EQ(reduce<std::int32_t>(DataType::i32, ReduceOp::lor, {5, 5, 0, 0}, {7, 0, 7, 0}),
            (V{1, 1, 1, 0}));
  EXPECT_EQ(reduce<std::int32_t>(DataType::i32, ReduceOp::lxor, {5, 5, 0, 0}, {7, 0, 7, 0}),
            (V{0, 1, 1, 0}));
  EXPECT_EQ(reduce<double>(DataType::f64, ReduceOp::land, {0.5, 0.0}, {2.0, 1.0}),
            (std::vector<double>{1.0, 0.0}));
}

TEST(ReduceOps, WideTypesAndFloatingPoint) {
  EXPECT_EQ(reduce<std::uint64_t>(DataType::u64, ReduceOp::prod, {~0ull}, {2}),
            (std::vector<std::uint64_t>{~0ull - 1}));
  EXPECT_EQ(reduce<float>(DataType::f32, ReduceOp::sum, {1.5f}, {2.25f}),
            (std::vector<float>{3.75f}));
  EXPECT_EQ(reduce<std::int8_t>(DataType::i8, ReduceOp::max, {-3}, {-4}),
            (std::vector<std::int8_t>{-3}));
}

TEST(ReduceOps, UndefinedCombinationsAndSizesAreErrors) {
  EXPECT_STRNE(reduce_unsupported(DataType::f64, ReduceOp::bor), "");
  EXPECT_STREQ(reduce_unsupported(DataType::i16, ReduceOp::bor), "");
  std::vector<std::byte> d(8), s(6);
  EXPECT_THROW(apply_reduce(DataType::f64, ReduceOp::band, d, std::span<const std::byte>(d)),
               std::invalid_argument);
  EXPECT_THROW(apply_reduce(DataType::i32, ReduceOp::sum, d, s), std::invalid_argument);
  std::vector<std::byte> odd(3);
  EXPECT_THROW(apply_reduce(DataType::i16, ReduceOp::sum, odd, std::span<const std::byte>(odd)),
               std::invalid_argument);
}

}  // namespace
}  // namespace bgl::collectives
