#include "bgl/collectives/verifier.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <sstream>
#include <tuple>
#include <unordered_map>

namespace bgl::collectives {

namespace {

constexpr std::uint64_t kUndefined = ~std::uint64_t{0};

// Provenance of every byte of one buffer: the offset it came from (kUndefined: never written) and
// the set of ranks it combines, `words` 64-bit words per byte.
struct Cells {
  std::size_t words = 1;
  std::vector<std::uint64_t> origin;
  std::vector<std::uint64_t> sets;

  void resize(std::uint64_t bytes, std::size_t w) {
    words = w;
    origin.assign(bytes, kUndefined);
    sets.assign(bytes * w, 0);
  }
  std::span<std::uint64_t> set(std::uint64_t i) { return {sets.data() + i * words, words}; }
  std::span<const std::uint64_t> set(std::uint64_t i) const {
    return {sets.data() + i * words, words};
  }
};

enum class State : std::uint8_t { waiting, active, done };

struct RankState {
  std::array<Cells, 3> buf;
  std::vector<State> state;
  std::vector<std::uint32_t> pending;           // unfinished dependencies per step
  std::vector<std::vector<StepId>> dependents;  // step -> steps waiting for it
  std::vector<StepId> ready;                    // may start at the next level
  std::vector<StepId> active;                   // started, not finished
  std::vector<StepId> hw;                       // tree and global-interrupt steps in order
  // Per step: the ranks it has (transitively) heard from, through its dependencies only (not
  // through whatever happened to complete earlier in the lock-step run), plus what the step itself
  // received once complete.
  std::vector<std::vector<std::uint64_t>> know;
};

struct Key {
  int src, dst;
  Tag tag;
  bool operator==(const Key&) const = default;
};
struct KeyHash {
  std::size_t operator()(const Key& k) const {
    return (static_cast<std::size_t>(static_cast<unsigned>(k.src)) * 0x9E3779B97F4A7C15ull) ^
           (static_cast<std::size_t>(static_cast<unsigned>(k.dst)) * 0xC2B2AE3D27D4EB4Full) ^ k.tag;
  }
};

struct Ref {
  int rank;
  StepId step;
};

class Run {
 public:
  Run(const Schedule& s, const Params& p, const VerifyOptions& o)
      : s_(s), p_(p), o_(o), words_((static_cast<std::size_t>(p.p) + 63) / 64) {}

  VerifyResult go() {
    if (s_.size() != p_.p) {
      error("schedule has " + std::to_string(s_.size()) +
            " programs for p = " + std::to_string(p_.p));
      return std::move(res_);
    }
    ranks_.resize(static_cast<std::size_t>(p_.p));
    match_.resize(static_cast<std::size_t>(p_.p));
    for (int r = 0; r < p_.p; ++r)
      match_[static_cast<std::size_t>(r)].resize(prog(r).size());
    static_checks();
    if (!res_.ok) return std::move(res_);
    for (int r = 0; r < p_.p && res_.ok; ++r)
      order_check(r);
    if (!res_.ok) return std::move(res_);
    init();
    execute();
    if (res_.ok) final_check();
    return std::move(res_);
  }

 private:
  // ---- reporting
  void error(const std::string& what) {
    res_.ok = false;
    if (res_.errors.size() < o_.max_errors) res_.errors.push_back(what);
  }
  std::string where(int r, StepId id) const {
    return "rank " + std::to_string(r) + " step " + std::to_string(id) + " (" +
           to_string(prog(r).step(id)) + ")";
  }
  void step_error(int r, StepId id, const std::string& what) { error(where(r, id) + ": " + what); }

  const Program& prog(int r) const { return s_.programs[static_cast<std::size_t>(r)]; }
  RankState& st(int r) { return ranks_[static_cast<std::size_t>(r)]; }

  std::uint64_t capacity(int r, Buffer b) const {
    switch (b) {
      case Buffer::send:
        return p_.send_bytes(r);
      case Buffer::recv:
        return p_.recv_bytes(r);
      case Buffer::scratch:
        return prog(r).scratch_bytes;
    }
    return 0;
  }

