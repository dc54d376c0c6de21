#include "bgl/collectives/types.hpp"

#include <array>

namespace bgl::collectives {

namespace {
constexpr std::array<std::string_view, kCollectives> kCollectiveNames{
    "bcast", "reduce", "allreduce", "allgather", "alltoall", "reduce_scatter", "barrier"};
}

std::string_view to_string(Collective c) {
  return kCollectiveNames[static_cast<std::size_t>(c)];
}

std::optional<Collective> parse_collective(std::string_view text) {
  for (std::size_t i = 0; i < kCollectiveNames.size(); ++i)
    if (kCollectiveNames[i] == text) return static_cast<Collective>(i);
  return std::nullopt;
}

std::size_t size_of(DataType t) {
  switch (t) {
    case DataType::i8:
    case DataType::u8:
      return 1;
    case DataType::i16:
    case DataType::u16:
      return 2;
    case DataType::i32:
    case DataType::u32:
    case DataType::f32:
      return 4;
    case DataType::i64:
    case DataType::u64:
    case DataType::f64:
      return 8;
  }
  return 1;
}

bool is_floating(DataType t) {
  return t == DataType::f32 || t == DataType::f64;
}

std::string_view to_string(DataType t) {
  constexpr std::array<std::string_view, 10> names{"i8",  "u8",  "i32", "u32", "i64",
                                                   "u64", "f32", "f64", "i16", "u16"};
  return names[static_cast<std::size_t>(t)];
}

std::string_view to_string(ReduceOp op) {
  constexpr std::array<std::string_view, 10> names{"sum", "prod", "max",  "min", "band",
                                                   "bor", "bxor", "land", "lor", "lxor"};
  return names[static_cast<std::size_t>(op)];
}

}  // namespace bgl::collectives
