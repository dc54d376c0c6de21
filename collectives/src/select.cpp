#include "bgl/collectives/select.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <cstdlib>

#include "bgl/torus_emu/error.hpp"
#include "gen_util.hpp"

namespace bgl::collectives {

// In the order of Collective (and of to_string's names).
constexpr std::array<const char*, kCollectives> kOverrideVariables{
    "BGL_COLL_BCAST",    "BGL_COLL_REDUCE",         "BGL_COLL_ALLREDUCE", "BGL_COLL_ALLGATHER",
    "BGL_COLL_ALLTOALL", "BGL_COLL_REDUCE_SCATTER", "BGL_COLL_BARRIER"};

const char* override_variable(Collective op) {
  return kOverrideVariables[static_cast<std::size_t>(op)];
}

namespace {

// Where alltoall switches to Bruck's algorithm: at least this many ranks, blocks of at most this
// many bytes.
constexpr int kBruckRanks = 128;
constexpr std::uint64_t kBruckBlock = 64;
// The largest allgather (bytes gathered) that goes over the collective network by default.
constexpr std::uint64_t kTreeAllgatherBytes = 65536;

const Algorithm* usable(const Params& x, std::string_view name) {
  const Algorithm* a = find_algorithm(x.op, name);
  return a && a->applicable(x).empty() ? a : nullptr;
}

// Defaults (docs/CONFIGURATION.md): hardware paths for whole-partition communicators, then the
// torus algorithms by size.
Selection by_default(const Params& x) {
  const std::uint64_t n = x.bytes();
  auto pick = [&](std::initializer_list<std::string_view> names, const char* why) -> Selection {
    for (std::string_view nm : names)
      if (const Algorithm* a = usable(x, nm)) return {a, why};
    return {};
  };
  Selection s;
  switch (x.op) {
    case Collective::bcast:
      s = pick({"tree"}, "whole partition: collective network");
      if (!s.algorithm && n >= 8192) s = pick({"torus3"}, ">= 8 KiB on a full partition: torus3");
      if (!s.algorithm && n < 12288) s = pick({"binomial"}, "< 12 KiB: binomial");
      if (!s.algorithm) s = pick({"scatter_allgather", "binomial"}, ">= 12 KiB: scatter+allgather");
      break;
    case Collective::allreduce:
      s = pick({"tree"}, "whole partition, supported type/op: collective network");
      if (!s.algorithm && n <= 2048)
        s = pick({"recursive_doubling"}, "<= 2 KiB: recursive doubling");
      if (!s.algorithm) s = pick({"rabenseifner"}, "> 2 KiB: reduce-scatter + allgather");
      break;
    case Collective::reduce:
      s = pick({"tree", "binomial"}, "collective network if possible, else binomial");
      break;
    case Collective::allgather:
      // Measured (docs/PERFORMANCE.md, "Session 21"): one tree operation beats log p torus steps
      // at 8 and 64 ranks up to 64 KiB gathered (each task runs once instead of once a step).
      if (n <= kTreeAllgatherBytes)
        s = pick({"tree"}, "whole partition, <= 64 KiB total: collective network");
      if (!s.algorithm && n < 81920)
        s = pick({"recursive_doubling", "bruck"}, "< 80 KiB total: log p steps");
      if (!s.algorithm) s = pick({"ring"}, ">= 80 KiB total: ring");
      break;
    case Collective::alltoall:
      // Measured (docs/PERFORMANCE.md, "Collectives" and "Session 20"): on this emulator posting
      // everything at once is as fast as or faster than `controlled` at every size, and than
      // Bruck up to 64 ranks; the controlled order pays on a real torus's links, not against
      // per-message cost. From 128 ranks on, p^2 tiny messages cost more than Bruck's log p
      // packed exchanges (8-byte blocks: 2x at 128 ranks, 25x at 512).
      if (x.p >= kBruckRanks && x.a2a_count(0, 1) <= kBruckBlock)
        s = pick({"bruck"}, ">= 128 ranks, blocks <= 64 B: Bruck");
      if (!s.algorithm) s = pick({"post_all"}, "post all (measured fastest here)");
      break;
    case Collective::reduce_scatter:
      s = pick({"pairwise"}, "pairwise");
      break;
    case Collective::barrier:
      s = pick({"gi", "dissemination"}, "global interrupt if whole partition");
      break;
  }
  return s;
}

}  // namespace

MpichChoice mpich_default(const Params& x) {
  const std::uint64_t n = x.bytes();
  const std::uint64_t count = n / std::max<std::size_t>(1, size_of(x.dtype));
  const auto pof2 = static_cast<std::uint64_t>(gen::floor_pow2(x.p));  // MPICH's comm->pof2
  switch (x.op) {
    case Collective::bcast:
      if (x.p < 8 || n <= 12288) return {"binomial", "binomial"};
      if (gen::is_pow2(x.p) && n <= 524288)
        return {"scatter_rd_allgather", "scatter_recursive_doubling_allgather"};
      return {"scatter_allgather", "scatter_ring_allgather"};
    case Collective::allreduce:
      if (n <= 8 || count < pof2) return {"recursive_doubling", "recursive_doubling"};
      return {"rabenseifner", "reduce_scatter_allgather"};
    case Collective::reduce:
      if (n <= 2048 || count < pof2) return {"binomial", "binomial"};
      return {"", "reduce_scatter_gather"};
    case Collective::allgather: {
      const std::uint64_t total = x.bytes();
      if (gen::is_pow2(x.p))
        return total < 524288 ? MpichChoice{"recursive_doubling", "recursive_doubling"}
                              : MpichChoice{"ring", "ring"};
      return total < 81920 ? MpichChoice{"bruck", "brucks"} : MpichChoice{"ring", "ring"};
    }
    case Collective::alltoall: {
      const std::uint64_t block = x.a2a_count(0, x.p > 1 ? 1 : 0);
      if (x.p >= 8 && block <= 256) return {"bruck", "brucks"};
      if (block <= 32768) return {"post_all", "scattered"};
      return {"pairwise", "pairwise"};
    }
    case Collective::reduce_scatter:
      return {"", "(not selected here)"};
    case Collective::barrier:
      return {"dissemination", "dissemination"};
  }
  return {};
}

Selection select_algorithm(const Params& x) {
  return select_algorithm(x, std::getenv(override_variable(x.op)));
}

Selection select_algorithm(const Params& x, const char* v) {
  if (v && *v) {
    const std::string var = override_variable(x.op);
    const std::string_view name(v);
    if (name == "mpich") return {nullptr, var + "=mpich"};
    const Algorithm* a = find_algorithm(x.op, name);
    if (!a) {
      std::string valid = "mpich";
      for (const Algorithm* b : algorithms_for(x.op))
        valid += ", " + std::string(b->name);
      throw ConfigError(var + "=" + std::string(name) + ": no such " +
                        std::string(to_string(x.op)) + " algorithm (valid: " + valid + ")");
    }
    if (std::string why = a->applicable(x); why.empty())
      return {a, var + "=" + std::string(name)};
    else
      spdlog::warn("{}={} cannot run this call ({}); using the default", var, name, why);
  }
  return by_default(x);
}

}  // namespace bgl::collectives
