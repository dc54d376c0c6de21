/*
 * The bgl netmod: MPI point-to-point, straight onto the message layer.
 *
 * A send is one message of the layer on the netmod's handler (BGL_HANDLER_DEVICE_SEND) under a
 * 12-byte header (MPIDI_BGL_pt2pt_hdr_t); the layer picks the protocol by size (one-packet,
 * eager, rendezvous; to the node's other task in virtual-node mode, its own protocol) and carries
 * contiguous data in place, a short iovec list or a packed copy otherwise (bgl_send.c). A send
 * that bgl_msg_post reports sent (a one-packet message that went out in the call, as after
 * fi_inject) is complete without a request of its own.
 *
 * Matching is here, in one place. Receives wait in the posted queue in the order they were
 * posted; messages that arrive before their receive wait in the unexpected queue in the order
 * they arrived, which per sender is the order it posted them (the layer hands first packets to
 * the netmod in order, whatever the protocol), so MPI's non-overtaking rule holds. An unexpected
 * message's data wait in the layer (its pool, or a rendezvous held back) under the layer's
 * handle: one queue of messages, one store of their data.
 *
 *  - A message whose receive is posted: the arrival callback answers with the receive buffer and
 *    the layer writes the payload there from the FIFO slot (one copy), or streams a rendezvous
 *    straight into it.
 *  - A receive that finds its message unexpected (MPI_Irecv, or MPI_Mrecv after MPI_Mprobe):
 *    bgl_msg_accept names the buffer; pooled data are copied once, a rendezvous goes on.
 *  - Non-contiguous receive buffers: an iovec list when short (BGL_NM_MAX_IOV), otherwise a
 *    contiguous bounce buffer unpacked at the end.
 *
 * A synchronous send carries its request in the header (MPIDI_BGL_sync_hdr_t); the receiver
 * acks it (BGL_HANDLER_DEVICE_SYNC_ACK) when the receive completes. Its request completes at the
 * second of two events: the data released and the ack received.
 */

#include "bgl_impl.h"

#define MPIDI_BGL_UNEXP_CHUNK 64

_Static_assert(offsetof(MPIR_Request, dev.ch4.netmod.bgl) + sizeof(MPIDI_BGL_request_t) <=
               offsetof(MPIR_Request, dev.ch4.am.req),
               "native requests must stay clear of dev.ch4.am.req (bgl_pre.h)");

/* --- the unexpected queue's entries ------------------------------------------------------- */

static MPIDI_BGL_unexp_t *unexp_take(void)
{
    MPIDI_BGL_global_t *g = &MPIDI_BGL_global;
    if (g->free_unexp == NULL) {
        MPIDI_BGL_unexp_t *chunk = MPIDI_BGL_chunks_new(&g->unexp_chunks,
                                                        MPIDI_BGL_UNEXP_CHUNK * sizeof(*chunk));
        MPIR_Assert(chunk);
        for (int i = 0; i < MPIDI_BGL_UNEXP_CHUNK; i++) {
            chunk[i].next = g->free_unexp;
            g->free_unexp = &chunk[i];
        }
    }
    MPIDI_BGL_unexp_t *u = g->free_unexp;
    g->free_unexp = u->next;
    u->next = NULL;
    return u;
}

static void unexp_give_back(MPIDI_BGL_unexp_t * u)
{
    u->next = MPIDI_BGL_global.free_unexp;
    MPIDI_BGL_global.free_unexp = u;
}

void MPIDI_BGL_pt2pt_free(void)
{
    MPIDI_BGL_global_t *g = &MPIDI_BGL_global;
    MPIDI_BGL_chunks_free(&g->unexp_chunks);
    g->free_unexp = NULL;
    g->unexp_head = g->unexp_tail = NULL;
    g->posted_head = g->posted_tail = NULL;
}

/* --- matching ----------------------------------------------------------------------------- */

/* A receive for (want_rank, want_tag) in context want_ctx takes a message (rank, tag, ctx). */
MPL_STATIC_INLINE_PREFIX int matches(int32_t want_rank, int32_t want_tag, uint32_t want_ctx,
                                     int32_t rank, int32_t tag, uint32_t ctx)
{
    return ctx == want_ctx && (want_rank == MPI_ANY_SOURCE || want_rank == rank) &&
        (want_tag == MPI_ANY_TAG ||
         MPIR_TAG_MASK_ERROR_BITS(want_tag) == MPIR_TAG_MASK_ERROR_BITS(tag));
}

