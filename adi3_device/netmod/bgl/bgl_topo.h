/*
 * Torus-aware process topologies: MPI_Cart_create/MPI_Cart_map and MPI_Graph_create/
 * MPI_Graph_map with reorder place ranks so that topology neighbours are torus neighbours where
 * the shapes allow (fewest hops otherwise), and MPI_Dims_create prefers dimensions that fold onto
 * the partition. The placement itself is libbglml's (bgl_nm_topo.h).
 */
#ifndef BGL_TOPO_H_INCLUDED
#define BGL_TOPO_H_INCLUDED

/* Installs MPI_Dims_create's hook (BGL_NM_TOPO=0 leaves MPICH's topology routines alone). */
int MPIDI_BGL_topo_init(void);
/* Gives an intracommunicator the device's Cartesian and graph mapping. */
void MPIDI_BGL_topo_comm_init(MPIR_Comm * comm);

#endif /* BGL_TOPO_H_INCLUDED */
