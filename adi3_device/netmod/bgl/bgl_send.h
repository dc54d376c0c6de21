/*
 * The bgl netmod: the point-to-point send entry points (inline API).
 *
 * MPI_Send and MPI_Isend of a small contiguous buffer go to MPIDI_BGL_isend (bgl_send.c): one
 * MPIDIG_SEND active message that the message layer injects at once as a single packet, after
 * which the user's buffer is free, so the send completes without an MPIDIG request. Everything
 * else (synchronous sends, non-contiguous or larger data, a full injection FIFO) takes MPICH's
 * active-message path (MPIDIG). The receiver cannot tell the two apart: it matches both in
 * MPIDIG's queues, in the order they were sent.
 */

#ifndef BGL_SEND_H_INCLUDED
#define BGL_SEND_H_INCLUDED

#include "bgl_impl.h"

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_mpi_isend(const void *buf, MPI_Aint count,
                                                MPI_Datatype datatype, int rank, int tag,
                                                MPIR_Comm * comm, int context_offset,
                                                MPIDI_av_entry_t * addr, MPIR_Request ** request)
{
    if (unlikely(MPIDI_BGL_global.tracing))
        return MPIDI_BGL_isend_traced(buf, count, datatype, rank, tag, comm, context_offset, addr,
                                     request);
    return MPIDI_BGL_isend(buf, count, datatype, rank, tag, comm, context_offset, addr,
                           MPIR_ERR_NONE, request);
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_mpi_issend(const void *buf, MPI_Aint count,
                                                 MPI_Datatype datatype, int rank, int tag,
                                                 MPIR_Comm * comm, int context_offset,
                                                 MPIDI_av_entry_t * addr, MPIR_Request ** request)
{
    if (unlikely(MPIDI_BGL_global.tracing))
        return MPIDI_BGL_issend_traced(buf, count, datatype, rank, tag, comm, context_offset, addr,
                                      request);
    return MPIDIG_mpi_issend(buf, count, datatype, rank, tag, comm, context_offset, addr, 0, 0,
                             request);
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_isend_coll(const void *buf, MPI_Aint count,
                                                 MPI_Datatype datatype, int rank, int tag,
                                                 MPIR_Comm * comm, int context_offset,
                                                 MPIDI_av_entry_t * addr, MPIR_Request ** request,
                                                 MPIR_Errflag_t * errflag)
{
    return MPIDI_BGL_isend(buf, count, datatype, rank, tag, comm, context_offset, addr,
                           *errflag, request);
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_mpi_cancel_send(MPIR_Request * sreq)
{
    return MPIDIG_mpi_cancel_send(sreq);
}

#endif /* BGL_SEND_H_INCLUDED */