  bool in_bounds(int r, StepId id, const Region& g, const char* role) {
    const std::uint64_t cap = capacity(r, g.buffer);
    if (g.end() < g.offset || g.end() > cap) {
      step_error(r, id,
                 std::string(role) + " region " + std::string(to_string(g.buffer)) + "[" +
                     std::to_string(g.offset) + "+" + std::to_string(g.bytes) + "] overruns the " +
                     std::to_string(cap) + "-byte " + std::string(to_string(g.buffer)) + " buffer");
      return false;
    }
    return true;
  }

  bool writable(int r, StepId id, const Region& g) {
    if (g.buffer == Buffer::send) {
      step_error(r, id, "writes the user's send buffer");
      return false;
    }
    return in_bounds(r, id, g, "destination");
  }

  static bool overlap(const Region& a, const Region& b) {
    return a.buffer == b.buffer && a.bytes && b.bytes && a.offset < b.end() && b.offset < a.end();
  }

  // What a step reads and writes on rank r (tree roots and non-roots differ).
  struct Access {
    std::array<Region, 2> reads{};
    std::array<Region, 2> writes{};
    int nreads = 0, nwrites = 0;
  };
  Access access(int r, const Step& x) const {
    Access a;
    auto rd = [&](const Region& g) { a.reads[static_cast<std::size_t>(a.nreads++)] = g; };
    auto wr = [&](const Region& g) { a.writes[static_cast<std::size_t>(a.nwrites++)] = g; };
    switch (x.kind) {
      case StepKind::send:
      case StepKind::line_send:
        rd(x.src);
        break;
      case StepKind::recv:
        wr(x.dst);
        break;
      case StepKind::copy:
        rd(x.src);
        wr(x.dst);
        break;
      case StepKind::reduce:
        rd(x.src);
        rd(x.dst);
        wr(x.dst);
        break;
      case StepKind::tree_bcast:
        if (r == x.peer) rd(x.src);
        if (!(r == x.peer && x.src == x.dst)) wr(x.dst);
        break;
      case StepKind::tree_reduce:
        rd(x.src);
        if (r == x.peer) wr(x.dst);
        break;
      case StepKind::tree_allreduce:
      case StepKind::tree_allgather:
        rd(x.src);
        wr(x.dst);
        break;
      case StepKind::gi_barrier:
        break;
    }
    return a;
  }

  // A tree allgather reads this rank's block and writes the whole result.
  bool gather_shaped(int r, const Step& x) const {
    return p_.op == Collective::allgather && x.src.bytes == p_.send_bytes(r) &&
           x.dst.bytes == p_.recv_bytes(r);
  }

