/*
 * The bgl netmod (bglemu): internal state and functions.
 *
 * Every MPIDIG active message is one message of the bglemu message layer, with MPIDIG's handler
 * id as the layer's handler id and MPIDIG's header as the layer's user header (copied at post).
 * The layer picks the protocol by size: one-packet, eager (or adaptive eager), rendezvous.
 * MPI's point-to-point calls bypass MPIDIG: they are messages of the netmod's own, matched here
 * (bgl_pt2pt.c).
 */

#ifndef BGL_IMPL_H_INCLUDED
#define BGL_IMPL_H_INCLUDED

#include <mpidimpl.h>
#include "mpidch4r.h"
#include "ch4_impl.h"

#include <bgl/message_layer/bgl_msg.h>
#include <bgl_coll_hooks.h>
#include <bgl_nm_trace.h>

#define MPIDI_BGL_MAX_AM_HDR   BGL_MSG_MAX_USER_HEADER
#define MPIDI_BGL_ONE_PACKET   256      /* more than the largest one-packet payload */
#define MPIDI_BGL_AMREQ(req)   ((req)->dev.ch4.am.netmod_am.bgl)
#define MPIDI_BGL_AV(av)       ((av)->netmod.bgl)

/* The header of a point-to-point message (bgl_pt2pt.c), what MPI matching needs and no more:
 * with 12 bytes, an 8-byte MPI message is a 48-byte packet, which arrives in the reception FIFO
 * slot's first cache line (reception_fifo.hpp). A synchronous send adds its request, which the
 * receiver names in its ack (BGL_HANDLER_DEVICE_SYNC_ACK) when a receive matches. */
typedef struct {
    int32_t src_rank;
    int32_t tag;
    MPIR_Context_id_t context_id;
    uint8_t error_bits;
    uint8_t reserved;
} MPIDI_BGL_pt2pt_hdr_t;

typedef struct {
    MPIDI_BGL_pt2pt_hdr_t h;
    uint64_t sreq;
} MPIDI_BGL_sync_hdr_t;

/* A message that arrived before its receive was posted: what matching and MPI_Status need. Its
 * data (or rendezvous) wait in the message layer under `handle`. */
typedef struct MPIDI_BGL_unexp {
    struct MPIDI_BGL_unexp *next;
    int32_t src_rank;
    int32_t tag;
    uint32_t context_id;
    uint32_t handle;
    uint64_t bytes;
    uint64_t sync;
    uint32_t src_task;
    uint8_t has_data;
    uint8_t error_bits;
} MPIDI_BGL_unexp_t;

#define MPIDI_BGL_REQ(req)     ((req)->dev.ch4.netmod.bgl)

/* The blocks behind a free list of fixed-size objects (send descriptors, unexpected entries):
 * allocated as the list runs dry, freed together at finalize. */
typedef struct {
    void **blocks;
    int n, max;
} MPIDI_BGL_chunks_t;

/* A new block of `bytes` bytes, recorded for MPIDI_BGL_chunks_free; NULL without memory. */
void *MPIDI_BGL_chunks_new(MPIDI_BGL_chunks_t * c, size_t bytes);
void MPIDI_BGL_chunks_free(MPIDI_BGL_chunks_t * c);

/* A message being sent: the layer's descriptor plus what completion needs. */
typedef struct MPIDI_BGL_send {
    bgl_msg_send_t msg;
    MPIR_Request *sreq;         /* NULL for header-only messages and point-to-point sends that
                                 * went out at once; a plain request (not MPIDIG's) for the
                                 * other point-to-point sends (handler BGL_HANDLER_DEVICE_SEND) */
    int handler_id;
    void *buf;                  /* pack buffer or iovec array, freed when sent */
    struct MPIDI_BGL_send *next;        /* free list */
} MPIDI_BGL_send_t;

/* A one-packet message between its arrival and its data (delivered to MPIDIG as a whole). */
typedef struct MPIDI_BGL_one_packet {
    uint64_t hdr[MPIDI_BGL_MAX_AM_HDR / sizeof(uint64_t)];
    int handler_id;
    int is_static;
    unsigned char data[MPIDI_BGL_ONE_PACKET];
} MPIDI_BGL_one_packet_t;

typedef struct {
    bgl_msg_session_t *session;
    int virtual_time;           /* bglrun --virtual-time: MPI_Wtime reads the task's BG/L clock */
    int tracing;                /* bglrun --trace: MPI calls are on the task's timeline */
    int in_advance;             /* the layer's advance() is not re-entrant */
    int completions_seen;       /* MPICH's count of freed requests when the last round ended */

    /* data layout choices */
    MPI_Aint max_iov;           /* more iovec entries than this: pack / unpack instead */
    int inject;                 /* a send whose packet left at once completes without a request */
    uint64_t n_injected;        /* sends completed at once */

    /* point-to-point matching (bgl_pt2pt.c): receives in the order posted, messages in the
     * order they arrived */
    MPIR_Request *posted_head, *posted_tail;
    MPIDI_BGL_unexp_t *unexp_head, *unexp_tail;
    MPIDI_BGL_unexp_t *free_unexp;
    MPIDI_BGL_chunks_t unexp_chunks;

    /* send descriptors */
    MPIDI_BGL_send_t *free_sends;
    MPIDI_BGL_chunks_t send_chunks;

    /* MPIDIG's unexpected messages matched during advance(): accepted right after it */
    MPIR_Request **deferred;
    int n_deferred, max_deferred;

    MPIDI_BGL_one_packet_t one_packet;
    int one_packet_busy;
} MPIDI_BGL_global_t;

