#pragma once
// Seed 003 (Proficz & Ocetkiewicz, "Improving Clairvoyant"): the Clairvoyant reduction schedule
// with the paper's corrections (state P' as `recvd`, peers that may not exist, round numbers in
// every entry, deterministic ties by rank) and improvements (idle-round skipping, 1-bit states).
// Every rank computes the identical schedule from identical inputs, so inputs are quantized to
// integer ticks first: no floating-point rounding can make two ranks disagree.
#include <cstdint>
#include <span>
#include <vector>

namespace bgl::collectives::clv {

struct Inputs {
  std::vector<std::int64_t> arrival;  // per process, in ticks (any origin)
  int root = 0;
  int segments = 1;        // N
  std::int64_t round = 1;  // d, ticks, >= 1
};

// From seconds: arrival[p] / quantum and d / quantum rounded to integers (quantum default 1 us).
Inputs quantize(std::span<const double> arrival_seconds, int root, int segments,
                double round_seconds, double quantum = 1e-6);

struct Transfer {
  int round = 0;
  int from = 0;
  int to = 0;
  int segment = 0;
  bool operator==(const Transfer&) const = default;
};

struct Schedule {
  std::vector<Transfer> transfers;  // by round, then in the order the rounds' groups chose them
  int rounds = 0;                   // rounds until the root holds every reduced segment
  std::int64_t finish = 0;          // modelled completion (ticks): last round's end
};

// CLV-SCHEDULE (docs/COLLECTIVES.md, "Clairvoyant"). Throws std::invalid_argument on bad inputs.
Schedule schedule(const Inputs& in);

// The same without idle-round skipping (one loop iteration per round): the reference the
// skipping version must reproduce exactly. Only for tests: it may loop (max - min arrival) / d
// times.
Schedule schedule_unskipped(const Inputs& in);

}  // namespace bgl::collectives::clv