  // ---- checks that need no execution
  void static_checks() {
    std::unordered_map<Key, Ref, KeyHash> sends, recvs;
    const bool hw_ok = p_.topology.whole_partition;
    const std::size_t elem = size_of(p_.dtype);
    for (int r = 0; r < p_.p; ++r) {
      const Program& pr = prog(r);
      if (pr.rank() != r)
        error("program " + std::to_string(r) + " is for rank " + std::to_string(pr.rank()));
      for (StepId id = 0; id < pr.size(); ++id) {
        const Step& x = pr.step(id);
        for (StepId d : x.deps)
          if (d >= id)
            step_error(r, id,
                       "depends on step " + std::to_string(d) + ", which is not an earlier step");
        auto peer_ok = [&](int q) {
          if (q < 0 || q >= p_.p) {
            step_error(r, id,
                       "peer " + std::to_string(q) + " outside 0.." + std::to_string(p_.p - 1));
            return false;
          }
          if (q == r) {
            step_error(r, id, "communicates with itself (use copy)");
            return false;
          }
          return true;
        };
        switch (x.kind) {
          case StepKind::send:
            if (peer_ok(x.peer) && in_bounds(r, id, x.src, "source") &&
                !sends.emplace(Key{r, x.peer, x.tag}, Ref{r, id}).second)
              step_error(r, id,
                         "a second message to " + std::to_string(x.peer) + " with tag " +
                             std::to_string(x.tag));
            break;
          case StepKind::line_send:
            if (x.peers.empty()) step_error(r, id, "line with no receivers");
            if (!in_bounds(r, id, x.src, "source")) break;
            for (int q : x.peers)
              if (peer_ok(q) && !sends.emplace(Key{r, q, x.tag}, Ref{r, id}).second)
                step_error(r, id,
                           "a second message to " + std::to_string(q) + " with tag " +
                               std::to_string(x.tag));
            break;
          case StepKind::recv:
            if (peer_ok(x.peer) && writable(r, id, x.dst) &&
                !recvs.emplace(Key{x.peer, r, x.tag}, Ref{r, id}).second)
              step_error(r, id,
                         "a second receive from " + std::to_string(x.peer) + " with tag " +
                             std::to_string(x.tag));
            break;
          case StepKind::copy:
          case StepKind::reduce:
            if (!in_bounds(r, id, x.src, "source") || !writable(r, id, x.dst)) break;
            if (x.src.bytes != x.dst.bytes)
              step_error(r, id, "source and destination sizes differ");
            else if (overlap(x.src, x.dst))
              step_error(r, id, "source and destination overlap");
            else if (x.kind == StepKind::reduce && x.src.bytes % elem)
              step_error(r, id,
                         "reduces " + std::to_string(x.src.bytes) +
                             " bytes, not a whole number of " + std::string(to_string(p_.dtype)) +
                             " elements");
            break;
          case StepKind::tree_bcast:
          case StepKind::tree_reduce:
          case StepKind::tree_allreduce:
          case StepKind::tree_allgather:
          case StepKind::gi_barrier:
            if (!hw_ok) {
              step_error(r, id,
                         "uses the collective network or global interrupt, but the "
                         "communicator does not span the whole partition");
              break;
            }
            st(r).hw.push_back(id);
            if (x.kind == StepKind::gi_barrier) break;
            if (x.kind == StepKind::tree_allgather && !gather_shaped(r, x)) {
              step_error(r, id,
                         "a collective-network allgather takes this rank's block (" +
                             std::to_string(p_.op == Collective::allgather ? p_.send_bytes(r) : 0) +
                             " bytes) into all of an allgather's result");
              break;
            }
            if (!is_tree_all(x.kind) && (x.peer < 0 || x.peer >= p_.p)) {
              step_error(r, id, "root outside the communicator");
              break;
            }
            {
              const Access a = access(r, x);
              for (int i = 0; i < a.nreads; ++i)
                in_bounds(r, id, a.reads[static_cast<std::size_t>(i)], "source");
              for (int i = 0; i < a.nwrites; ++i)
                writable(r, id, a.writes[static_cast<std::size_t>(i)]);
              if (x.kind != StepKind::tree_allgather && a.nreads && a.nwrites &&
                  a.reads[0].bytes != a.writes[0].bytes)
                step_error(r, id, "source and destination sizes differ");
              if (x.kind != StepKind::tree_bcast && x.src.bytes % elem)
                step_error(r, id, "reduces a partial element");
            }
            break;
        }
      }
    }
    // In program order, so that a line's receivers keep their order along the line.
    for (int r = 0; r < p_.p; ++r)
      for (StepId id = 0; id < prog(r).size(); ++id) {
        const Step& x = prog(r).step(id);
        if (x.kind != StepKind::send && x.kind != StepKind::line_send) continue;
        const std::vector<int> one{x.peer};
        for (int q : x.kind == StepKind::send ? one : x.peers) {
          auto it = recvs.find(Key{r, q, x.tag});
          if (it == recvs.end()) {
            if (q >= 0 && q < p_.p && q != r)
              step_error(r, id,
                         "no receive at rank " + std::to_string(q) + " from " + std::to_string(r) +
                             " with tag " + std::to_string(x.tag));
            continue;
          }
          const std::uint64_t rb = prog(it->second.rank).step(it->second.step).dst.bytes;
          if (x.src.bytes != rb)
            step_error(r, id,
                       "sends " + std::to_string(x.src.bytes) + " bytes but " +
                           where(it->second.rank, it->second.step) + " receives " +
                           std::to_string(rb));
          match_[static_cast<std::size_t>(r)][id].push_back(it->second);
        }
      }
    for (const auto& [k, ref] : recvs)
      if (!sends.count(k))
        step_error(ref.rank, ref.step, "no matching send at rank " + std::to_string(k.src));
    // The collective network and the global interrupt: the same sequence on every rank.
    if (p_.p > 0 && hw_ok) {
      const auto& h0 = st(0).hw;
      for (int r = 1; r < p_.p; ++r) {
        const auto& h = st(r).hw;
        if (h.size() != h0.size()) {
          error("rank " + std::to_string(r) + " has " + std::to_string(h.size()) +
                " collective-network/global-interrupt steps, rank 0 has " +
                std::to_string(h0.size()));
          continue;
        }
        for (std::size_t i = 0; i < h.size(); ++i) {
          const Step& a = prog(0).step(h0[i]);
          const Step& b = prog(r).step(h[i]);
          // What crosses the tree: the result of a broadcast or an allgather, else the input.
          auto carried = [](const Step& x) {
            const bool result =
                x.kind == StepKind::tree_bcast || x.kind == StepKind::tree_allgather;
            return result ? x.dst.bytes : x.src.bytes;
          };
          const std::uint64_t ab = carried(a);
          const std::uint64_t bb = carried(b);
          if (a.kind != b.kind || (!is_tree_all(a.kind) && a.peer != b.peer) ||
              (a.kind != StepKind::gi_barrier && ab != bb))
            step_error(
                r, h[i],
                "hardware step " + std::to_string(i) + " differs from rank 0's " + to_string(a));
        }
      }
    }
  }

