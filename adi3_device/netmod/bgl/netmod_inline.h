/*
 * The bgl netmod: all inline entry points. Point-to-point and probes are the netmod's own, straight
 * onto the message layer (bgl_pt2pt.h); RMA and partitioned operations are MPICH's
 * active-message fallbacks (MPIDIG over our AMs); collectives are the fallbacks too, with the six
 * BG/L accelerated ones offered to the collectives library first (bgl_coll.h).
 */

#ifndef NETMOD_INLINE_H_INCLUDED
#define NETMOD_INLINE_H_INCLUDED

#include "bgl_pt2pt.h"
#include "netmod_am_fallback_rma.h"
#include "bgl_coll.h"
/* MPICH's fallback collectives, with six of them routed through the hooks (bgl_coll.c): only the
 * calls inside the fallback header are renamed, the MPIR_*_impl prototypes were seen before. */
#define MPIR_Barrier_impl   MPIDI_BGL_barrier_hook
#define MPIR_Bcast_impl     MPIDI_BGL_bcast_hook
#define MPIR_Reduce_impl    MPIDI_BGL_reduce_hook
#define MPIR_Allreduce_impl MPIDI_BGL_allreduce_hook
#define MPIR_Allgather_impl MPIDI_BGL_allgather_hook
#define MPIR_Alltoall_impl  MPIDI_BGL_alltoall_hook
#include "netmod_am_fallback_coll.h"
#undef MPIR_Barrier_impl
#undef MPIR_Bcast_impl
#undef MPIR_Reduce_impl
#undef MPIR_Allreduce_impl
#undef MPIR_Allgather_impl
#undef MPIR_Alltoall_impl
#include "netmod_am_fallback_part.h"
#include "bgl_am.h"
#include "bgl_proc.h"
#include "bgl_noinline.h"

#endif /* NETMOD_INLINE_H_INCLUDED */
