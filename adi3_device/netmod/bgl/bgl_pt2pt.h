/*
 * The bgl netmod: MPI point-to-point (inline API), each call one step onto bgl_pt2pt.c, which
 * matches in one place and talks to the message layer directly (no MPIDIG on this path).
 */

#ifndef BGL_PT2PT_H_INCLUDED
#define BGL_PT2PT_H_INCLUDED

#include "bgl_impl.h"

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_mpi_isend(const void *buf, MPI_Aint count,
                                                MPI_Datatype datatype, int rank, int tag,
                                                MPIR_Comm * comm, int context_offset,
                                                MPIDI_av_entry_t * addr, MPIR_Request ** request)
{
    if (unlikely(MPIDI_BGL_global.tracing))
        return MPIDI_BGL_isend_traced(buf, count, datatype, rank, tag, comm, context_offset, addr,
                                      0, request);
    return MPIDI_BGL_isend(buf, count, datatype, rank, tag, comm, context_offset, addr,
                           MPIR_ERR_NONE, 0, request);
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_mpi_issend(const void *buf, MPI_Aint count,
                                                 MPI_Datatype datatype, int rank, int tag,
                                                 MPIR_Comm * comm, int context_offset,
                                                 MPIDI_av_entry_t * addr, MPIR_Request ** request)
{
    if (unlikely(MPIDI_BGL_global.tracing))
        return MPIDI_BGL_isend_traced(buf, count, datatype, rank, tag, comm, context_offset, addr,
                                      1, request);
    return MPIDI_BGL_isend(buf, count, datatype, rank, tag, comm, context_offset, addr,
                           MPIR_ERR_NONE, 1, request);
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_isend_coll(const void *buf, MPI_Aint count,
                                                 MPI_Datatype datatype, int rank, int tag,
                                                 MPIR_Comm * comm, int context_offset,
                                                 MPIDI_av_entry_t * addr, MPIR_Request ** request,
                                                 MPIR_Errflag_t * errflag)
{
    return MPIDI_BGL_isend(buf, count, datatype, rank, tag, comm, context_offset, addr,
                           *errflag, 0, request);
}

/* Sends cannot be cancelled (as in MPICH's own devices). */
MPL_STATIC_INLINE_PREFIX int MPIDI_NM_mpi_cancel_send(MPIR_Request * sreq)
{
    return MPI_SUCCESS;
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_mpi_irecv(void *buf, MPI_Aint count, MPI_Datatype datatype,
                                                int rank, int tag, MPIR_Comm * comm,
                                                int context_offset, MPIDI_av_entry_t * addr,
                                                MPIR_Request ** request, MPIR_Request * partner)
{
    return MPIDI_BGL_irecv(buf, count, datatype, rank, tag, comm, context_offset, request);
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_mpi_imrecv(void *buf, MPI_Aint count,
                                                 MPI_Datatype datatype, MPIR_Request * message)
{
    return MPIDI_BGL_imrecv(buf, count, datatype, message);
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_mpi_cancel_recv(MPIR_Request * rreq)
{
    return MPIDI_BGL_cancel_recv(rreq);
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_mpi_improbe(int source, int tag, MPIR_Comm * comm,
                                                  int context_offset, MPIDI_av_entry_t * addr,
                                                  int *flag, MPIR_Request ** message,
                                                  MPI_Status * status)
{
    return MPIDI_BGL_probe(source, tag, comm, context_offset, flag, message, status);
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_mpi_iprobe(int source, int tag, MPIR_Comm * comm,
                                                 int context_offset, MPIDI_av_entry_t * addr,
                                                 int *flag, MPI_Status * status)
{
    return MPIDI_BGL_probe(source, tag, comm, context_offset, flag, NULL, status);
}

#endif /* BGL_PT2PT_H_INCLUDED */
