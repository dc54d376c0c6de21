/*
 * The bgl netmod: the active-message entry points (inline API), thin wrappers over bgl_send.c.
 */

#ifndef BGL_AM_H_INCLUDED
#define BGL_AM_H_INCLUDED

#include "bgl_impl.h"

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_am_isend(int rank, MPIR_Comm * comm, int handler_id,
                                               const void *am_hdr, MPI_Aint am_hdr_sz,
                                               const void *data, MPI_Aint count,
                                               MPI_Datatype datatype, int src_vci, int dst_vci,
                                               MPIR_Request * sreq)
{
    return MPIDI_BGL_am_post(rank, comm, handler_id, am_hdr, am_hdr_sz, data, count, datatype,
                             sreq);
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_am_isend_reply(MPIR_Comm * comm, int src_rank, int handler_id,
                                                     const void *am_hdr, MPI_Aint am_hdr_sz,
                                                     const void *data, MPI_Aint count,
                                                     MPI_Datatype datatype, int src_vci,
                                                     int dst_vci, MPIR_Request * sreq)
{
    return MPIDI_BGL_am_post(src_rank, comm, handler_id, am_hdr, am_hdr_sz, data, count,
                             datatype, sreq);
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_am_send_hdr(int rank, MPIR_Comm * comm, int handler_id,
                                                  const void *am_hdr, MPI_Aint am_hdr_sz,
                                                  int src_vci, int dst_vci)
{
    return MPIDI_BGL_am_post(rank, comm, handler_id, am_hdr, am_hdr_sz, NULL, 0,
                             MPI_DATATYPE_NULL, NULL);
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_am_send_hdr_reply(MPIR_Comm * comm, int src_rank,
                                                        int handler_id, const void *am_hdr,
                                                        MPI_Aint am_hdr_sz, int src_vci,
                                                        int dst_vci)
{
    return MPIDI_BGL_am_post(src_rank, comm, handler_id, am_hdr, am_hdr_sz, NULL, 0,
                             MPI_DATATYPE_NULL, NULL);
}

MPL_STATIC_INLINE_PREFIX MPI_Aint MPIDI_NM_am_hdr_max_sz(void)
{
    return MPIDI_BGL_MAX_AM_HDR;
}

/* Every MPIDIG message is "eager" for MPIDIG: the message layer runs its own rendezvous for large
 * ones, which streams the data straight into the matched receive buffer (transport rendezvous:
 * unexpected messages are announced with MPIDIG_AM_ATTR__IS_RNDV, see bgl_recv.c). */
MPL_STATIC_INLINE_PREFIX MPI_Aint MPIDI_NM_am_eager_limit(void)
{
    return MPIR_CVAR_CH4_AM_PACK_BUFFER_SIZE;
}

MPL_STATIC_INLINE_PREFIX MPI_Aint MPIDI_NM_am_eager_buf_limit(void)
{
    return MPIR_CVAR_CH4_AM_PACK_BUFFER_SIZE;
}

MPL_STATIC_INLINE_PREFIX bool MPIDI_NM_am_check_eager(MPI_Aint am_hdr_sz, MPI_Aint data_sz,
                                                      const void *data, MPI_Aint count,
                                                      MPI_Datatype datatype, MPIR_Request * sreq)
{
    return true;
}

MPL_STATIC_INLINE_PREFIX MPIDIG_recv_data_copy_cb MPIDI_NM_am_get_data_copy_cb(uint32_t attr)
{
    return MPIDI_BGL_data_copy_cb;
}

MPL_STATIC_INLINE_PREFIX void MPIDI_NM_am_request_init(MPIR_Request * req)
{
    MPIDI_BGL_AMREQ(req).unpack_buf = NULL;
}

MPL_STATIC_INLINE_PREFIX void MPIDI_NM_am_request_finalize(MPIR_Request * req)
{
    if (MPIDI_BGL_AMREQ(req).unpack_buf) {
        MPL_free(MPIDI_BGL_AMREQ(req).unpack_buf);
        MPIDI_BGL_AMREQ(req).unpack_buf = NULL;
    }
}

MPL_STATIC_INLINE_PREFIX int MPIDI_NM_progress(int vci, int blocking)
{
    return MPIDI_BGL_progress_impl(vci, blocking);
}

#endif /* BGL_AM_H_INCLUDED */