  // ---- execution
  void init() {
    for (int r = 0; r < p_.p; ++r) {
      RankState& rs = st(r);
      const Program& pr = prog(r);
      if (o_.track_data) {
        rs.buf[0].resize(capacity(r, Buffer::send), words_);
        rs.buf[1].resize(capacity(r, Buffer::recv), words_);
        rs.buf[2].resize(capacity(r, Buffer::scratch), words_);
      }
      auto own = [&](Cells& c, int who) {
        for (std::uint64_t i = 0; i < c.origin.size(); ++i) {
          c.origin[i] = i;
          c.set(i)[static_cast<std::size_t>(who) / 64] |= std::uint64_t{1} << (who % 64);
        }
      };
      own(rs.buf[0], r);
      if (p_.op == Collective::bcast && r == p_.root) own(rs.buf[1], r);
      rs.know.assign(pr.size(), std::vector<std::uint64_t>(words_, 0));
      rs.state.assign(pr.size(), State::waiting);
      rs.pending.assign(pr.size(), 0);
      rs.dependents.assign(pr.size(), {});
      for (StepId id = 0; id < pr.size(); ++id) {
        for (StepId d : pr.step(id).deps) {
          ++rs.pending[id];
          rs.dependents[d].push_back(id);
        }
        if (rs.pending[id] == 0) rs.ready.push_back(id);
      }
    }
  }

  Cells& cells(int r, Buffer b) { return st(r).buf[static_cast<std::size_t>(b)]; }

  // Moves provenance; returns false (after reporting) on an undefined read.
  bool move(int from, const Region& s, int to, const Region& d, int r_err, StepId id_err) {
    if (!o_.track_data) return true;
    Cells& a = cells(from, s.buffer);
    Cells& b = cells(to, d.buffer);
    bool ok = true;
    for (std::uint64_t i = 0; i < s.bytes; ++i) {
      const std::uint64_t o = a.origin[s.offset + i];
      if (o == kUndefined && o_.strict_reads && ok) {
        step_error(r_err, id_err,
                   "reads undefined byte " + std::string(to_string(s.buffer)) + "[" +
                       std::to_string(s.offset + i) + "] of rank " + std::to_string(from));
        ok = false;
      }
      b.origin[d.offset + i] = o;
      std::ranges::copy(a.set(s.offset + i), b.set(d.offset + i).begin());
    }
    return ok;
  }

