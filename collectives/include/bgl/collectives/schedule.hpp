#pragma once
// The schedule IR (docs/COLLECTIVES.md): what every algorithm generates and what the verifier, the
// torus cost model and the executor consume.
//
// A Schedule holds one Program per rank of the communicator. A Program is a list of Steps; a step
// may start once all its dependencies (earlier steps of the same program) have completed. Steps of
// different ranks are related only through communication: a send matches the recv with the same
// (source, destination, tag), and the hardware steps (collective network, global interrupt) match
// across all ranks by their order of appearance.
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "bgl/collectives/types.hpp"
#include "bgl/torus_emu/direction.hpp"

namespace bgl::collectives {

// The per-rank buffers a schedule addresses. `send` and `recv` are the user's buffers (their
// meaning per collective is in params.hpp); `scratch` is library-owned, Program::scratch_bytes
// long.
enum class Buffer : std::uint8_t { send, recv, scratch };
std::string_view to_string(Buffer b);

// A byte range of one buffer.
struct Region {
  Buffer buffer = Buffer::recv;
  std::uint64_t offset = 0;
  std::uint64_t bytes = 0;
  std::uint64_t end() const { return offset + bytes; }
  bool operator==(const Region&) const = default;
};
inline Region send_buf(std::uint64_t offset, std::uint64_t bytes) {
  return {Buffer::send, offset, bytes};
}
inline Region recv_buf(std::uint64_t offset, std::uint64_t bytes) {
  return {Buffer::recv, offset, bytes};
}
inline Region scratch_buf(std::uint64_t offset, std::uint64_t bytes) {
  return {Buffer::scratch, offset, bytes};
}

enum class StepKind : std::uint8_t {
  // Point-to-point over the torus (message layer). A send reads `src` and matches exactly one
  // recv of `peer` with the same tag, which writes `dst`; both regions have the same size.
  send,
  recv,
  // Local: dst = dst (op) src, element-wise with the schedule's data type and operation.
  reduce,
  // Local: dst = src.
  copy,
  // Deposit-bit line multicast (torus hardware): one packet stream from this rank along
  // direction `dir`; every rank in `peers` (in order along the line, the last one being the line's
  // destination) receives a copy. Each receiver has an ordinary recv from this rank with `tag`.
  line_send,
  // Collective network (tree) operations over the whole partition: every rank of the schedule
  // executes the same sequence of tree steps (same kind, root and size).
  //   tree_bcast:     root's src -> everyone's dst (on the root src may equal dst)
  //   tree_reduce:    everyone's src combined with the schedule's op -> root's dst
  //   tree_allreduce: everyone's src combined -> everyone's dst
  //   tree_allgather: everyone's src -> its block of everyone's dst (an allgather schedule's
  //                   blocks), assembled by the ALU's bitwise OR over zeros elsewhere
  tree_bcast,
  tree_reduce,
  tree_allreduce,
  tree_allgather,
  // Global interrupt network barrier over the whole partition.
  gi_barrier,
};
std::string_view to_string(StepKind k);
bool is_tree(StepKind k);
// Tree steps without a root: contributions go up the tree and every rank receives the result.
bool is_tree_all(StepKind k);

using StepId = std::uint32_t;
using Tag = std::uint32_t;

struct Step {
  StepKind kind = StepKind::copy;
  int peer = -1;               // send/recv: the other rank; tree_bcast/tree_reduce: the root
  Region src;                  // send, line_send, reduce, copy, tree_*: what is read
  Region dst;                  // recv, reduce, copy, tree_*: what is written
  Tag tag = 0;                 // send/recv/line_send: unique per (source, destination) pair
  torus_emu::Direction dir{};  // line_send: direction of travel
  std::vector<int> peers;      // line_send: receivers in line order
  std::vector<StepId> deps;    // steps of this program that must complete first
  int round = 0;               // the generator's round number (informational; the cost model
                               // derives the real critical path from the dependencies)
};

using Deps = std::initializer_list<StepId>;

// One rank's part of a schedule, built with the helpers below (each returns the new step's id).
class Program {
 public:
  Program() = default;
  explicit Program(int rank) : rank_(rank) {}

  int rank() const { return rank_; }
  std::span<const Step> steps() const { return steps_; }
  const Step& step(StepId id) const { return steps_[id]; }
  std::size_t size() const { return steps_.size(); }

  // The round recorded in subsequently added steps.
  void set_round(int round) { round_ = round; }
  int round() const { return round_; }

  StepId send(int peer, Region src, Tag tag, std::span<const StepId> deps = {});
  StepId recv(int peer, Region dst, Tag tag, std::span<const StepId> deps = {});
  StepId reduce(Region dst, Region src, std::span<const StepId> deps = {});
  StepId copy(Region dst, Region src, std::span<const StepId> deps = {});
  StepId line_send(torus_emu::Direction dir, std::vector<int> receivers, Region src, Tag tag,
                   std::span<const StepId> deps = {});
  StepId tree_bcast(int root, Region src, Region dst, std::span<const StepId> deps = {});
  StepId tree_reduce(int root, Region src, Region dst, std::span<const StepId> deps = {});
  StepId tree_allreduce(Region src, Region dst, std::span<const StepId> deps = {});
  StepId tree_allgather(Region src, Region dst, std::span<const StepId> deps = {});
  StepId gi_barrier(std::span<const StepId> deps = {});

  // The same with an initializer list: p.send(peer, r, tag, {a, b}).
  StepId send(int peer, Region src, Tag tag, Deps deps) { return send(peer, src, tag, span(deps)); }
  StepId recv(int peer, Region dst, Tag tag, Deps deps) { return recv(peer, dst, tag, span(deps)); }
  StepId reduce(Region dst, Region src, Deps deps) { return reduce(dst, src, span(deps)); }
  StepId copy(Region dst, Region src, Deps deps) { return copy(dst, src, span(deps)); }

  // Appends an arbitrary step (validated by the verifier, not here).
  StepId add(Step step);

  // Library-owned scratch space this rank needs.
  std::uint64_t scratch_bytes = 0;

  // The algorithm that generated this program, for statistics (bglrun --stats): build_schedule()
  // and Library set it; a caller that runs a generator itself may (a name that outlives the
  // program, such as Algorithm::name; empty: "program").
  std::string_view algorithm() const { return algorithm_; }
  void set_algorithm(std::string_view name) { algorithm_ = name; }

 private:
  // A step that reads `src` and writes `dst` (peer: the root of a rooted tree step, else -1).
  StepId add_moving(StepKind kind, int peer, Region src, Region dst, std::span<const StepId> deps);

  static std::span<const StepId> span(Deps d) { return {d.begin(), d.size()}; }
  int rank_ = 0;
  int round_ = 0;
  std::vector<Step> steps_;
  std::string_view algorithm_;  // a registry name: static storage
};

struct Params;

// A whole schedule: one program per rank, for the parameters it was generated for.
struct Schedule {
  std::string algorithm;
  std::vector<Program> programs;  // programs[r].rank() == r
  int size() const { return static_cast<int>(programs.size()); }
};

// Human-readable dump (one line per step) for debugging and error reports.
std::string to_string(const Step& step);
std::string to_string(const Program& program);

}  // namespace bgl::collectives
