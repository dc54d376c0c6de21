#include "bgl/collectives/params.hpp"

#include <cmath>
#include <numeric>
#include <string>

namespace bgl::collectives {

std::uint64_t Params::bytes() const {
  switch (op) {
    case Collective::bcast:
    case Collective::reduce:
    case Collective::allreduce:
      return counts.empty() ? 0 : counts[0];
    case Collective::reduce_scatter:
    case Collective::allgather:
      return std::accumulate(counts.begin(), counts.end(), std::uint64_t{0});
    case Collective::alltoall:
      return counts.size() == 1 ? counts[0] * static_cast<std::uint64_t>(p) * p
                                : std::accumulate(counts.begin(), counts.end(), std::uint64_t{0});
    case Collective::barrier:
      return 0;
  }
  return 0;
}

std::uint64_t Params::displ(int i) const {
  std::uint64_t d = 0;
  for (int k = 0; k < i; ++k)
    d += counts[static_cast<std::size_t>(k)];
  return d;
}

std::uint64_t Params::a2a_count(int i, int j) const {
  if (counts.size() == 1) return counts[0];
  return counts[static_cast<std::size_t>(i) * static_cast<std::size_t>(p) +
                static_cast<std::size_t>(j)];
}

std::uint64_t Params::a2a_send_displ(int i, int j) const {
  std::uint64_t d = 0;
  for (int k = 0; k < j; ++k)
    d += a2a_count(i, k);
  return d;
}

std::uint64_t Params::a2a_recv_displ(int i, int j) const {
  std::uint64_t d = 0;
  for (int k = 0; k < i; ++k)
    d += a2a_count(k, j);
  return d;
}

std::uint64_t Params::send_bytes(int r) const {
  switch (op) {
    case Collective::bcast:
    case Collective::barrier:
      return 0;
    case Collective::reduce:
    case Collective::allreduce:
      return bytes();
    case Collective::reduce_scatter:
      return bytes();
    case Collective::allgather:
      return counts[static_cast<std::size_t>(r)];
    case Collective::alltoall:
      return a2a_send_displ(r, p);
  }
  return 0;
}

std::uint64_t Params::recv_bytes(int r) const {
  switch (op) {
    case Collective::bcast:
    case Collective::allreduce:
      return bytes();
    case Collective::reduce:
      return r == root ? bytes() : 0;
    case Collective::reduce_scatter:
      return counts[static_cast<std::size_t>(r)];
    case Collective::allgather:
      return bytes();
    case Collective::alltoall:
      return a2a_recv_displ(p, r);
    case Collective::barrier:
      return 0;
  }
  return 0;
}

std::string Params::validate() const {
  const std::string what(to_string(op));
  if (p < 1) return what + ": communicator size " + std::to_string(p) + " < 1";
  if ((op == Collective::bcast || op == Collective::reduce) && (root < 0 || root >= p))
    return what + ": root " + std::to_string(root) + " outside 0.." + std::to_string(p - 1);
  const std::size_t n = counts.size();
  const auto ps = static_cast<std::size_t>(p);
  if (!arrival.empty() && arrival.size() != ps)
    return what + ": arrival has " + std::to_string(arrival.size()) +
           " entries, expected p = " + std::to_string(p);
  for (double a : arrival)
    if (!std::isfinite(a)) return what + ": arrival times must be finite";
  switch (op) {
    case Collective::bcast:
    case Collective::reduce:
    case Collective::allreduce:
      if (n != 1) return what + ": counts has " + std::to_string(n) + " entries, expected 1";
      break;
    case Collective::allgather:
    case Collective::reduce_scatter:
      if (n != ps)
        return what + ": counts has " + std::to_string(n) +
               " entries, expected p = " + std::to_string(p);
      break;
    case Collective::alltoall:
      if (n != 1 && n != ps * ps)
        return what + ": counts has " + std::to_string(n) +
               " entries, expected 1 or p*p = " + std::to_string(ps * ps);
      break;
    case Collective::barrier:
      if (n != 0) return what + ": counts must be empty";
      break;
  }
  if (op == Collective::reduce || op == Collective::allreduce || op == Collective::reduce_scatter) {
    const std::size_t e = size_of(dtype);
    for (std::size_t i = 0; i < n; ++i)
      if (counts[i] % e != 0)
        return what + ": counts[" + std::to_string(i) + "] = " + std::to_string(counts[i]) +
               " bytes is not a multiple of the " + std::string(to_string(dtype)) +
               " element size " + std::to_string(e);
  }
  if (topology.mapping && !topology.world_ranks.empty() && topology.world_ranks.size() != ps)
    return what + ": topology lists " + std::to_string(topology.world_ranks.size()) +
           " ranks for a communicator of " + std::to_string(p);
  if (topology.mapping)
    for (int r = 0; r < p; ++r)
      if (topology.world_rank(r) < 0 || topology.world_rank(r) >= topology.mapping->size())
        return what + ": rank " + std::to_string(r) + " maps to job rank " +
               std::to_string(topology.world_rank(r)) + " outside the mapping";
  return {};
}

Params Params::bcast(int p, int root, std::uint64_t bytes) {
  Params x;
  x.op = Collective::bcast;
  x.p = p;
  x.root = root;
  x.counts = {bytes};
  return x;
}

Params Params::reduce(int p, int root, std::uint64_t count, DataType t, ReduceOp op) {
  Params x;
  x.op = Collective::reduce;
  x.p = p;
  x.root = root;
  x.counts = {count * size_of(t)};
  x.dtype = t;
  x.reduce_op = op;
  return x;
}

Params Params::allreduce(int p, std::uint64_t count, DataType t, ReduceOp op) {
  Params x = reduce(p, 0, count, t, op);
  x.op = Collective::allreduce;
  return x;
}

Params Params::allgather(std::vector<std::uint64_t> counts) {
  Params x;
  x.op = Collective::allgather;
  x.p = static_cast<int>(counts.size());
  x.counts = std::move(counts);
  return x;
}

Params Params::alltoall(int p, std::uint64_t block) {
  Params x;
  x.op = Collective::alltoall;
  x.p = p;
  x.counts = {block};
  return x;
}

Params Params::reduce_scatter(std::vector<std::uint64_t> counts, DataType t, ReduceOp op) {
  Params x;
  x.op = Collective::reduce_scatter;
  x.p = static_cast<int>(counts.size());
  x.counts = std::move(counts);
  x.dtype = t;
  x.reduce_op = op;
  return x;
}

Params Params::barrier(int p) {
  Params x;
  x.op = Collective::barrier;
  x.p = p;
  return x;
}

}  // namespace bgl::collectives
