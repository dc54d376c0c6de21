#include "bgl/collectives/library.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#include "bgl/collective_net_emu/collective_network.hpp"
#include "bgl/collectives/select.hpp"
#include "bgl/message_layer/session.hpp"

namespace bgl::collectives {

namespace {

std::unique_ptr<collective_net_emu::CollectiveNetwork> network_of(message_layer::Session& s) {
  try {
    return std::make_unique<collective_net_emu::CollectiveNetwork>(
        s.runtime().machine().job(), s.runtime().rank(), s.runtime().wait_policy(),
        collective_net_emu::RouteClass::combine1);
  } catch (const std::exception& e) {
    spdlog::debug("collectives: no collective network ({}); torus algorithms only", e.what());
    return nullptr;
  }
}

// The cache of generated programs is bounded: a program is a few KiB, and an application that
// cycles through many sizes just regenerates.
constexpr std::size_t kMaxPrograms = 256;

}  // namespace

struct Library::Member {
  // What runs a call of one kind (operation, blocks, root, type, reduction) while BGL_COLL_<OP>
  // keeps its value: the selection and its program, so that a repeated call neither selects nor
  // generates again. The key has the total size; a program also depends on how the blocks divide
  // it (an allgather's or a reduce-scatter's), on the segment size and on predicted arrivals, so
  // the choice keeps those to compare.
  struct Choice {
    std::string override_value;
    std::vector<std::uint64_t> counts;
    std::uint64_t segment = 0;
    std::vector<double> arrival;
    Selection selection;
    Program program;

    bool serves(std::string_view value, const Params& x) const {
      return override_value == value && segment == x.segment && counts == x.counts &&
             arrival == x.arrival;
    }
  };
  Communicator comm;
  std::vector<std::uint32_t> world_ranks;
  using Key = std::tuple<int, std::uint64_t, int, int, int>;
  std::map<Key, Choice> choices;

  Member(Executor& e, Topology t, const Group& g)
      : comm(e, std::move(t), g.size, g.rank, g.id),
        world_ranks(g.world_ranks.begin(), g.world_ranks.end()) {}

  bool same_group(const Group& g) const {
    return comm.size() == g.size && comm.rank() == g.rank &&
           std::ranges::equal(world_ranks, g.world_ranks);
  }

  const Choice& choose(const Params& x) {
    const char* value = std::getenv(override_variable(x.op));
    const std::string_view override_value = value ? value : "";
    const Key k{static_cast<int>(x.op), x.bytes(), x.root, static_cast<int>(x.dtype),
                static_cast<int>(x.reduce_op)};
    auto it = choices.find(k);
    if (it != choices.end() && it->second.serves(override_value, x)) return it->second;
    Choice c{std::string(override_value), x.counts, x.segment, x.arrival,
             select_algorithm(x, value),  Program{}};
    if (c.selection.algorithm) {
      c.program = c.selection.algorithm->generate(x, comm.rank());
      c.program.set_algorithm(c.selection.algorithm->name);
    }
    if (it != choices.end()) return it->second = std::move(c);
    if (choices.size() >= kMaxPrograms) choices.clear();
    return choices.emplace(k, std::move(c)).first->second;
  }
};

Library::Library(message_layer::Session& session)
    : session_(session), net_(network_of(session)), executor_(session.layer(), net_.get()) {}

Library::~Library() = default;

Library::Member& Library::member(const Group& g) {
  const auto job = static_cast<std::uint32_t>(session_.size());
  if (g.size < 1 || g.rank < 0 || g.rank >= g.size)
    throw std::invalid_argument("collectives: rank " + std::to_string(g.rank) +
                                " in a communicator of " + std::to_string(g.size));
  if (g.world_ranks.empty() && static_cast<std::uint32_t>(g.size) > job)
    throw std::invalid_argument("collectives: a communicator of " + std::to_string(g.size) +
                                " ranks in a job of " + std::to_string(job));
  if (auto it = members_.find(g.id); it != members_.end() && it->second->same_group(g))
    return *it->second;
  // New, or an id reused for another group (the caller did not report the old one's end).
  Topology t;
  t.mapping = &session_.mapping();
  if (!g.world_ranks.empty()) {
    if (g.world_ranks.size() != static_cast<std::size_t>(g.size))
      throw std::invalid_argument("collectives: " + std::to_string(g.world_ranks.size()) +
                                  " job ranks for a communicator of " + std::to_string(g.size));
    std::vector<bool> seen(job, false);
    for (std::size_t i = 0; i < g.world_ranks.size(); ++i) {
      const std::uint32_t r = g.world_ranks[i];
      if (r >= job || seen[r])
        throw std::invalid_argument("collectives: member " + std::to_string(i) + " is job rank " +
                                    std::to_string(r) + ", outside the job of " +
                                    std::to_string(job) + " or repeated");
      seen[r] = true;
      t.world_ranks.push_back(static_cast<int>(r));
    }
  }
  t.whole_partition = net_ && g.whole_job && static_cast<std::uint32_t>(g.size) == job;
  auto m = std::make_unique<Member>(executor_, std::move(t), g);
  Member& ref = *m;
  members_[g.id] = std::move(m);
  return ref;
}

bool Library::run(const Group& group, Params x, Buffers b) {
  Member& m = member(group);
  x.topology = m.comm.topology();
  if (std::string e = x.validate(); !e.empty()) throw std::invalid_argument(e);
  const Member::Choice& choice = m.choose(x);
  const Selection& s = choice.selection;
  if (!s.algorithm) return false;
  spdlog::trace("collectives: {} {} B on communicator {}: {} ({})", to_string(x.op), x.bytes(),
                group.id, s.algorithm->name, s.reason);
  job_runtime::Trace* trace = executor_.layer().endpoint().trace();
  const std::uint64_t start = trace ? trace->now() : 0;
  job_runtime::CallSites* sites = executor_.layer().endpoint().call_sites();
  // The program's call site: above the MPI library and the device's hooks when they called us.
  const std::uintptr_t site =
      sites ? job_runtime::CallSites::program_caller(
                  reinterpret_cast<std::uintptr_t>(__builtin_return_address(0)))
            : 0;
  const auto site_start = sites ? sites->start() : job_runtime::CallSites::Start{};
  m.comm.execute(choice.program, x, b);
  if (sites) [[unlikely]]
    sites->record({site, to_string(x.op), s.algorithm->name, s.reason, group.size, x.bytes(),
                   x.op == Collective::bcast || x.op == Collective::reduce ? x.root : -1},
                  site_start);
  // bglrun --trace: the call as one span named by the collective and the algorithm chosen, with
  // the selection rule that chose it (around the executor's span of the run).
  if (trace) [[unlikely]]
    trace->span(job_runtime::TraceCategory::collective,
                trace->intern(std::string(to_string(x.op)) + ": " + std::string(s.algorithm->name)),
                start, {-1, x.bytes(), trace->intern(s.reason)});
  return true;
}

void Library::forget(std::uint32_t id) {
  members_.erase(id);
}

std::span<const std::byte> Library::stage(std::span<const std::byte> input) {
  staging_.resize(input.size());
  if (!input.empty()) std::memcpy(staging_.data(), input.data(), input.size());
  return staging_;
}

}  // namespace bgl::collectives
