#include "bgl/collective_net_emu/tree.hpp"

#include <deque>
#include <tuple>

#include "bgl/torus_emu/distance.hpp"

namespace bgl::collective_net_emu {

void Tree::attach(torus_emu::NodeId child, torus_emu::NodeId parent) {
  parent_[child] = static_cast<std::int32_t>(parent);
  depth_[child] = depth_[parent] + 1;
  building_[parent].push_back(child);
  order_.push_back(child);
}

Tree Tree::build(const torus_emu::Mapping& mapping, const TreeSpec& spec) {
  const std::vector<std::uint16_t> one(static_cast<std::size_t>(mapping.shape().node_count()), 0);
  return build(mapping, spec, one);
}

Tree Tree::build(const torus_emu::Mapping& mapping, const TreeSpec& spec,
                 std::span<const std::uint16_t> group) {
  const auto& shape = mapping.shape();
  const auto n = static_cast<std::size_t>(shape.node_count());
  // Occupied nodes, and per group its root: the node of the group's lowest rank.
  std::vector<bool> occupied(n, false);
  std::vector<torus_emu::NodeId> group_roots;
  std::vector<bool> group_seen;
  for (torus_emu::Rank r = 0; r < static_cast<torus_emu::Rank>(mapping.size()); ++r) {
    const torus_emu::NodeId v = mapping.location(r).node;
    occupied[v] = true;
    const std::size_t g = group[v];
    if (g >= group_seen.size()) group_seen.resize(g + 1, false);
    if (!group_seen[g]) {
      group_seen[g] = true;
      group_roots.push_back(v);  // rank 0's group first, then by lowest rank
    }
  }
  Tree t;
  t.spec_ = spec;
  t.parent_.assign(n, -1);
  t.depth_.assign(n, -1);
  t.building_.resize(n);
  const auto fanout = static_cast<std::size_t>(spec.fanout);
  const auto has_room = [&](torus_emu::NodeId p) { return t.building_[p].size() < fanout; };

  for (const torus_emu::NodeId root : group_roots) {
    const std::uint16_t g = group[root];
    const auto member = [&](torus_emu::NodeId v) { return occupied[v] && group[v] == g; };
    t.depth_[root] = 0;
    t.roots_.push_back(root);
    const std::size_t first = t.order_.size();
    t.order_.push_back(root);

    if (spec.kind == TreeKind::kary) {
      // Heap order over the group's occupied nodes, root first, the others by id.
      std::vector<torus_emu::NodeId> list{root};
      for (torus_emu::NodeId v = 0; v < n; ++v)
        if (member(v) && v != root) list.push_back(v);
      for (std::size_t i = 1; i < list.size(); ++i)
        t.attach(list[i], list[(i - 1) / fanout]);
      continue;
    }

    std::deque<torus_emu::NodeId> queue{root};
    torus_emu::NodeId scan = 0;  // unattached nodes below this id have been handled
    for (;;) {
      while (!queue.empty()) {
        const torus_emu::NodeId u = queue.front();
        queue.pop_front();
        for (int d = 0; d < torus_emu::kDirections && has_room(u); ++d) {
          const auto v = shape.neighbour(u, static_cast<torus_emu::Direction>(d));
          if (!v || !member(*v) || t.contains(*v)) continue;
          t.attach(*v, u);
          queue.push_back(*v);
        }
      }
      while (scan < n && (!member(scan) || t.contains(scan)))
        ++scan;
      if (scan == n) break;
      // Not reachable along torus links under the fan-out limit: the nearest node with room.
      std::optional<std::tuple<int, int, torus_emu::NodeId>> best;
      for (std::size_t i = first; i < t.order_.size(); ++i) {
        const torus_emu::NodeId p = t.order_[i];
        if (!has_room(p)) continue;
        const std::tuple<int, int, torus_emu::NodeId> key{
            torus_emu::distance(shape, shape.coord(scan), shape.coord(p)), t.depth_[p], p};
        if (!best || key < *best) best = key;
      }
      t.attach(scan, std::get<2>(*best));  // a leaf always has room
      queue.push_back(scan);
    }
  }
  t.finish();
  return t;
}

void Tree::finish() {
  const std::size_t n = parent_.size();
  first_child_.assign(n, 0);
  child_count_.assign(n, 0);
  for (std::size_t v = 0; v < n; ++v) {
    first_child_[v] = static_cast<std::uint32_t>(children_.size());
    child_count_[v] = static_cast<std::int32_t>(building_[v].size());
    children_.insert(children_.end(), building_[v].begin(), building_[v].end());
    if (depth_[v] > height_) height_ = depth_[v];
  }
  building_.clear();
  building_.shrink_to_fit();
}

std::optional<torus_emu::NodeId> Tree::parent(torus_emu::NodeId n) const {
  if (parent_[n] < 0) return std::nullopt;
  return static_cast<torus_emu::NodeId>(parent_[n]);
}

std::string Tree::describe() const {
  std::string s = spec_.to_string() + " tree over " + std::to_string(order_.size()) +
                  " nodes, root " + std::to_string(root()) + ", height " + std::to_string(height_);
  if (roots_.size() > 1) s += ", a forest of " + std::to_string(roots_.size()) + " host trees";
  return s;
}

}  // namespace bgl::collective_net_emu
