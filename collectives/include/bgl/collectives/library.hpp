#pragma once
// A task's entry to the collectives library for callers that name their communicators by id and
// leave the choice of algorithm to the library: the MPI device's collective hooks.
//
// run() selects the algorithm (select.hpp: BGL_COLL_<OP> or the defaults), generates its program
// once per call shape and communicator, and executes it; it answers `false` when no algorithm is
// selected, so that the caller runs its own. Every member of a communicator must make the same
// calls in the same order with matching parameters, and so gets the same answer.
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "bgl/collectives/executor.hpp"
#include "bgl/collectives/params.hpp"
#include "bgl/collectives/schedule.hpp"

namespace bgl::message_layer {
class Session;
}

namespace bgl::collectives {

// A communicator as the caller knows it.
struct Group {
  std::uint32_t id = 0;  // unique among the communicators alive together, equal on all members
  int size = 1;
  int rank = 0;
  std::span<const std::uint32_t> world_ranks;  // member -> job rank; empty: i -> i
  bool whole_job = false;                      // every task of the job is a member
};

class Library {
 public:
  // Uses the session's message layer, its mapping and, when the partition has one, its
  // collective network (class combine1) for tree and global-interrupt steps.
  explicit Library(message_layer::Session& session);
  ~Library();
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;

  Executor& executor() { return executor_; }

  // Runs `params` (its topology is filled in here) over `buffers`; false: not handled. Throws
  // std::invalid_argument for inconsistent parameters or group, ConfigError for a bad override.
  bool run(const Group& group, Params params, Buffers buffers);
  // A communicator is gone: its cached programs go too.
  void forget(std::uint32_t id);

  // A copy of `input` in a buffer reused across calls, for in-place operations (the executor
  // reads its inputs from the send buffer while it writes the results).
  std::span<const std::byte> stage(std::span<const std::byte> input);

 private:
  struct Member;
  Member& member(const Group& group);

  message_layer::Session& session_;
  std::unique_ptr<collective_net_emu::CollectiveNetwork> net_;
  Executor executor_;
  std::unordered_map<std::uint32_t, std::unique_ptr<Member>> members_;
  std::vector<std::byte> staging_;
};

}  // namespace bgl::collectives
