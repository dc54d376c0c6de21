#pragma once
// The collective network's spanning tree over the nodes that run tasks.
//
// BG/L wires its collective network as a tree whose routers have three links besides the one to
// the parent. The default here follows the torus: a breadth-first tree from the node of rank 0
// along torus links, each node adopting at most `fanout` (3) not yet attached neighbours in link
// order +x, -x, +y, -y, +z, -z. Only nodes with tasks take part (the emulator has no router thread:
// a node's combining is done by its tasks). A node that torus links cannot reach under the fan-out
// limit (a sparse mapping) is attached to the nearest tree node with a free child slot (by torus
// distance, then depth, then id). The result is deterministic: every process builds the same tree.
//
// A job placed on several hosts gets a forest instead: one such tree per host over the host's own
// nodes (rooted at the node of the host's lowest rank, the whole job's root on rank 0's host), so
// that no tree edge crosses hosts; the hosts' partial results meet by remote stores (README).
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "bgl/collective_net_emu/options.hpp"
#include "bgl/torus_emu/mapping.hpp"

namespace bgl::collective_net_emu {

class Tree {
 public:
  static Tree build(const torus_emu::Mapping& mapping, const TreeSpec& spec);
  // One tree per group (host) of nodes: `group[node]` is the node's group. Nodes are only
  // attached to nodes of their own group.
  static Tree build(const torus_emu::Mapping& mapping, const TreeSpec& spec,
                    std::span<const std::uint16_t> group);

  torus_emu::NodeId root() const { return order_.front(); }
  // The roots of the forest: root() first, then the other groups' roots by group.
  std::span<const torus_emu::NodeId> roots() const { return roots_; }
  bool contains(torus_emu::NodeId n) const { return n < depth_.size() && depth_[n] >= 0; }
  std::optional<torus_emu::NodeId> parent(torus_emu::NodeId n) const;
  std::span<const torus_emu::NodeId> children(torus_emu::NodeId n) const {
    return {children_.data() + first_child_[n], static_cast<std::size_t>(child_count_[n])};
  }
  int depth(torus_emu::NodeId n) const { return depth_[n]; }
  int height() const { return height_; }  // the deepest node's depth
  // The tree's nodes in the order they were attached (root first, parents before children).
  std::span<const torus_emu::NodeId> nodes() const { return order_; }
  const TreeSpec& spec() const { return spec_; }
  // "torus:3 tree over 64 nodes, root 0, height 5" (with several groups: "... forest of 2 trees")
  std::string describe() const;

 private:
  Tree() = default;
  void attach(torus_emu::NodeId child, torus_emu::NodeId parent);
  void finish();

  TreeSpec spec_;
  std::vector<std::int32_t> parent_, depth_;  // per node of the shape; -1 when not in the tree
  std::vector<std::vector<torus_emu::NodeId>> building_;
  std::vector<torus_emu::NodeId> children_, order_, roots_;
  std::vector<std::uint32_t> first_child_;
  std::vector<std::int32_t> child_count_;
  int height_ = 0;
};

}  // namespace bgl::collective_net_emu
