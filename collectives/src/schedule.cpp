#include "bgl/collectives/schedule.hpp"

#include <array>
#include <sstream>

namespace bgl::collectives {

std::string_view to_string(Buffer b) {
  constexpr std::array<std::string_view, 3> names{"send", "recv", "scratch"};
  return names[static_cast<std::size_t>(b)];
}

std::string_view to_string(StepKind k) {
  constexpr std::array<std::string_view, 10> names{
      "send",       "recv",        "reduce",         "copy",           "line_send",
      "tree_bcast", "tree_reduce", "tree_allreduce", "tree_allgather", "gi_barrier"};
  return names[static_cast<std::size_t>(k)];
}

bool is_tree(StepKind k) {
  return k == StepKind::tree_bcast || k == StepKind::tree_reduce || k == StepKind::tree_allreduce ||
         k == StepKind::tree_allgather;
}

bool is_tree_all(StepKind k) {
  return k == StepKind::tree_allreduce || k == StepKind::tree_allgather;
}

StepId Program::add(Step step) {
  step.round = round_;
  steps_.push_back(std::move(step));
  return static_cast<StepId>(steps_.size() - 1);
}

namespace {
std::vector<StepId> to_vec(std::span<const StepId> d) {
  return {d.begin(), d.end()};
}
}  // namespace

StepId Program::send(int peer, Region src, Tag tag, std::span<const StepId> deps) {
  Step s;
  s.kind = StepKind::send;
  s.peer = peer;
  s.src = src;
  s.tag = tag;
  s.deps = to_vec(deps);
  return add(std::move(s));
}

StepId Program::recv(int peer, Region dst, Tag tag, std::span<const StepId> deps) {
  Step s;
  s.kind = StepKind::recv;
  s.peer = peer;
  s.dst = dst;
  s.tag = tag;
  s.deps = to_vec(deps);
  return add(std::move(s));
}

StepId Program::add_moving(StepKind kind, int peer, Region src, Region dst,
                           std::span<const StepId> deps) {
  Step s;
  s.kind = kind;
  s.peer = peer;
  s.src = src;
  s.dst = dst;
  s.deps = to_vec(deps);
  return add(std::move(s));
}

StepId Program::reduce(Region dst, Region src, std::span<const StepId> deps) {
  return add_moving(StepKind::reduce, -1, src, dst, deps);
}

StepId Program::copy(Region dst, Region src, std::span<const StepId> deps) {
  return add_moving(StepKind::copy, -1, src, dst, deps);
}

StepId Program::line_send(torus_emu::Direction dir, std::vector<int> receivers, Region src, Tag tag,
                          std::span<const StepId> deps) {
  Step s;
  s.kind = StepKind::line_send;
  s.dir = dir;
  s.peers = std::move(receivers);
  s.src = src;
  s.tag = tag;
  s.deps = to_vec(deps);
  return add(std::move(s));
}

StepId Program::tree_bcast(int root, Region src, Region dst, std::span<const StepId> deps) {
  return add_moving(StepKind::tree_bcast, root, src, dst, deps);
}

StepId Program::tree_reduce(int root, Region src, Region dst, std::span<const StepId> deps) {
  return add_moving(StepKind::tree_reduce, root, src, dst, deps);
}

StepId Program::tree_allreduce(Region src, Region dst, std::span<const StepId> deps) {
  return add_moving(StepKind::tree_allreduce, -1, src, dst, deps);
}

StepId Program::tree_allgather(Region src, Region dst, std::span<const StepId> deps) {
  return add_moving(StepKind::tree_allgather, -1, src, dst, deps);
}

StepId Program::gi_barrier(std::span<const StepId> deps) {
  Step s;
  s.kind = StepKind::gi_barrier;
  s.deps = to_vec(deps);
  return add(std::move(s));
}

namespace {
void put(std::ostringstream& o, const Region& r) {
  o << to_string(r.buffer) << '[' << r.offset << '+' << r.bytes << ']';
}
}  // namespace

std::string to_string(const Step& s) {
  std::ostringstream o;
  o << to_string(s.kind);
  switch (s.kind) {
    case StepKind::send:
      o << " to " << s.peer << " tag " << s.tag << ' ';
      put(o, s.src);
      break;
    case StepKind::recv:
      o << " from " << s.peer << " tag " << s.tag << ' ';
      put(o, s.dst);
      break;
    case StepKind::line_send:
      o << ' ' << torus_emu::to_string(s.dir) << " to";
      for (int r : s.peers)
        o << ' ' << r;
      o << " tag " << s.tag << ' ';
      put(o, s.src);
      break;
    case StepKind::gi_barrier:
      break;
    case StepKind::tree_bcast:
    case StepKind::tree_reduce:
      o << " root " << s.peer;
      [[fallthrough]];
    default:
      o << ' ';
      put(o, s.dst);
      o << " <- ";
      put(o, s.src);
  }
  if (!s.deps.empty()) {
    o << " after";
    for (StepId d : s.deps)
      o << ' ' << d;
  }
  return o.str();
}

std::string to_string(const Program& program) {
  std::ostringstream o;
  o << "rank " << program.rank() << " (scratch " << program.scratch_bytes << " B)\n";
  for (std::size_t i = 0; i < program.size(); ++i)
    o << "  " << i << ": " << to_string(program.steps()[i]) << '\n';
  return o.str();
}

}  // namespace bgl::collectives
