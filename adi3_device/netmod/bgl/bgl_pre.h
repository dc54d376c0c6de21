/*
 * The bgl netmod (bglemu): CH4 active messages over the emulated Blue Gene/L message layer.
 * Per-object types, pulled into MPICH's objects through the configure-generated netmodpre.h.
 */

#ifndef BGL_PRE_H_INCLUDED
#define BGL_PRE_H_INCLUDED

#include <stdint.h>

struct MPIR_Request;

/* A point-to-point request of the netmod's own (bgl_pt2pt.c): a receive, or a message taken by
 * MPI_Mprobe until its MPI_Mrecv. */
typedef struct MPIDI_BGL_request {
    struct MPIR_Request *next;  /* the posted-receive queue */
    void *buf;
    MPI_Aint count;
    MPI_Datatype datatype;
    int32_t rank;               /* as posted (maybe MPI_ANY_SOURCE), then the sender's */
    int32_t tag;
    uint32_t context_id;
    uint32_t handle;            /* the message layer's handle of a message waiting for a buffer */
    uint64_t bytes;             /* the message's size, once matched */
    uint64_t sync;              /* a synchronous sender's request, acked when matched; 0 if none */
    uint32_t sync_task;         /* the task that sent it */
    uint8_t has_data;           /* the layer holds data (or a rendezvous) under `handle` */
    uint8_t error_bits;
    void *unpack_buf;           /* bounce buffer (unpacked at the end) or iovec array, freed then */
    int unpack_is_iov;
} MPIDI_BGL_request_t;

/* Receive side of an active message whose data the message layer delivers asynchronously.
 * Native requests (MPIDI_BGL_request_t) live in dev.ch4.netmod, which overlaps dev.ch4.am; MPICH
 * looks at dev.ch4.am.req, right after this struct, whenever it completes a request, so the union
 * keeps that pointer (NULL in a native request) clear of the native fields. */
typedef struct {
    union {
        struct {
            uint32_t handle;    /* the message layer's receive handle (unexpected, data later) */
            void *unpack_buf;   /* data land here, then unpack into a non-contiguous datatype */
        };
        MPIDI_BGL_request_t native_room;
    };
} MPIDI_BGL_am_request_t;

/* The communicator as the collectives library sees it (bgl_coll.c), built on its first
 * collective call and freed with the communicator. */
typedef struct {
    int coll_state;             /* 0 not yet looked at, 1 usable by the hooks, -1 not usable */
    uint32_t *world_ranks;      /* comm rank -> task; NULL when the identity */
    int whole_job;
} MPIDI_BGL_comm_t;

typedef struct {
    int dummy;
} MPIDI_BGL_dt_t;

typedef struct {
    int dummy;
} MPIDI_BGL_op_t;

typedef struct {
    int dummy;
} MPIDI_BGL_win_t;

typedef struct {
    uint32_t dest;              /* task (world rank) in the emulated job */
} MPIDI_BGL_addr_t;

typedef struct {
    int dummy;
} MPIDI_BGL_part_t;

#endif /* BGL_PRE_H_INCLUDED */