/* Takes q, which follows prev (NULL: q is the head), out of the posted queue. */
static void posted_unlink(MPIR_Request * prev, MPIR_Request * q)
{
    MPIDI_BGL_global_t *g = &MPIDI_BGL_global;
    if (prev)
        MPIDI_BGL_REQ(prev).next = MPIDI_BGL_REQ(q).next;
    else
        g->posted_head = MPIDI_BGL_REQ(q).next;
    if (g->posted_tail == q)
        g->posted_tail = prev;
    MPIDI_BGL_REQ(q).next = NULL;
}

/* The first posted receive that takes the message, out of the queue; NULL if none. */
static MPIR_Request *posted_take(int32_t rank, int32_t tag, uint32_t ctx)
{
    MPIR_Request *prev = NULL;
    for (MPIR_Request * q = MPIDI_BGL_global.posted_head; q; prev = q, q = MPIDI_BGL_REQ(q).next) {
        MPIDI_BGL_request_t *r = &MPIDI_BGL_REQ(q);
        if (matches(r->rank, r->tag, r->context_id, rank, tag, ctx)) {
            posted_unlink(prev, q);
            return q;
        }
    }
    return NULL;
}

static void posted_append(MPIR_Request * rreq)
{
    MPIDI_BGL_global_t *g = &MPIDI_BGL_global;
    MPIDI_BGL_REQ(rreq).next = NULL;
    if (g->posted_tail)
        MPIDI_BGL_REQ(g->posted_tail).next = rreq;
    else
        g->posted_head = rreq;
    g->posted_tail = rreq;
}

/* The oldest unexpected message a receive for (rank, tag, ctx) takes; out of the queue when
 * `take`. NULL if none. */
static MPIDI_BGL_unexp_t *unexp_find(int32_t rank, int32_t tag, uint32_t ctx, int take)
{
    MPIDI_BGL_global_t *g = &MPIDI_BGL_global;
    MPIDI_BGL_unexp_t *prev = NULL;
    for (MPIDI_BGL_unexp_t * u = g->unexp_head; u; prev = u, u = u->next) {
        if (!matches(rank, tag, ctx, u->src_rank, u->tag, u->context_id))
            continue;
        if (take) {
            if (prev)
                prev->next = u->next;
            else
                g->unexp_head = u->next;
            if (g->unexp_tail == u)
                g->unexp_tail = prev;
            u->next = NULL;
        }
        return u;
    }
    return NULL;
}

static void unexp_append(MPIDI_BGL_unexp_t * u)
{
    MPIDI_BGL_global_t *g = &MPIDI_BGL_global;
    if (g->unexp_tail)
        g->unexp_tail->next = u;
    else
        g->unexp_head = u;
    g->unexp_tail = u;
}

/* --- completing a receive ----------------------------------------------------------------- */

static int send_sync_ack(uint32_t task, uint64_t sreq)
{
    MPIDI_BGL_send_t *s;
    /* The layer copies the header if the message has to wait. */
    int mpi_errno = MPIDI_BGL_send_take(task, BGL_HANDLER_DEVICE_SYNC_ACK, &sreq, sizeof(sreq),
                                        NULL, &s);
    if (mpi_errno == MPI_SUCCESS)
        mpi_errno = MPIDI_BGL_send_post(s, NULL);
    return mpi_errno;
}

/* The receive has its data (`delivered` bytes of the message's r->bytes): status, the sender's
 * ack, the request. */
static void recv_complete(MPIR_Request * rreq, uint64_t delivered)
{
    MPIDI_BGL_request_t *r = &MPIDI_BGL_REQ(rreq);

    if (r->unpack_buf) {
        if (!r->unpack_is_iov && delivered > 0) {
            MPI_Aint actual;
            int rc = MPIR_Typerep_unpack(r->unpack_buf, (MPI_Aint) delivered, r->buf, r->count,
                                         r->datatype, 0, &actual);
            MPIR_Assert(rc == MPI_SUCCESS);
        }
        MPL_free(r->unpack_buf);
        r->unpack_buf = NULL;
    }

    rreq->status.MPI_SOURCE = r->rank;
    rreq->status.MPI_TAG = r->tag;
    rreq->status.MPI_ERROR = r->error_bits;
    MPIR_STATUS_SET_COUNT(rreq->status, (MPI_Aint) delivered);
    if (delivered < r->bytes)
        rreq->status.MPI_ERROR = MPIR_Err_create_code(rreq->status.MPI_ERROR,
                                                      MPIR_ERR_RECOVERABLE, __func__, __LINE__,
                                                      MPI_ERR_TRUNCATE, "**truncate",
                                                      "**truncate %d %d %d %d", r->rank, r->tag,
                                                      (int) delivered, (int) r->bytes);
    if (r->sync) {
        int mpi_errno = send_sync_ack(r->sync_task, r->sync);
        MPIR_Assert(mpi_errno == MPI_SUCCESS);
    }
    MPIR_Datatype_release_if_not_builtin(r->datatype);
    MPID_Request_complete(rreq);
}

