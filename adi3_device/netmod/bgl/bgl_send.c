/*
 * The bgl netmod: send descriptors, and sending active messages.
 *
 * One MPIDIG active message = one message of the bglemu message layer: MPIDIG's handler id is
 * the layer's handler id, MPIDIG's header the layer's user header (the layer copies it when the
 * message is posted). The layer chooses the protocol by size: one-packet, eager (adaptive eager
 * with BGL_ML_ADAPTIVE_EAGER=1) up to BGL_ML_EAGER_LIMIT, rendezvous above it.
 *
 * Data: contiguous buffers are sent in place. Non-contiguous datatypes are described by an iovec
 * array when it is short (at most BGL_NM_MAX_IOV entries, default 64) and the layer gathers each
 * packet's bytes from it; otherwise they are packed once into a temporary buffer.
 *
 * Completion: the layer calls send_done() when the data are no longer needed (after the last
 * packet is injected; for a rendezvous, after the receiver asked for the data and they have been
 * injected), and that calls MPIDIG's origin callback for the handler exactly once, or completes
 * the request of a point-to-point send (bgl_pt2pt.c) once.
 */

#include "bgl_impl.h"

#define MPIDI_BGL_SEND_CHUNK 64

void *MPIDI_BGL_chunks_new(MPIDI_BGL_chunks_t * c, size_t bytes)
{
    if (c->n == c->max) {
        int n = c->max ? 2 * c->max : 16;
        void **blocks = MPL_realloc(c->blocks, n * sizeof(void *), MPL_MEM_BUFFER);
        if (blocks == NULL)
            return NULL;
        c->blocks = blocks;
        c->max = n;
    }
    void *block = MPL_malloc(bytes, MPL_MEM_BUFFER);
    if (block)
        c->blocks[c->n++] = block;
    return block;
}

void MPIDI_BGL_chunks_free(MPIDI_BGL_chunks_t * c)
{
    for (int i = 0; i < c->n; i++)
        MPL_free(c->blocks[i]);
    MPL_free(c->blocks);
    c->blocks = NULL;
    c->n = c->max = 0;
}

