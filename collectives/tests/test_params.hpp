#pragma once
// Parameter sets the algorithm tests sweep: every communicator size 1..64, a few larger ones, and
// even, uneven and zero counts.
#include <memory>
#include <vector>

#include "bgl/collectives/params.hpp"
#include "bgl/torus_emu/mapping.hpp"

namespace bgl::collectives::testing {

// A partition that holds p tasks, one per node, filled in XYZ order (the whole partition exactly
// when p fills the shape).
inline std::shared_ptr<torus_emu::Mapping> mapping_for(int p) {
  std::array<int, 3> e{1, 1, 1};
  // Grow x, y, z in turn by doubling until the shape holds p nodes.
  int d = 0;
  while (e[0] * e[1] * e[2] < p) {
    e[static_cast<std::size_t>(d)] *= 2;
    d = (d + 1) % 3;
  }
  torus_emu::Shape shape(e, {true, true, true});
  return std::make_shared<torus_emu::Mapping>(torus_emu::Mapping::from_order(shape, 1, "XYZ", p));
}

// Release builds sweep every p up to 64 and a few larger ones. Sanitized builds (several times
// slower) look for memory and threading errors, not for schedule bugs the Release sweep already
// covers, so they take a sample that still has every kind of p: small, odd, prime, powers of two
// and their neighbours, and above 64.
inline std::vector<int> sizes() {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  return {1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 13, 16, 17, 21, 31, 32, 33, 64, 100};
#else
  std::vector<int> s;
  for (int p = 1; p <= 64; ++p)
    s.push_back(p);
  for (int p : {96, 100, 128, 129})
    s.push_back(p);
  return s;
#endif
}

// Small counts keep the symbolic run fast; the variety is what matters.
inline std::vector<Params> params_for(Collective op, int p) {
  std::vector<Params> out;
  switch (op) {
    case Collective::bcast:
      for (std::uint64_t b :
           {std::uint64_t{0}, std::uint64_t{13}, static_cast<std::uint64_t>(3 * p + 5)})
        out.push_back(Params::bcast(p, (p > 2 ? p / 2 + 1 : 0) % p, b));
      out.push_back(Params::bcast(p, 0, 2 * static_cast<std::uint64_t>(p)));
      break;
    case Collective::reduce:
      for (std::uint64_t n : {std::uint64_t{1}, static_cast<std::uint64_t>(p + 3)}) {
        out.push_back(Params::reduce(p, 0, n, DataType::i32, ReduceOp::sum));
        out.push_back(Params::reduce(p, p - 1, n, DataType::f64, ReduceOp::sum));
      }
      break;
    case Collective::allreduce:
      for (std::uint64_t n :
           {std::uint64_t{1}, std::uint64_t{5}, static_cast<std::uint64_t>(2 * p + 1)})
        out.push_back(Params::allreduce(p, n, DataType::i32, ReduceOp::sum));
      out.push_back(Params::allreduce(p, 3, DataType::f64, ReduceOp::sum));
      break;
    case Collective::reduce_scatter: {
      std::vector<std::uint64_t> even(static_cast<std::size_t>(p), 8), uneven;
      for (int i = 0; i < p; ++i)
        uneven.push_back(4 * static_cast<std::uint64_t>((i * 7) % 3));
      out.push_back(Params::reduce_scatter(even, DataType::i32, ReduceOp::sum));
      out.push_back(Params::reduce_scatter(uneven, DataType::i32, ReduceOp::sum));
      break;
    }
    case Collective::allgather: {
      std::vector<std::uint64_t> even(static_cast<std::size_t>(p), 3), uneven;
      for (int i = 0; i < p; ++i)
        uneven.push_back(static_cast<std::uint64_t>((i * 5) % 4));
      out.push_back(Params::allgather(even));
      out.push_back(Params::allgather(uneven));
      break;
    }
    case Collective::alltoall: {
      out.push_back(Params::alltoall(p, 2));
      Params v = Params::alltoall(p, 0);
      v.counts.clear();
      for (int i = 0; i < p; ++i)
        for (int j = 0; j < p; ++j)
          v.counts.push_back(static_cast<std::uint64_t>((i + 2 * j) % 3));
      out.push_back(v);
      break;
    }
    case Collective::barrier:
      out.push_back(Params::barrier(p));
      break;
  }
  return out;
}

}  // namespace bgl::collectives::testing
