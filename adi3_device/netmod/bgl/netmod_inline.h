/*
 * The bgl netmod: all inline entry points. Point-to-point, probe, RMA, partitioned and
 * collective operations are MPICH's active-message fallbacks (MPIDIG over our AMs).
 */

#ifndef NETMOD_INLINE_H_INCLUDED
#define NETMOD_INLINE_H_INCLUDED

#include "netmod_am_fallback.h"
#include "bgl_am.h"
#include "bgl_proc.h"
#include "bgl_noinline.h"

#endif /* NETMOD_INLINE_H_INCLUDED */