  // dst (rank to) op= src (rank from), byte-wise provenance union.
  void combine(int from, const Region& s, int to, const Region& d, int r_err, StepId id_err) {
    if (!o_.track_data) return;
    Cells& a = cells(from, s.buffer);
    Cells& b = cells(to, d.buffer);
    for (std::uint64_t i = 0; i < s.bytes; ++i) {
      const std::uint64_t oa = a.origin[s.offset + i];
      const std::uint64_t ob = b.origin[d.offset + i];
      auto sa = a.set(s.offset + i);
      auto sb = b.set(d.offset + i);
      std::string bad;
      if (oa == kUndefined || ob == kUndefined)
        bad = "combines an undefined byte";
      else if (oa != ob)
        bad = "combines element byte " + std::to_string(oa) + " with byte " + std::to_string(ob);
      else
        for (std::size_t w = 0; w < words_; ++w)
          if (sa[w] & sb[w]) bad = "counts a rank's contribution twice";
      if (!bad.empty()) {
        step_error(r_err, id_err,
                   bad + " at " + std::string(to_string(d.buffer)) + "[" +
                       std::to_string(d.offset + i) + "]");
        return;
      }
      for (std::size_t w = 0; w < words_; ++w)
        sb[w] |= sa[w];
    }
  }

  void or_into(std::vector<std::uint64_t>& a, const std::vector<std::uint64_t>& b) {
    for (std::size_t w = 0; w < words_; ++w)
      a[w] |= b[w];
  }

  // Every two steps of a rank that touch the same bytes, at least one of them writing, must be
  // ordered by a dependency path: otherwise the executor may run them in either order or at once.
  // Checked on the dependency graph, independently of the lock-step run's timing.
  void order_check(int r) {
    const Program& pr = prog(r);
    const std::size_t n = pr.size();
    const std::size_t w = (n + 63) / 64;
    std::vector<std::uint64_t> anc(n * w, 0);  // anc[j] has bit i: step i precedes step j
    for (StepId j = 0; j < n; ++j)
      for (StepId d : pr.step(j).deps) {
        if (d >= j) continue;
        anc[j * w + d / 64] |= std::uint64_t{1} << (d % 64);
        for (std::size_t k = 0; k < w; ++k)
          anc[j * w + k] |= anc[d * w + k];
      }
    struct Touch {
      std::uint64_t lo, hi;
      StepId step;
      bool write;
    };
    std::array<std::vector<Touch>, 3> touches;
    for (StepId i = 0; i < n; ++i) {
      const Access a = access(r, pr.step(i));
      for (int k = 0; k < a.nreads; ++k) {
        const Region& g = a.reads[static_cast<std::size_t>(k)];
        if (g.bytes)
          touches[static_cast<std::size_t>(g.buffer)].push_back({g.offset, g.end(), i, false});
      }
      for (int k = 0; k < a.nwrites; ++k) {
        const Region& g = a.writes[static_cast<std::size_t>(k)];
        if (g.bytes)
          touches[static_cast<std::size_t>(g.buffer)].push_back({g.offset, g.end(), i, true});
      }
    }
    for (auto& t : touches) {
      std::ranges::sort(t, [](const Touch& a, const Touch& b) { return a.lo < b.lo; });
      for (std::size_t i = 0; i < t.size(); ++i)
        for (std::size_t j = i + 1; j < t.size() && t[j].lo < t[i].hi; ++j) {
          if (!t[i].write && !t[j].write) continue;
          if (t[i].step == t[j].step) continue;
          const StepId a = std::min(t[i].step, t[j].step), b = std::max(t[i].step, t[j].step);
          if (anc[b * w + a / 64] >> (a % 64) & 1) continue;
          step_error(r, b,
                     "touches the same bytes as step " + std::to_string(a) + " (" +
                         to_string(pr.step(a)) + ") with no dependency path between them");
          return;
        }
    }
  }

  void finish(int r, StepId id, std::vector<Ref>& done) {
    st(r).state[id] = State::done;
    done.push_back({r, id});
  }

