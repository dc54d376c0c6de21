#pragma once
// The vocabulary shared by schedules, generators, the verifier, the cost model and the executor.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace bgl::collectives {

// The collectives the library schedules. Data layout per collective: see Params (params.hpp).
enum class Collective : std::uint8_t {
  bcast,
  reduce,
  allreduce,
  allgather,  // allgatherv when the per-rank counts differ
  alltoall,   // alltoallv when counts is a p x p matrix
  reduce_scatter,
  barrier,
};
inline constexpr int kCollectives = 7;

std::string_view to_string(Collective c);
std::optional<Collective> parse_collective(std::string_view text);  // "bcast", "allreduce", ...

enum class DataType : std::uint8_t { i8, u8, i32, u32, i64, u64, f32, f64, i16, u16 };
std::size_t size_of(DataType t);
bool is_floating(DataType t);
std::string_view to_string(DataType t);

// MPI's predefined commutative operations (the library never reorders a non-commutative op: those
// stay with MPICH). The logical ones treat nonzero as true and yield 0 or 1.
enum class ReduceOp : std::uint8_t { sum, prod, max, min, band, bor, bxor, land, lor, lxor };
std::string_view to_string(ReduceOp op);

}  // namespace bgl::collectives