extern MPIDI_BGL_global_t MPIDI_BGL_global;

/* Virtual time: MPI_Wtime and MPI_Wtick (through adi3_device/mpich_patches) ask these first; they
 * return 1 and set *seconds when the job runs with virtual time, 0 otherwise. */
int MPIDI_BGL_wtime(double *seconds);
int MPIDI_BGL_wtick(double *seconds);

int MPIDI_BGL_am_post(int rank, MPIR_Comm * comm, int handler_id, const void *am_hdr,
                      MPI_Aint am_hdr_sz, const void *data, MPI_Aint count,
                      MPI_Datatype datatype, MPIR_Request * sreq);

/* The send descriptors (bgl_send.c), shared by active messages and point-to-point sends. */
int MPIDI_BGL_send_take(uint32_t dest, int handler_id, const void *hdr, size_t hdr_bytes,
                        MPIR_Request * sreq, MPIDI_BGL_send_t ** out);
int MPIDI_BGL_send_data(MPIDI_BGL_send_t * s, const void *buf, MPI_Aint count,
                        MPI_Datatype datatype);
int MPIDI_BGL_send_post(MPIDI_BGL_send_t * s, int *sent);
void MPIDI_BGL_send_give_back(MPIDI_BGL_send_t * s);

/* Point-to-point (bgl_pt2pt.c): MPI's sends, receives and probes straight onto the layer. */
int MPIDI_BGL_isend(const void *buf, MPI_Aint count, MPI_Datatype datatype, int rank, int tag,
                    MPIR_Comm * comm, int context_offset, MPIDI_av_entry_t * addr,
                    MPIR_Errflag_t errflag, int sync, MPIR_Request ** request);
/* bglrun --trace: the user's point-to-point sends, their arguments noted first; out of line, so
 * that the untraced path of MPIDI_NM_mpi_isend stays a test and a call. */
int MPIDI_BGL_isend_traced(const void *buf, MPI_Aint count, MPI_Datatype datatype, int rank,
                           int tag, MPIR_Comm * comm, int context_offset, MPIDI_av_entry_t * addr,
                           int sync, MPIR_Request ** request);
int MPIDI_BGL_irecv(void *buf, MPI_Aint count, MPI_Datatype datatype, int rank, int tag,
                    MPIR_Comm * comm, int context_offset, MPIR_Request ** request);
int MPIDI_BGL_imrecv(void *buf, MPI_Aint count, MPI_Datatype datatype, MPIR_Request * message);
int MPIDI_BGL_probe(int source, int tag, MPIR_Comm * comm, int context_offset, int *flag,
                    MPIR_Request ** message, MPI_Status * status);
int MPIDI_BGL_cancel_recv(MPIR_Request * rreq);
int MPIDI_BGL_pt2pt_register(void);
void MPIDI_BGL_pt2pt_free(void);

int MPIDI_BGL_register_handlers(void);
int MPIDI_BGL_data_copy_cb(MPIR_Request * rreq);
int MPIDI_BGL_accept_deferred(void);
int MPIDI_BGL_progress_impl(int vci, int blocking);
/* One progress round (bgl_progress.c); `idle` says what it does when it finds nothing. */
typedef enum {
    MPIDI_BGL_IDLE_NONE,        /* return: the caller waits itself */
    MPIDI_BGL_IDLE_POLL,        /* a non-blocking call: the layer's poll_yield */
    MPIDI_BGL_IDLE_WAIT         /* a blocking call: the layer's wait */
} MPIDI_BGL_idle_t;
int MPIDI_BGL_progress_round(MPIDI_BGL_idle_t idle, int *made);
void MPIDI_BGL_progress_config(void);
void MPIDI_BGL_send_pool_free(void);

/* bglrun --trace: the arguments of the MPI call being made (bgl_nm_trace.h); `count` elements of
 * `datatype`, or no bytes when datatype is MPI_DATATYPE_NULL. CH4's node-aware compositions hand
 * the netmod a collective's steps on the node's communicator (on one host: the same tasks as the
 * user's, but the root moved to the node's first task) and on the node roots' (one task): the
 * former gives the size and bytes, not the root; the latter nothing. */
MPL_STATIC_INLINE_PREFIX void MPIDI_BGL_trace_note(bgl_nm_trace_kind_t kind, int peer,
                                                   MPI_Aint count, MPI_Datatype datatype,
                                                   MPIR_Comm * comm)
{
    if (comm->hierarchy_kind == MPIR_COMM_HIERARCHY_KIND__NODE_ROOTS)
        return;
    if (comm->hierarchy_kind == MPIR_COMM_HIERARCHY_KIND__NODE)
        peer = -1;
    uint64_t bytes = UINT64_MAX;
    if (datatype != MPI_DATATYPE_NULL) {
        MPI_Aint type_size = 0;
        if (count > 0)
            MPIR_Datatype_get_size_macro(datatype, type_size);
        bytes = (uint64_t) count * (uint64_t) type_size;
    }
    bgl_nm_trace_note(kind, peer, bytes, (uint32_t) comm->local_size);
}

#endif /* BGL_IMPL_H_INCLUDED */
