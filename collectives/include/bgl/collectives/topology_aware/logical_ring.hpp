#pragma once
// Contention-free logical rings. On a tree topology the DFS order of the
// machines; on the torus a nearest-neighbour Hamiltonian cycle of the partition (a snake), so that
// when every rank sends to its successor each directed link carries at most one message.
#include <utility>
#include <vector>

#include "bgl/collectives/params.hpp"

namespace bgl::collectives::ring {

// A tree of switches and machines: vertices 0..vertices-1, undirected edges, and for every vertex
// the rank of the machine it is (-1 for a switch). Machines should be leaves.
struct TreeTopology {
  int vertices = 0;
  std::vector<std::pair<int, int>> edges;
  std::vector<int> rank_of_vertex;
};

// Ranks in DFS order from `start`, neighbours visited in ascending vertex order. Throws
// std::invalid_argument if the graph is not a tree or the machines' ranks are not 0..k-1.
std::vector<int> dfs_ring(const TreeTopology& tree, int start = 0);

// The largest number of messages on one directed tree edge when ring[i] sends to ring[i+1] for
// all i simultaneously (1 = contention free).
int tree_ring_max_load(const TreeTopology& tree, const std::vector<int>& ring);

// The nodes of `shape` in the order of a Hamiltonian cycle whose consecutive nodes (including
// last -> first) are torus neighbours: a snake through the dimensions, trying the dimension
// orders until the closing step is one hop. Empty when no order closes (all extents odd on a
// mesh, for instance).
std::vector<torus_emu::NodeId> snake_cycle(const torus_emu::Shape& shape);

// The communicator's ring: ranks ordered by their node's position on snake_cycle (then by t);
// without a mapping, or when no snake closes, the identity ring (with XYZ order on a torus and
// dimension-ordered routing it is contention-free as well).
std::vector<int> torus_ring(const Params& params);

}  // namespace bgl::collectives::ring