static void recv_done(void *context, uint32_t handle, size_t delivered)
{
    recv_complete((MPIR_Request *) context, delivered);
}

/* Where the data of a matched message go: the receive buffer itself when contiguous, its
 * pieces when few, else a bounce buffer (recv_complete unpacks it). */
static bgl_msg_recv_target_t recv_target(MPIR_Request * rreq)
{
    MPIDI_BGL_request_t *r = &MPIDI_BGL_REQ(rreq);
    bgl_msg_recv_target_t t;
    int dt_contig;
    MPI_Aint data_sz, dt_true_lb;
    MPIR_Datatype *dt_ptr;

    memset(&t, 0, sizeof(t));
    t.kind = BGL_MSG_TARGET_BUFFER;
    t.done = recv_done;
    t.context = rreq;
    MPIDI_Datatype_get_info(r->count, r->datatype, dt_contig, data_sz, dt_ptr, dt_true_lb);
    (void) dt_ptr;
    if (dt_contig) {
        t.buffer = data_sz > 0 ? MPIR_get_contig_ptr(r->buf, dt_true_lb) : NULL;
        t.bytes = (size_t) data_sz;
        return t;
    }

    MPI_Aint want = (MPI_Aint) MPL_MIN((uint64_t) data_sz, r->bytes);
    MPI_Aint num_iov = 0;
    if (want == 0)
        return t;
    MPIR_Typerep_iov_len(r->count, r->datatype, want, &num_iov);
    if (num_iov > 0 && num_iov <= MPIDI_BGL_global.max_iov) {
        struct iovec *iov = MPL_malloc(num_iov * sizeof(*iov), MPL_MEM_BUFFER);
        MPI_Aint len, got;
        MPIR_Assert(iov);
        int rc = MPIR_Typerep_to_iov(r->buf, r->count, r->datatype, 0, iov, num_iov, want, &len,
                                     &got);
        MPIR_Assert(rc == MPI_SUCCESS && got == want);
        r->unpack_buf = iov;
        r->unpack_is_iov = 1;
        t.kind = BGL_MSG_TARGET_IOV;
        t.iov = iov;
        t.iov_count = (size_t) len;
    } else {
        void *bounce = MPL_malloc(want, MPL_MEM_BUFFER);
        MPIR_Assert(bounce);
        r->unpack_buf = bounce;
        r->unpack_is_iov = 0;
        t.buffer = bounce;
        t.bytes = (size_t) want;
    }
    return t;
}

/* A receive matched an unexpected message (its fields in the request): the data go to the
 * receive buffer now, or as they arrive. */