static int send_pool_grow(void)
{
    int mpi_errno = MPI_SUCCESS;
    MPIDI_BGL_global_t *g = &MPIDI_BGL_global;
    MPIDI_BGL_send_t *chunk = MPIDI_BGL_chunks_new(&g->send_chunks,
                                                   MPIDI_BGL_SEND_CHUNK * sizeof(*chunk));
    MPIR_ERR_CHKANDJUMP(chunk == NULL, mpi_errno, MPI_ERR_OTHER, "**nomem");
    for (int i = 0; i < MPIDI_BGL_SEND_CHUNK; i++) {
        chunk[i].next = g->free_sends;
        g->free_sends = &chunk[i];
    }

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

void MPIDI_BGL_send_pool_free(void)
{
    MPIDI_BGL_chunks_free(&MPIDI_BGL_global.send_chunks);
    MPIDI_BGL_global.free_sends = NULL;
}

/* Back to the free list, with its pack buffer or iovec array freed. */
void MPIDI_BGL_send_give_back(MPIDI_BGL_send_t * s)
{
    MPL_free(s->buf);
    s->buf = NULL;
    s->next = MPIDI_BGL_global.free_sends;
    MPIDI_BGL_global.free_sends = s;
}

static void send_done(bgl_msg_send_t * msg)
{
    MPIDI_BGL_send_t *s = (MPIDI_BGL_send_t *) msg->context;
    MPIR_Request *sreq = s->sreq;
    int handler_id = s->handler_id;

    MPIDI_BGL_send_give_back(s);
    if (sreq && handler_id == BGL_HANDLER_DEVICE_SEND) {
        /* a point-to-point send: its request is a plain one */
        MPID_Request_complete(sreq);
    } else if (sreq) {
        int mpi_errno = MPIDIG_global.origin_cbs[handler_id] (sreq);
        MPIR_Assert(mpi_errno == MPI_SUCCESS);
    }
}

/* Points the message's data at a non-contiguous buffer: a short iovec array or a packed copy. */
static int describe_noncontig(MPIDI_BGL_send_t * s, const void *data, MPI_Aint count,
                              MPI_Datatype datatype, MPI_Aint data_sz)
{
    int mpi_errno = MPI_SUCCESS;
    MPI_Aint num_iov = 0;

    MPIR_Typerep_iov_len(count, datatype, data_sz, &num_iov);
    if (num_iov > 0 && num_iov <= MPIDI_BGL_global.max_iov) {
        struct iovec *iov = MPL_malloc(num_iov * sizeof(struct iovec), MPL_MEM_BUFFER);
        MPIR_ERR_CHKANDJUMP(iov == NULL, mpi_errno, MPI_ERR_OTHER, "**nomem");
        MPI_Aint actual_iov_len, actual_iov_bytes;
        mpi_errno = MPIR_Typerep_to_iov(data, count, datatype, 0, iov, num_iov, data_sz,
                                        &actual_iov_len, &actual_iov_bytes);
        if (mpi_errno != MPI_SUCCESS) {
            MPL_free(iov);
            MPIR_ERR_CHECK(mpi_errno);
        }
        MPIR_Assert(actual_iov_bytes == data_sz);
        s->buf = iov;
        s->msg.iov = iov;
        s->msg.iov_count = (size_t) actual_iov_len;
    } else {
        void *packed = MPL_malloc(data_sz, MPL_MEM_BUFFER);
        MPIR_ERR_CHKANDJUMP(packed == NULL, mpi_errno, MPI_ERR_OTHER, "**nomem");
        MPI_Aint actual_pack_bytes;
        mpi_errno = MPIR_Typerep_pack(data, count, datatype, 0, packed, data_sz,
                                      &actual_pack_bytes);
        if (mpi_errno != MPI_SUCCESS) {
            MPL_free(packed);
            MPIR_ERR_CHECK(mpi_errno);
        }
        MPIR_Assert(actual_pack_bytes == data_sz);
        s->buf = packed;
        s->msg.data = packed;
        s->msg.bytes = (size_t) data_sz;
    }

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* A descriptor from the free list for a message without data (yet), or an error. */
int MPIDI_BGL_send_take(uint32_t dest, int handler_id, const void *hdr, size_t hdr_bytes,
                        MPIR_Request * sreq, MPIDI_BGL_send_t ** out)
{
    MPIDI_BGL_global_t *g = &MPIDI_BGL_global;
    if (g->free_sends == NULL) {
        int mpi_errno = send_pool_grow();
        if (mpi_errno != MPI_SUCCESS)
            return mpi_errno;
    }
    MPIDI_BGL_send_t *s = g->free_sends;
    g->free_sends = s->next;

    s->sreq = sreq;
    s->handler_id = handler_id;
    s->buf = NULL;
    s->msg.dest = dest;
    s->msg.handler = (uint8_t) handler_id;
    s->msg.protocol = BGL_MSG_AUTO;
    s->msg.header = hdr;
    s->msg.header_bytes = hdr_bytes;
    s->msg.data = NULL;
    s->msg.bytes = 0;
    s->msg.iov = NULL;
    s->msg.iov_count = 0;
    s->msg.done = send_done;
    s->msg.remote_done = NULL;
    s->msg.context = s;
    *out = s;
    return MPI_SUCCESS;
}

/* Hands the message to the layer. The layer refuses only what the job's configuration or the
 * device got wrong (a protocol forced by BGL_ML_PROTOCOL that cannot carry the message, a header
 * too large), never something the program could handle, so the job stops at once naming it. An
 * error returned instead would leave the peer waiting forever for a message that was never sent:
 * under MPI_ERRORS_RETURN, and inside MPICH's collective algorithms, which note a failed step's
 * error and go on to their next step even when it is fatal. *sent (if not NULL) says whether the
 * data went out in the call (BGL_MSG_SENT: the caller's buffer is free already). */
int MPIDI_BGL_send_post(MPIDI_BGL_send_t * s, int *sent)
{
    int mpi_errno = MPI_SUCCESS;
    if (unlikely(MPIDI_BGL_global.virtual_time))
        bgl_msg_vt_charge(MPIDI_BGL_global.session, BGL_MSG_VT_MPI_SEND);
    int rc = bgl_msg_post(MPIDI_BGL_global.session, &s->msg);
    if (sent)
        *sent = rc == BGL_MSG_SENT;
    if (rc < 0) {
        char what[MPI_MAX_ERROR_STRING];
        snprintf(what, sizeof(what), "the bgl device cannot send a message to rank %u: %s",
                 (unsigned) s->msg.dest, bgl_msg_last_error());
        MPIDI_BGL_send_give_back(s);
        MPID_Abort(MPIR_Process.comm_world, MPI_SUCCESS, 1, what);
        MPIR_ERR_SETFATALANDJUMP1(mpi_errno, MPI_ERR_OTHER, "**fail", "**fail %s", what);
    }
  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* Points the message at `count` elements of `datatype` at `buf`: contiguous data in place,
 * others through describe_noncontig(). */
int MPIDI_BGL_send_data(MPIDI_BGL_send_t * s, const void *buf, MPI_Aint count,
                        MPI_Datatype datatype)
{
    int dt_contig;
    MPI_Aint data_sz, dt_true_lb;
    MPIR_Datatype *dt_ptr;

    if (count <= 0)
        return MPI_SUCCESS;
    MPIDI_Datatype_get_info(count, datatype, dt_contig, data_sz, dt_ptr, dt_true_lb);
    (void) dt_ptr;
    if (data_sz == 0)
        return MPI_SUCCESS;
    if (!dt_contig)
        return describe_noncontig(s, buf, count, datatype, data_sz);
    s->msg.data = MPIR_get_contig_ptr(buf, dt_true_lb);
    s->msg.bytes = (size_t) data_sz;
    return MPI_SUCCESS;
}

int MPIDI_BGL_am_post(int rank, MPIR_Comm * comm, int handler_id, const void *am_hdr,
                      MPI_Aint am_hdr_sz, const void *data, MPI_Aint count,
                      MPI_Datatype datatype, MPIR_Request * sreq)
{
    int mpi_errno = MPI_SUCCESS;
    MPIDI_BGL_send_t *s;
    MPIR_FUNC_ENTER;

    MPIR_ERR_CHKANDJUMP1(am_hdr_sz > MPIDI_BGL_MAX_AM_HDR, mpi_errno, MPI_ERR_OTHER, "**fail",
                         "**fail %s", "active-message header larger than bgl's 128 bytes");
    mpi_errno = MPIDI_BGL_send_take(MPIDI_BGL_AV(MPIDIU_comm_rank_to_av(comm, rank)).dest,
                                    handler_id, am_hdr, (size_t) am_hdr_sz, sreq, &s);
    MPIR_ERR_CHECK(mpi_errno);
    mpi_errno = MPIDI_BGL_send_data(s, data, count, datatype);
    if (mpi_errno != MPI_SUCCESS) {
        MPIDI_BGL_send_give_back(s);
        MPIR_ERR_CHECK(mpi_errno);
    }
    mpi_errno = MPIDI_BGL_send_post(s, NULL);

  fn_exit:
    MPIR_FUNC_EXIT;
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}