  void execute() {
    std::size_t hw_next = 0;
    std::size_t hw_total = p_.p ? st(0).hw.size() : 0;
    for (int level = 0;; ++level) {
      bool started = false;
      for (int r = 0; r < p_.p; ++r) {
        RankState& rs = st(r);
        std::vector<StepId> now;
        now.swap(rs.ready);
        for (StepId id : now) {
          rs.state[id] = State::active;
          rs.active.push_back(id);
          auto& k = rs.know[id];
          k[static_cast<std::size_t>(r) / 64] |= std::uint64_t{1} << (r % 64);
          for (StepId d : prog(r).step(id).deps)
            or_into(k, rs.know[d]);
          started = true;
        }
      }
      if (!res_.ok) return;
      std::vector<Ref> done;
      // Local steps.
      for (int r = 0; r < p_.p; ++r)
        for (StepId id : st(r).active) {
          const Step& x = prog(r).step(id);
          if (x.kind == StepKind::copy) {
            move(r, x.src, r, x.dst, r, id);
            finish(r, id, done);
          } else if (x.kind == StepKind::reduce) {
            combine(r, x.src, r, x.dst, r, id);
            finish(r, id, done);
          }
        }
      // Point-to-point and line transfers whose receivers are all posted.
      for (int r = 0; r < p_.p; ++r)
        for (StepId id : st(r).active) {
          const Step& x = prog(r).step(id);
          if (x.kind != StepKind::send && x.kind != StepKind::line_send) continue;
          const auto& rv = match_[static_cast<std::size_t>(r)][id];
          bool all = true;
          for (const Ref& m : rv)
            all = all && st(m.rank).state[m.step] == State::active;
          if (!all) continue;
          Transfer t{level, r, {}, x.src.bytes, x.kind, x.dir};
          for (const Ref& m : rv) {
            move(r, x.src, m.rank, prog(m.rank).step(m.step).dst, r, id);
            or_into(st(m.rank).know[m.step], st(r).know[id]);
            finish(m.rank, m.step, done);
            t.receivers.push_back(m.rank);
          }
          finish(r, id, done);
          res_.transfers.push_back(std::move(t));
        }
      // The next collective-network / global-interrupt step, once every rank has started it.
      if (hw_next < hw_total) {
        bool all = true;
        for (int r = 0; r < p_.p && all; ++r)
          all = st(r).state[st(r).hw[hw_next]] == State::active;
        if (all) {
          hardware(level, hw_next, done);
          ++hw_next;
        }
      }
      if (!res_.ok) return;
      for (const Ref& d : done) {
        RankState& rs = st(d.rank);
        std::erase(rs.active, d.step);
        for (StepId n : rs.dependents[d.step])
          if (--rs.pending[n] == 0) rs.ready.push_back(n);
      }
      bool comm = false;
      for (const Ref& d : done) {
        const StepKind k = prog(d.rank).step(d.step).kind;
        comm = comm || (k != StepKind::copy && k != StepKind::reduce);
      }
      if (comm) ++res_.rounds;
      if (!started && done.empty()) {
        res_.levels = level;
        report_stuck();
        return;
      }
    }
  }