static int recv_unexpected(MPIR_Request * rreq)
{
    int mpi_errno = MPI_SUCCESS;
    MPIDI_BGL_request_t *r = &MPIDI_BGL_REQ(rreq);

    if (!r->has_data) {
        recv_complete(rreq, 0);
        return MPI_SUCCESS;
    }
    /* Never inside the layer's advance(): MPI calls are not made from its callbacks. */
    MPIR_Assert(!MPIDI_BGL_global.in_advance);
    bgl_msg_recv_target_t t = recv_target(rreq);
    bgl_msg_recv_handle_t handle = { r->handle };
    /* May complete the request before it returns (data already in the layer's pool). */
    if (bgl_msg_accept(MPIDI_BGL_global.session, handle, &t) != 0)
        MPIR_ERR_SETANDJUMP1(mpi_errno, MPI_ERR_OTHER, "**fail", "**fail %s",
                             bgl_msg_last_error());
  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

static void take_unexpected(MPIDI_BGL_request_t * r, const MPIDI_BGL_unexp_t * u)
{
    r->rank = u->src_rank;
    r->tag = u->tag;
    r->bytes = u->bytes;
    r->handle = u->handle;
    r->has_data = u->has_data;
    r->sync = u->sync;
    r->sync_task = u->src_task;
    r->error_bits = u->error_bits;
}

/* --- the layer's callbacks ---------------------------------------------------------------- */

static void bad_header(const bgl_msg_arrival_t * a, const char *what)
{
    fprintf(stderr, "bgl netmod: rank %d dropped a %s from task %u with a %zu-byte header\n",
            MPIR_Process.rank, what, a->source, a->header_bytes);
}

static bgl_msg_recv_target_t arrival(void *context, const bgl_msg_arrival_t * a)
{
    MPIDI_BGL_global_t *g = &MPIDI_BGL_global;
    bgl_msg_recv_target_t t;
    MPIDI_BGL_sync_hdr_t hdr;

    memset(&t, 0, sizeof(t));
    t.kind = BGL_MSG_TARGET_BUFFER;     /* no buffer: data, if any, are dropped */
    if (a->header_bytes != sizeof(hdr.h) && a->header_bytes != sizeof(hdr)) {
        bad_header(a, "point-to-point message");
        return t;
    }
    if (unlikely(g->virtual_time))
        bgl_msg_vt_charge(g->session, BGL_MSG_VT_MPI_RECV);
    memcpy(&hdr, a->header, a->header_bytes);
    uint64_t sync = a->header_bytes == sizeof(hdr) ? hdr.sreq : 0;

    MPIR_Request *rreq = posted_take(hdr.h.src_rank, hdr.h.tag, hdr.h.context_id);
    if (rreq) {
        MPIDI_BGL_request_t *r = &MPIDI_BGL_REQ(rreq);
        r->rank = hdr.h.src_rank;
        r->tag = hdr.h.tag;
        r->bytes = a->bytes;
        r->sync = sync;
        r->sync_task = a->source;
        r->error_bits = hdr.h.error_bits;
        if (a->bytes == 0) {
            recv_complete(rreq, 0);
            return t;
        }
        return recv_target(rreq);
    }

    MPIDI_BGL_unexp_t *u = unexp_take();
    u->src_rank = hdr.h.src_rank;
    u->tag = hdr.h.tag;
    u->context_id = hdr.h.context_id;
    u->bytes = a->bytes;
    u->sync = sync;
    u->src_task = a->source;
    u->error_bits = hdr.h.error_bits;
    u->has_data = a->bytes > 0;
    u->handle = a->handle.id;
    unexp_append(u);
    if (u->has_data)
        t.kind = BGL_MSG_TARGET_LATER;
    return t;
}

static bgl_msg_recv_target_t sync_ack_arrival(void *context, const bgl_msg_arrival_t * a)
{
    bgl_msg_recv_target_t t;
    uint64_t sreq;

    memset(&t, 0, sizeof(t));
    t.kind = BGL_MSG_TARGET_BUFFER;
    if (a->header_bytes != sizeof(sreq) || a->bytes != 0) {
        bad_header(a, "synchronous-send ack");
        return t;
    }
    memcpy(&sreq, a->header, sizeof(sreq));
    MPID_Request_complete((MPIR_Request *) (uintptr_t) sreq);
    return t;
}

int MPIDI_BGL_pt2pt_register(void)
{
    int mpi_errno = MPI_SUCCESS;
    bgl_msg_session_t *session = MPIDI_BGL_global.session;
    if (bgl_msg_register(session, BGL_HANDLER_DEVICE_SEND, arrival, NULL) != 0 ||
        bgl_msg_register(session, BGL_HANDLER_DEVICE_SYNC_ACK, sync_ack_arrival, NULL) != 0)
        MPIR_ERR_SETANDJUMP1(mpi_errno, MPI_ERR_OTHER, "**fail", "**fail %s",
                             bgl_msg_last_error());
  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* --- MPI's calls -------------------------------------------------------------------------- */

int MPIDI_BGL_isend(const void *buf, MPI_Aint count, MPI_Datatype datatype, int rank, int tag,
                    MPIR_Comm * comm, int context_offset, MPIDI_av_entry_t * addr,
                    MPIR_Errflag_t errflag, int sync, MPIR_Request ** request)
{
    int mpi_errno = MPI_SUCCESS;
    MPIDI_BGL_global_t *g = &MPIDI_BGL_global;
    MPIDI_BGL_sync_hdr_t hdr;   /* the layer copies it if the message has to wait */
    MPIR_Request *sreq = NULL;
    MPIDI_BGL_send_t *s;
    MPIR_FUNC_ENTER;
    MPID_THREAD_CS_ENTER(VCI, MPIDI_VCI(0).lock);

    hdr.h.src_rank = comm->rank;
    hdr.h.tag = tag;
    hdr.h.context_id = comm->context_id + context_offset;
    hdr.h.error_bits = (uint8_t) errflag;
    hdr.h.reserved = 0;
    if (sync) {
        /* One reference for the user, one dropped at completion: the data released and the
         * receiver's ack, whichever comes second. */
        MPIDI_CH4_REQUEST_CREATE(sreq, MPIR_REQUEST_KIND__SEND, 0, 2);
        MPIR_ERR_CHKANDJUMP(sreq == NULL, mpi_errno, MPIX_ERR_NOREQ, "**nomemreq");
        MPIR_cc_set(&sreq->cc, 2);
        hdr.sreq = (uint64_t) (uintptr_t) sreq;
    }
    mpi_errno = MPIDI_BGL_send_take(MPIDI_BGL_AV(addr).dest, BGL_HANDLER_DEVICE_SEND, &hdr,
                                    sync ? sizeof(hdr) : sizeof(hdr.h), sreq, &s);
    MPIR_ERR_CHECK(mpi_errno);
    mpi_errno = MPIDI_BGL_send_data(s, buf, count, datatype);
    if (mpi_errno != MPI_SUCCESS) {
        MPIDI_BGL_send_give_back(s);
        MPIR_ERR_CHECK(mpi_errno);
    }
    int sent;
    mpi_errno = MPIDI_BGL_send_post(s, &sent);
    MPIR_ERR_CHECK(mpi_errno);

    if (sync) {
        *request = sreq;
    } else if (sent && g->inject) {
        /* The buffer is free already; the layer's done() only returns the descriptor. */
        g->n_injected++;
        *request = MPIR_Request_create_complete(MPIR_REQUEST_KIND__SEND);
    } else {
        /* One reference for the user, one that done() drops when it completes the request. */
        MPIDI_CH4_REQUEST_CREATE(sreq, MPIR_REQUEST_KIND__SEND, 0, 2);
        MPIR_ERR_CHKANDJUMP(sreq == NULL, mpi_errno, MPIX_ERR_NOREQ, "**nomemreq");
        s->sreq = sreq;
        *request = sreq;
    }

  fn_exit:
    MPID_THREAD_CS_EXIT(VCI, MPIDI_VCI(0).lock);
    MPIR_FUNC_EXIT;
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

int MPIDI_BGL_isend_traced(const void *buf, MPI_Aint count, MPI_Datatype datatype, int rank,
                           int tag, MPIR_Comm * comm, int context_offset, MPIDI_av_entry_t * addr,
                           int sync, MPIR_Request ** request)
{
    MPIDI_BGL_trace_note(BGL_NM_TRACE_SEND, rank, count, datatype, comm);
    return MPIDI_BGL_isend(buf, count, datatype, rank, tag, comm, context_offset, addr,
                           MPIR_ERR_NONE, sync, request);
}

static void recv_init(MPIR_Request * rreq, void *buf, MPI_Aint count, MPI_Datatype datatype)
{
    MPIDI_BGL_request_t *r = &MPIDI_BGL_REQ(rreq);
    r->next = NULL;
    r->buf = buf;
    r->count = count;
    r->datatype = datatype;
    r->unpack_buf = NULL;
    r->unpack_is_iov = 0;
    MPIR_Datatype_add_ref_if_not_builtin(datatype);
    rreq->status.MPI_ERROR = MPI_SUCCESS;
}

int MPIDI_BGL_irecv(void *buf, MPI_Aint count, MPI_Datatype datatype, int rank, int tag,
                    MPIR_Comm * comm, int context_offset, MPIR_Request ** request)
{
    int mpi_errno = MPI_SUCCESS;
    MPIR_Request *rreq;
    MPIR_FUNC_ENTER;
    MPID_THREAD_CS_ENTER(VCI, MPIDI_VCI(0).lock);

    MPIDI_CH4_REQUEST_CREATE(rreq, MPIR_REQUEST_KIND__RECV, 0, 2);
    MPIR_ERR_CHKANDJUMP(rreq == NULL, mpi_errno, MPIX_ERR_NOREQ, "**nomemreq");
    rreq->comm = comm;
    MPIR_Comm_add_ref(comm);
    recv_init(rreq, buf, count, datatype);
    *request = rreq;

    MPIDI_BGL_request_t *r = &MPIDI_BGL_REQ(rreq);
    uint32_t ctx = comm->recvcontext_id + context_offset;
    MPIDI_BGL_unexp_t *u = unexp_find(rank, tag, ctx, 1);
    if (u == NULL) {
        r->rank = rank;
        r->tag = tag;
        r->context_id = ctx;
        posted_append(rreq);
        goto fn_exit;
    }
    r->context_id = ctx;
    take_unexpected(r, u);
    unexp_give_back(u);
    mpi_errno = recv_unexpected(rreq);

  fn_exit:
    MPID_THREAD_CS_EXIT(VCI, MPIDI_VCI(0).lock);
    MPIR_FUNC_EXIT;
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

int MPIDI_BGL_imrecv(void *buf, MPI_Aint count, MPI_Datatype datatype, MPIR_Request * message)
{
    int mpi_errno;
    MPID_THREAD_CS_ENTER(VCI, MPIDI_VCI(0).lock);
    recv_init(message, buf, count, datatype);
    mpi_errno = recv_unexpected(message);
    MPID_THREAD_CS_EXIT(VCI, MPIDI_VCI(0).lock);
    return mpi_errno;
}

/* MPI_Iprobe (message == NULL) and MPI_Improbe, which takes the message out of the queue into a
 * request that MPI_Mrecv receives it with. */
int MPIDI_BGL_probe(int source, int tag, MPIR_Comm * comm, int context_offset, int *flag,
                    MPIR_Request ** message, MPI_Status * status)
{
    int mpi_errno = MPI_SUCCESS;
    MPID_THREAD_CS_ENTER(VCI, MPIDI_VCI(0).lock);

    uint32_t ctx = comm->recvcontext_id + context_offset;
    MPIDI_BGL_unexp_t *u = unexp_find(source, tag, ctx, message != NULL);
    *flag = u != NULL;
    if (u == NULL)
        goto fn_exit;
    if (status != MPI_STATUS_IGNORE) {
        status->MPI_SOURCE = u->src_rank;
        status->MPI_TAG = u->tag;
        MPIR_STATUS_SET_COUNT(*status, (MPI_Aint) u->bytes);
        MPIR_STATUS_SET_CANCEL_BIT(*status, FALSE);
    }
    if (message) {
        MPIR_Request *mreq;
        MPIDI_CH4_REQUEST_CREATE(mreq, MPIR_REQUEST_KIND__MPROBE, 0, 2);
        MPIR_ERR_CHKANDJUMP(mreq == NULL, mpi_errno, MPIX_ERR_NOREQ, "**nomemreq");
        mreq->comm = comm;
        MPIR_Comm_add_ref(comm);
        MPIDI_BGL_REQ(mreq).context_id = ctx;
        take_unexpected(&MPIDI_BGL_REQ(mreq), u);
        unexp_give_back(u);
        *message = mreq;
    }

  fn_exit:
    MPID_THREAD_CS_EXIT(VCI, MPIDI_VCI(0).lock);
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* A receive still in the posted queue is cancelled; a matched one completes normally. */
int MPIDI_BGL_cancel_recv(MPIR_Request * rreq)
{
    MPID_THREAD_CS_ENTER(VCI, MPIDI_VCI(0).lock);
    MPIR_Request *prev = NULL;
    for (MPIR_Request * q = MPIDI_BGL_global.posted_head; q; prev = q, q = MPIDI_BGL_REQ(q).next) {
        if (q != rreq)
            continue;
        posted_unlink(prev, q);
        MPIR_STATUS_SET_CANCEL_BIT(rreq->status, TRUE);
        MPIR_STATUS_SET_COUNT(rreq->status, 0);
        MPIR_Datatype_release_if_not_builtin(MPIDI_BGL_REQ(rreq).datatype);
        MPID_Request_complete(rreq);
        break;
    }
    MPID_THREAD_CS_EXIT(VCI, MPIDI_VCI(0).lock);
    return MPI_SUCCESS;
}
