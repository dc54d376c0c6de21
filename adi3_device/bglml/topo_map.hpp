// Placing MPI process topologies onto the emulated torus: the mapping behind the device's
// MPI_Cart_create/MPI_Cart_map (reorder), MPI_Graph_create/MPI_Graph_map and MPI_Dims_create.
// Pure computation over the communicator's task locations; every rank computes the same answer.
#pragma once

#include <optional>
#include <span>
#include <vector>

#include "bgl/torus_emu/mapping.hpp"
#include "bgl/torus_emu/shape.hpp"

namespace bgl::adi3_device::topo {

// Where one rank of a communicator lives.
struct Place {
  torus_emu::Coord node;
  int t = 0;
};

// A graph over "positions" (Cartesian coordinates or graph nodes), in CSR form; an edge listed on
// both of its ends counts twice, which weights it like the MPI graph that listed it twice.
struct Graph {
  std::vector<int> index;  // positions + 1 entries: neighbours of p are edges[index[p]..index[p+1])
  std::vector<int> edges;
  int size() const { return static_cast<int>(index.size()) - 1; }
};

// The Cartesian grid dims/periods as a graph: one edge per pair of neighbours (the +1 neighbour in
// every dimension; the wrap-around one for periodic dimensions longer than 2).
Graph cartesian_graph(std::span<const int> dims, std::span<const int> periods);

// Sum of torus hops over the graph's edges when position p runs on places[assignment[p]].
long total_hops(const torus_emu::Shape& shape, const Graph& graph, std::span<const Place> places,
                std::span<const int> assignment);

// Which of `places` (a communicator's ranks, by rank) runs each Cartesian position (row-major, the
// last dimension fastest, as MPI numbers them). Tries the identity (MPI's no-reorder answer), every
// folding of the box the ranks fill onto the Cartesian dimensions (snake order, so neighbours stay
// neighbours) and a greedy embedding, and returns the one with the fewest hops summed over all
// pairs of Cartesian neighbours (the identity on ties). prod(dims) <= places.size().
std::vector<int> cart_map(const torus_emu::Shape& shape, std::span<const Place> places,
                          std::span<const int> dims, std::span<const int> periods);

// The same for an MPI graph (index/edges as MPI_Graph_create takes them) of nnodes <= places.size()
// nodes: the identity; for a graph that is one cycle through all the places (a ring) when they
// fill a box, the ring laid along the box's Hamiltonian cycles (snakes closed by a wrap-around,
// and combs over a dimension of even extent: every edge one hop or on one node wherever the box
// has such a cycle); unless one of those already has every edge within one hop, a greedy
// embedding improved by swaps (up to 1,024 ranks); when an edge is still longer than one hop and
// the graph's nodes are every slot of the partition (up to 512), bglmap's mapping optimiser
// (torus_emu::optimize_mapping, fixed seed, no time cap); whichever has the fewest hops over the
// graph's edges (the identity on ties).
std::vector<int> graph_map(const torus_emu::Shape& shape, std::span<const Place> places,
                           std::span<const int> index, std::span<const int> edges);

// MPI_Dims_create for a communicator of exactly the places given: dims whose zero entries are
// filled so that the grid can be folded onto the box the places fill (every Cartesian neighbour a
// torus neighbour or on the same node after cart_map), the most balanced such choice, the filled
// entries non-increasing; nullopt when no such choice exists (or the places fill no box).
std::optional<std::vector<int>> torus_dims(const torus_emu::Shape& shape,
                                           std::span<const Place> places,
                                           std::span<const int> dims);

}  // namespace bgl::adi3_device::topo