  void hardware(int level, std::size_t idx, std::vector<Ref>& done) {
    const Step& x0 = prog(0).step(st(0).hw[idx]);
    Transfer t{level, is_tree_all(x0.kind) ? 0 : x0.peer, {}, 0, x0.kind, {}};
    std::vector<std::uint64_t> all(words_, 0);
    for (int r = 0; r < p_.p; ++r)
      or_into(all, st(r).know[st(r).hw[idx]]);
    switch (x0.kind) {
      case StepKind::gi_barrier:
        t.source = 0;
        for (int r = 0; r < p_.p; ++r)
          st(r).know[st(r).hw[idx]] = all;
        break;
      case StepKind::tree_bcast: {
        const int root = x0.peer;
        const Step& xr = prog(root).step(st(root).hw[idx]);
        t.bytes = xr.src.bytes;
        const auto rk = st(root).know[st(root).hw[idx]];
        for (int r = 0; r < p_.p; ++r) {
          const Step& x = prog(r).step(st(r).hw[idx]);
          if (!(r == root && xr.src == xr.dst)) move(root, xr.src, r, x.dst, r, st(r).hw[idx]);
          or_into(st(r).know[st(r).hw[idx]], rk);
        }
        break;
      }
      case StepKind::tree_allgather: {
        // Every rank's block lands at its place in everyone's result.
        t.bytes = x0.dst.bytes;
        for (int from = 0; from < p_.p; ++from) {
          const Step& xf = prog(from).step(st(from).hw[idx]);
          for (int r = 0; r < p_.p; ++r) {
            const Step& x = prog(r).step(st(r).hw[idx]);
            const Region block{x.dst.buffer, x.dst.offset + p_.displ(from), xf.src.bytes};
            move(from, xf.src, r, block, r, st(r).hw[idx]);
          }
        }
        for (int r = 0; r < p_.p; ++r)
          or_into(st(r).know[st(r).hw[idx]], all);
        break;
      }
      case StepKind::tree_reduce:
      case StepKind::tree_allreduce: {
        // Combine everyone's contribution in a scratch copy of rank 0's, then deliver.
        const Step& a = prog(0).step(st(0).hw[idx]);
        t.bytes = a.src.bytes;
        if (!o_.track_data) {
          for (int r = 0; r < p_.p; ++r)
            or_into(st(r).know[st(r).hw[idx]], all);
          break;
        }
        Cells acc;
        acc.resize(a.src.bytes, words_);
        const Cells& c0 = cells(0, a.src.buffer);
        for (std::uint64_t i = 0; i < a.src.bytes; ++i) {
          acc.origin[i] = c0.origin[a.src.offset + i];
          std::ranges::copy(c0.set(a.src.offset + i), acc.set(i).begin());
        }
        for (int r = 1; r < p_.p; ++r) {
          const Step& x = prog(r).step(st(r).hw[idx]);
          const Cells& c = cells(r, x.src.buffer);
          for (std::uint64_t i = 0; i < x.src.bytes; ++i) {
            const std::uint64_t o = c.origin[x.src.offset + i];
            auto sa = c.set(x.src.offset + i);
            auto sb = acc.set(i);
            bool bad = o == kUndefined || acc.origin[i] == kUndefined || o != acc.origin[i];
            for (std::size_t w = 0; w < words_; ++w)
              bad = bad || (sa[w] & sb[w]);
            if (bad) {
              step_error(r, st(r).hw[idx],
                         "tree reduction combines mismatched or undefined "
                         "bytes at src offset " +
                             std::to_string(x.src.offset + i));
              return;
            }
            for (std::size_t w = 0; w < words_; ++w)
              sb[w] |= sa[w];
          }
        }
        for (int r = 0; r < p_.p; ++r) {
          const Step& x = prog(r).step(st(r).hw[idx]);
          if (x0.kind == StepKind::tree_reduce && r != x0.peer) continue;
          Cells& d = cells(r, x.dst.buffer);
          for (std::uint64_t i = 0; i < x.dst.bytes; ++i) {
            d.origin[x.dst.offset + i] = acc.origin[i];
            std::ranges::copy(acc.set(i), d.set(x.dst.offset + i).begin());
          }
          or_into(st(r).know[st(r).hw[idx]], all);
        }
        break;
      }
      default:
        break;
    }
    for (int r = 0; r < p_.p; ++r) {
      if (r != t.source || x0.kind == StepKind::gi_barrier || is_tree_all(x0.kind))
        t.receivers.push_back(r);
      finish(r, st(r).hw[idx], done);
    }
    res_.transfers.push_back(std::move(t));
  }

  void report_stuck() {
    std::size_t shown = 0;
    for (int r = 0; r < p_.p; ++r) {
      const Program& pr = prog(r);
      for (StepId id = 0; id < pr.size(); ++id) {
        if (st(r).state[id] == State::done) continue;
        if (shown++ == 0) res_.ok = false;
        if (st(r).state[id] == State::active)
          step_error(r, id, "deadlock: started but its partner never became ready");
        else if (shown <= 3)
          step_error(r, id, "deadlock: never started");
      }
    }
  }

