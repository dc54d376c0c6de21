/* Torus-aware process topologies (filled in below). */
#ifndef BGL_TOPO_H_INCLUDED
#define BGL_TOPO_H_INCLUDED
int MPIDI_BGL_topo_init(void);
#endif
