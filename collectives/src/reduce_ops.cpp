#include "bgl/collectives/reduce_ops.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace bgl::collectives {

namespace {

template <class T>
T combine(ReduceOp op, T a, T b) {
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::prod:
      if constexpr (std::is_integral_v<T>) {
        // Wrap around like MPI implementations do, without signed-overflow UB.
        using U = std::make_unsigned_t<T>;
        const U x = static_cast<U>(a), y = static_cast<U>(b);
        return static_cast<T>(op == ReduceOp::sum ? static_cast<U>(x + y) : static_cast<U>(x * y));
      } else {
        return op == ReduceOp::sum ? a + b : a * b;
      }
    case ReduceOp::max:
      return std::max(a, b);
    case ReduceOp::min:
      return std::min(a, b);
    case ReduceOp::land:
      return static_cast<T>(a != T{} && b != T{});
    case ReduceOp::lor:
      return static_cast<T>(a != T{} || b != T{});
    case ReduceOp::lxor:
      return static_cast<T>((a != T{}) != (b != T{}));
    default:
      break;
  }
  if constexpr (std::is_integral_v<T>) {
    switch (op) {
      case ReduceOp::band:
        return static_cast<T>(a & b);
      case ReduceOp::bor:
        return static_cast<T>(a | b);
      case ReduceOp::bxor:
        return static_cast<T>(a ^ b);
      default:
        break;
    }
  }
  return a;
}

template <class T>
void loop(ReduceOp op, std::byte* d, const std::byte* s, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    T a, b;
    std::memcpy(&a, d + i * sizeof(T), sizeof(T));
    std::memcpy(&b, s + i * sizeof(T), sizeof(T));
    a = combine(op, a, b);
    std::memcpy(d + i * sizeof(T), &a, sizeof(T));
  }
}

}  // namespace

const char* reduce_unsupported(DataType type, ReduceOp op) {
  if (is_floating(type) && (op == ReduceOp::band || op == ReduceOp::bor || op == ReduceOp::bxor))
    return "bitwise operations are not defined for floating-point types";
  return "";
}

void apply_reduce(DataType type, ReduceOp op, std::span<std::byte> dst,
                  std::span<const std::byte> src) {
  if (*reduce_unsupported(type, op))
    throw std::invalid_argument(std::string("reduce ") + std::string(to_string(op)) + " on " +
                                std::string(to_string(type)) + ": " + reduce_unsupported(type, op));
  const std::size_t e = size_of(type);
  if (dst.size() != src.size() || dst.size() % e)
    throw std::invalid_argument("reduce: " + std::to_string(dst.size()) + " and " +
                                std::to_string(src.size()) + " bytes are not matching whole " +
                                std::string(to_string(type)) + " elements");
  const std::size_t n = dst.size() / e;
  std::byte* d = dst.data();
  const std::byte* s = src.data();
  switch (type) {
    case DataType::i8:
      return loop<std::int8_t>(op, d, s, n);
    case DataType::u8:
      return loop<std::uint8_t>(op, d, s, n);
    case DataType::i16:
      return loop<std::int16_t>(op, d, s, n);
    case DataType::u16:
      return loop<std::uint16_t>(op, d, s, n);
    case DataType::i32:
      return loop<std::int32_t>(op, d, s, n);
    case DataType::u32:
      return loop<std::uint32_t>(op, d, s, n);
    case DataType::i64:
      return loop<std::int64_t>(op, d, s, n);
    case DataType::u64:
      return loop<std::uint64_t>(op, d, s, n);
    case DataType::f32:
      return loop<float>(op, d, s, n);
    case DataType::f64:
      return loop<double>(op, d, s, n);
  }
}

}  // namespace bgl::collectives
