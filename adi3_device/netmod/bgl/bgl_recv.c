/*
 * The bgl netmod: receiving MPIDIG's active messages (RMA, partitioned communication, MPICH's
 * internal messages; MPI's point-to-point messages are the netmod's own, bgl_pt2pt.c).
 *
 * The message layer calls arrival() when the first packet of a message arrives, in the order the
 * sender posted its messages (MPI's non-overtaking rule holds), and arrival() answers where the
 * data go. Three cases:
 *
 *  - no data: MPIDIG's handler runs at once with the header.
 *  - one-packet messages: the data land in a scratch buffer and MPIDIG's handler gets header and
 *    data together when the packet has been unloaded (MPIDIG copies or unpacks them; MPIDIG keeps
 *    unexpected ones in its own pack buffers).
 *  - larger messages (eager, adaptive eager, rendezvous): MPIDIG's handler runs with
 *    MPIDIG_AM_ATTR__IS_ASYNC and gives the request; for MPIDIG_SEND also MPIDIG_AM_ATTR__IS_RNDV,
 *    the transport rendezvous. If the receive is posted, the layer writes the packets straight into
 *    the user's buffer (or its iovec list, or a bounce buffer for datatypes with many pieces) at
 *    their offsets. If not, the message is unexpected: the layer keeps eager data in its pool
 *    and holds a rendezvous back; when MPI matches it, MPIDIG calls MPIDI_BGL_data_copy_cb(), which
 *    hands the destination to the layer (bgl_msg_accept): pooled data are copied once, rendezvous
 *    data then stream into the user's buffer. recv_done() completes the request.
 */

#include "bgl_impl.h"

static void one_packet_done(void *context, uint32_t handle, size_t bytes)
{
    MPIDI_BGL_one_packet_t *op = (MPIDI_BGL_one_packet_t *) context;
    int handler_id = op->handler_id;

    int mpi_errno = MPIDIG_global.target_msg_cbs[handler_id] (op->hdr, op->data, (MPI_Aint) bytes,
                                                              0, NULL);
    MPIR_Assert(mpi_errno == MPI_SUCCESS);
    if (op->is_static)
        MPIDI_BGL_global.one_packet_busy = 0;
    else
        MPL_free(op);
}

static void recv_done(void *context, uint32_t handle, size_t bytes)
{
    MPIR_Request *rreq = (MPIR_Request *) context;
    void *bounce = MPIDI_BGL_AMREQ(rreq).unpack_buf;

    if (bounce) {
        MPIDIG_recv_copy(bounce, rreq);
        MPL_free(bounce);
        MPIDI_BGL_AMREQ(rreq).unpack_buf = NULL;
    }
    int mpi_errno = MPIDIG_REQUEST(rreq, req->target_cmpl_cb) (rreq);
    MPIR_Assert(mpi_errno == MPI_SUCCESS);
}

/* Where the data of a request whose receive buffer is known go. */
static bgl_msg_recv_target_t recv_target(MPIR_Request * rreq)
{
    bgl_msg_recv_target_t t;
    MPIDIG_rreq_async_t *p = &(MPIDIG_REQUEST(rreq, req->recv_async));

    memset(&t, 0, sizeof(t));
    t.kind = BGL_MSG_TARGET_BUFFER;
    t.done = recv_done;
    t.context = rreq;
    MPIDI_BGL_AMREQ(rreq).unpack_buf = NULL;

    if (p->recv_type == MPIDIG_RECV_DATATYPE) {
        int dt_contig;
        MPI_Aint data_sz, dt_true_lb;
        MPIR_Datatype *dt_ptr;
        MPIDI_Datatype_get_info(MPIDIG_REQUEST(rreq, count), MPIDIG_REQUEST(rreq, datatype),
                                dt_contig, data_sz, dt_ptr, dt_true_lb);
        (void) dt_ptr;
        (void) dt_true_lb;
        (void) data_sz;
        if (!dt_contig && MPIDIG_get_recv_iov_count(rreq) > MPIDI_BGL_global.max_iov) {
            /* Many small pieces: receive contiguously, unpack once at the end. */
            void *bounce = MPL_malloc(p->in_data_sz, MPL_MEM_BUFFER);
            MPIR_Assert(bounce);
            MPIDI_BGL_AMREQ(rreq).unpack_buf = bounce;
            t.buffer = bounce;
            t.bytes = (size_t) p->in_data_sz;
            return t;
        }
    }

    int is_contig, is_gpu;
    void *data;
    MPI_Aint data_sz;
    MPIDIG_get_recv_data(&is_contig, &is_gpu, &data, &data_sz, rreq);
    MPIDIG_recv_setup(rreq);    /* status count and truncation */
    if (is_contig) {
        t.buffer = data;
        t.bytes = (size_t) data_sz;
    } else {
        t.kind = BGL_MSG_TARGET_IOV;
        t.iov = (const struct iovec *) data;
        t.iov_count = (size_t) data_sz;
    }
    return t;
}

