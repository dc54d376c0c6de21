#include "bgl/collectives/arrival_aware/clairvoyant.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace bgl::collectives::clv {

namespace {

// One row of N state bits per process: 1 = A/P (holds the segment), 0 = E (sent it away).
class Bits {
 public:
  Bits(int processes, int segments)
      : words_((static_cast<std::size_t>(segments) + 63) / 64),
        bits_(static_cast<std::size_t>(processes) * words_, 0) {
    for (int p = 0; p < processes; ++p) {
      for (int s = 0; s < segments; ++s)
        set(p, s, true);
    }
  }
  bool get(int p, int s) const { return (row(p)[word(s)] >> bit(s)) & 1u; }
  void set(int p, int s, bool v) {
    auto& w = bits_[static_cast<std::size_t>(p) * words_ + word(s)];
    w = v ? (w | (std::uint64_t{1} << bit(s))) : (w & ~(std::uint64_t{1} << bit(s)));
  }
  bool any(int p) const {
    const std::uint64_t* r = row(p);
    return std::any_of(r, r + words_, [](std::uint64_t w) { return w != 0; });
  }
  const std::uint64_t* row(int p) const {
    return bits_.data() + static_cast<std::size_t>(p) * words_;
  }
  std::size_t words() const { return words_; }

 private:
  static std::size_t word(int s) { return static_cast<std::size_t>(s) / 64; }
  static unsigned bit(int s) { return static_cast<unsigned>(s) % 64; }
  std::size_t words_;
  std::vector<std::uint64_t> bits_;
};

void validate(const Inputs& in) {
  const int p = static_cast<int>(in.arrival.size());
  if (p < 1) throw std::invalid_argument("clairvoyant: no processes");
  if (in.root < 0 || in.root >= p) {
    throw std::invalid_argument("clairvoyant: root " + std::to_string(in.root) + " outside 0.." +
                                std::to_string(p - 1));
  }
  if (in.segments < 1) throw std::invalid_argument("clairvoyant: segments must be >= 1");
  if (in.round < 1) throw std::invalid_argument("clairvoyant: round length d must be >= 1 tick");
  for (std::int64_t a : in.arrival) {
    if (a < 0 || a > (std::int64_t{1} << 52)) {
      throw std::invalid_argument("clairvoyant: arrival times must be in 0..2^52 ticks");
    }
  }
}

Schedule run(const Inputs& in, bool skip_idle) {
  validate(in);
  const int P = static_cast<int>(in.arrival.size());
  const int N = in.segments;
  const int r = in.root;
  const std::int64_t d = in.round;
  Bits hold(P, N);
  std::vector<std::int64_t> avail = in.arrival;
  std::vector<bool> complete(static_cast<std::size_t>(P), false);
  Schedule out;
  int round = 0;
  constexpr int kNone = -1;
  std::vector<int> recvd(static_cast<std::size_t>(P), kNone);
  std::vector<bool> busy(static_cast<std::size_t>(P), false);
  std::vector<int> G;
  std::vector<std::uint64_t> others(hold.words());
  for (;;) {
    // Act and t0.
    std::int64_t t0 = std::numeric_limits<std::int64_t>::max();
    int active = 0;
    bool others_active = false;
    for (int p = 0; p < P; ++p) {
      if (complete[static_cast<std::size_t>(p)]) continue;
      ++active;
      others_active |= p != r;
      t0 = std::min(t0, avail[static_cast<std::size_t>(p)]);
    }
    if (!others_active) break;
    G.clear();
    for (int p = 0; p < P; ++p) {
      if (!complete[static_cast<std::size_t>(p)] && avail[static_cast<std::size_t>(p)] <= t0 + d) {
        G.push_back(p);
      }
    }
    std::stable_sort(G.begin(), G.end(), [&](int a, int b) {
      return avail[static_cast<std::size_t>(a)] < avail[static_cast<std::size_t>(b)];
    });  // G was built in rank order: ties stay ordered by rank
    if (skip_idle && G.size() == 1 && active > 1) {
      // Improvement 1: only an arrival can grow G, so jump to the round before it (exact in
      // integer ticks: the result equals the unskipped schedule).
      const int g = G[0];
      std::int64_t nxt = std::numeric_limits<std::int64_t>::max();
      for (int p = 0; p < P; ++p) {
        if (p != g && !complete[static_cast<std::size_t>(p)]) {
          nxt = std::min(nxt, avail[static_cast<std::size_t>(p)]);
        }
      }
      const std::int64_t gap = nxt - avail[static_cast<std::size_t>(g)];
      const std::int64_t k = (gap + d - 1) / d - 1;  // ceil(gap / d) - 1, gap > d here
      if (k > 0) {
        avail[static_cast<std::size_t>(g)] += k * d;
        round += static_cast<int>(k);
        continue;
      }
    }
    // The sink: the root when present, else the earliest member.
    auto root_it = std::find(G.begin(), G.end(), r);
    if (root_it != G.end()) std::rotate(G.begin(), root_it, root_it + 1);
    const int head = G[0];
    for (int p : G) {
      busy[static_cast<std::size_t>(p)] = false;
      recvd[static_cast<std::size_t>(p)] = kNone;
    }
    for (int i : G) {
      // Lexicographically smallest (segment, position of the sender in G). A sender must be
      // idle, hold the segment and not have received it this round (correction 1, state P').
      // Segments a sender may offer: hold minus its P' segment; OR them over the other members.
      std::fill(others.begin(), others.end(), 0);
      for (int z : G) {
        if (z == i || busy[static_cast<std::size_t>(z)]) continue;
        const std::uint64_t* row = hold.row(z);
        for (std::size_t w = 0; w < others.size(); ++w) {
          std::uint64_t bits = row[w];
          const int rz = recvd[static_cast<std::size_t>(z)];
          if (rz != kNone && static_cast<std::size_t>(rz) / 64 == w) {
            bits &= ~(std::uint64_t{1} << (static_cast<unsigned>(rz) % 64));
          }
          others[w] |= bits;
        }
      }
      // An ordinary receiver combines, so it must still hold the segment; the sink also takes
      // back segments it gave away (overwrite).
      int seg = kNone;
      for (std::size_t w = 0; w < others.size() && seg == kNone; ++w) {
        std::uint64_t cand = others[w];
        if (i != head) cand &= hold.row(i)[w];
        if (cand) seg = static_cast<int>(w * 64) + std::countr_zero(cand);
      }
      if (seg == kNone || seg >= N) continue;  // correction 2: the peer may not exist
      int sender = kNone;
      for (int z : G) {
        if (z != i && !busy[static_cast<std::size_t>(z)] && hold.get(z, seg) &&
            recvd[static_cast<std::size_t>(z)] != seg) {
          sender = z;
          break;
        }
      }
      out.transfers.push_back({round, sender, i, seg});  // correction 3: entries carry rounds
      busy[static_cast<std::size_t>(sender)] = true;
      hold.set(sender, seg, false);
      hold.set(i, seg, true);
      recvd[static_cast<std::size_t>(i)] = seg;
    }
    for (int p : G) {
      if (p != r && !hold.any(p)) {
        complete[static_cast<std::size_t>(p)] = true;
      } else {
        avail[static_cast<std::size_t>(p)] += d;
      }
    }
    out.finish = t0 + d;
    ++round;
    out.rounds = round;
  }
  // Rounds are counted up to the last round that moved data.
  out.rounds = out.transfers.empty() ? 0 : out.transfers.back().round + 1;
  return out;
}

}  // namespace

Inputs quantize(std::span<const double> arrival_seconds, int root, int segments,
                double round_seconds, double quantum) {
  if (!(quantum > 0)) throw std::invalid_argument("clairvoyant: quantum must be > 0");
  Inputs in;
  in.root = root;
  in.segments = segments;
  double lo = std::numeric_limits<double>::infinity();
  for (double a : arrival_seconds) {
    if (!std::isfinite(a)) throw std::invalid_argument("clairvoyant: arrival time not finite");
    lo = std::min(lo, a);
  }
  for (double a : arrival_seconds)
    in.arrival.push_back(std::llround((a - lo) / quantum));
  in.round = std::max<std::int64_t>(1, std::llround(round_seconds / quantum));
  return in;
}

Schedule schedule(const Inputs& in) {
  return run(in, true);
}
Schedule schedule_unskipped(const Inputs& in) {
  return run(in, false);
}

}  // namespace bgl::collectives::clv