  // ---- the result the collective defines
  void final_check() {
    std::vector<std::uint64_t> all(words_, 0);
    for (int r = 0; r < p_.p; ++r)
      all[static_cast<std::size_t>(r) / 64] |= std::uint64_t{1} << (r % 64);
    std::vector<std::uint64_t> one(words_, 0);
    for (int r = 0; r < p_.p; ++r) {
      const Cells& c = cells(r, Buffer::recv);
      if (o_.track_data) {
        // expected(i) -> (origin offset, contributing rank or -1 for all)
        auto check = [&](std::uint64_t i, std::uint64_t origin, int who) {
          std::span<const std::uint64_t> want = all;
          if (who >= 0) {
            std::ranges::fill(one, 0);
            one[static_cast<std::size_t>(who) / 64] |= std::uint64_t{1} << (who % 64);
            want = one;
          }
          const auto got = c.set(i);
          if (c.origin[i] == origin && std::ranges::equal(got, want)) return true;
          std::ostringstream o;
          o << "rank " << r << " ends with recv[" << i << "] = ";
          if (c.origin[i] == kUndefined) {
            o << "undefined";
          } else {
            o << "byte " << c.origin[i] << " of {";
            int shown = 0;
            for (int q = 0; q < p_.p && shown < 8; ++q)
              if (got[static_cast<std::size_t>(q) / 64] >> (q % 64) & 1)
                o << (shown++ ? "," : "") << q;
            o << (shown == 8 ? ",...}" : "}");
          }
          o << ", expected byte " << origin << " of "
            << (who >= 0 ? "rank " + std::to_string(who) : "all ranks");
          error(o.str());
          return false;
        };
        const std::uint64_t n = c.origin.size();
        switch (p_.op) {
          case Collective::bcast:
            for (std::uint64_t i = 0; i < n; ++i)
              if (!check(i, i, p_.root)) break;
            break;
          case Collective::reduce:
          case Collective::allreduce:
            for (std::uint64_t i = 0; i < n; ++i)
              if (!check(i, i, -1)) break;
            break;
          case Collective::reduce_scatter:
            for (std::uint64_t i = 0; i < n; ++i)
              if (!check(i, p_.displ(r) + i, -1)) break;
            break;
          case Collective::allgather:
            for (int q = 0; q < p_.p; ++q) {
              bool ok = true;
              for (std::uint64_t i = 0; i < p_.counts[static_cast<std::size_t>(q)] && ok; ++i)
                ok = check(p_.displ(q) + i, i, q);
              if (!ok) break;
            }
            break;
          case Collective::alltoall:
            for (int q = 0; q < p_.p; ++q) {
              bool ok = true;
              for (std::uint64_t i = 0; i < p_.a2a_count(q, r) && ok; ++i)
                ok = check(p_.a2a_recv_displ(q, r) + i, p_.a2a_send_displ(q, r) + i, q);
              if (!ok) break;
            }
            break;
          case Collective::barrier:
            break;
        }
      }
      if (p_.op == Collective::barrier || p_.op == Collective::allreduce ||
          p_.op == Collective::allgather || p_.op == Collective::alltoall)
        if (std::vector<std::uint64_t> k(words_, 0); [&] {
              k[static_cast<std::size_t>(r) / 64] |= std::uint64_t{1} << (r % 64);
              for (const auto& s : st(r).know)
                or_into(k, s);
              return !std::ranges::equal(k, all);
            }())
          error("rank " + std::to_string(r) +
                " finishes without having heard (transitively) from every rank");
    }
  }

  const Schedule& s_;
  const Params& p_;
  const VerifyOptions o_;  // a copy: cheap, and no lifetime to reason about
  std::size_t words_;
  std::vector<RankState> ranks_;
  std::vector<std::vector<std::vector<Ref>>> match_;  // rank, send step -> its receives
  VerifyResult res_;
};

}  // namespace

std::string VerifyResult::summary() const {
  if (ok) return "ok";
  std::string s;
  for (const auto& e : errors)
    s += e + "\n";
  return s;
}

VerifyResult verify(const Schedule& schedule, const Params& params, VerifyOptions options) {
  if (std::string e = params.validate(); !e.empty()) {
    VerifyResult r;
    r.ok = false;
    r.errors.push_back(e);
    return r;
  }
  return Run(schedule, params, options).go();
}

}  // namespace bgl::collectives