static bgl_msg_recv_target_t arrival(void *context, const bgl_msg_arrival_t * a)
{
    int handler_id = (int) (intptr_t) context;
    MPIDI_BGL_global_t *g = &MPIDI_BGL_global;
    bgl_msg_recv_target_t t;
    uint64_t hdr[MPIDI_BGL_MAX_AM_HDR / sizeof(uint64_t)];
    int mpi_errno;

    size_t hdr_bytes = a->header_bytes;

    if (unlikely(g->virtual_time))
        bgl_msg_vt_charge(g->session, BGL_MSG_VT_MPI_RECV);

    memset(&t, 0, sizeof(t));
    t.kind = BGL_MSG_TARGET_BUFFER;     /* no buffer: data, if any, are dropped */
    MPIDIG_am_target_msg_cb cb = MPIDIG_global.target_msg_cbs[handler_id];
    if (cb == NULL || hdr_bytes > sizeof(hdr)) {
        fprintf(stderr, "bgl netmod: rank %d dropped a message from rank %u for handler %d "
                "(%zu header bytes)\n", MPIR_Process.rank, a->source, (int) (intptr_t) context,
                hdr_bytes);
        return t;
    }
    memcpy(hdr, a->header, hdr_bytes);  /* aligned for MPIDIG's structures */

    if (a->bytes == 0) {
        mpi_errno = cb(hdr, NULL, 0, 0, NULL);
        MPIR_Assert(mpi_errno == MPI_SUCCESS);
        return t;
    }

    if (a->protocol == BGL_MSG_ONE_PACKET && a->bytes <= MPIDI_BGL_ONE_PACKET) {
        MPIDI_BGL_one_packet_t *op;
        if (!g->one_packet_busy) {
            op = &g->one_packet;
            op->is_static = 1;
            g->one_packet_busy = 1;
        } else {
            op = MPL_malloc(sizeof(*op), MPL_MEM_BUFFER);
            MPIR_Assert(op);
            op->is_static = 0;
        }
        op->handler_id = handler_id;
        memcpy(op->hdr, hdr, hdr_bytes);
        t.buffer = op->data;
        t.bytes = (size_t) a->bytes;
        t.done = one_packet_done;
        t.context = op;
        return t;
    }

    MPIR_Request *rreq = NULL;
    uint32_t attr = MPIDIG_AM_ATTR__IS_ASYNC;
    if (handler_id == MPIDIG_SEND)
        attr |= MPIDIG_AM_ATTR__IS_RNDV;
    mpi_errno = cb(hdr, NULL, (MPI_Aint) a->bytes, attr, &rreq);
    MPIR_Assert(mpi_errno == MPI_SUCCESS);
    if (rreq == NULL)
        return t;
    if (!MPIDIG_recv_initialized(rreq)) {
        /* Unexpected: MPIDIG calls MPIDI_BGL_data_copy_cb() when a receive matches it. */
        MPIDI_BGL_AMREQ(rreq).handle = a->handle.id;
        t.kind = BGL_MSG_TARGET_LATER;
        return t;
    }
    return recv_target(rreq);
}

static int accept_now(MPIR_Request * rreq)
{
    int mpi_errno = MPI_SUCCESS;
    bgl_msg_recv_target_t t = recv_target(rreq);
    bgl_msg_recv_handle_t handle = { MPIDI_BGL_AMREQ(rreq).handle };

    /* May complete the request before it returns (data already in the layer's pool). */
    if (bgl_msg_accept(MPIDI_BGL_global.session, handle, &t) != 0) {
        MPIR_ERR_SETANDJUMP1(mpi_errno, MPI_ERR_OTHER, "**fail", "**fail %s",
                             bgl_msg_last_error());
    }
  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

int MPIDI_BGL_data_copy_cb(MPIR_Request * rreq)
{
    int mpi_errno = MPI_SUCCESS;
    MPIDI_BGL_global_t *g = &MPIDI_BGL_global;

    if (!g->in_advance)
        return accept_now(rreq);

    /* Matched from inside the layer's advance(), which is not re-entrant: right after it. */
    if (g->n_deferred == g->max_deferred) {
        int n = g->max_deferred ? 2 * g->max_deferred : 16;
        MPIR_Request **d = MPL_realloc(g->deferred, n * sizeof(*d), MPL_MEM_BUFFER);
        MPIR_ERR_CHKANDJUMP(d == NULL, mpi_errno, MPI_ERR_OTHER, "**nomem");
        g->deferred = d;
        g->max_deferred = n;
    }
    g->deferred[g->n_deferred++] = rreq;
  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

int MPIDI_BGL_accept_deferred(void)
{
    int mpi_errno = MPI_SUCCESS;
    MPIDI_BGL_global_t *g = &MPIDI_BGL_global;
    for (int i = 0; i < g->n_deferred; i++) {
        mpi_errno = accept_now(g->deferred[i]);
        MPIR_ERR_CHECK(mpi_errno);
    }
  fn_exit:
    g->n_deferred = 0;
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* MPIDIG's static handlers must all be below the netmod's and the collectives library's. */
_Static_assert((int) MPIDIG_HANDLER_STATIC_MAX <= (int) BGL_HANDLER_DEVICE_FIRST,
               "MPIDIG handler ids collide with the netmod's or the collectives library's");

int MPIDI_BGL_register_handlers(void)
{
    int mpi_errno = MPI_SUCCESS;
    /* All of MPIDIG's slots below the netmod's own (static and dynamic ones; the handler looks the
     * callback up when a message arrives). */
    for (int id = 0; id < BGL_HANDLER_DEVICE_FIRST; id++) {
        if (bgl_msg_register(MPIDI_BGL_global.session, (uint8_t) id, arrival,
                             (void *) (intptr_t) id) != 0) {
            MPIR_ERR_SETANDJUMP1(mpi_errno, MPI_ERR_OTHER, "**fail", "**fail %s",
                                 bgl_msg_last_error());
        }
    }
  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}
