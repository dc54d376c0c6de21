/*
 * The bgl netmod (bglemu): CH4 active messages over the emulated Blue Gene/L message layer.
 * Per-object types, pulled into MPICH's objects through the configure-generated netmodpre.h.
 */

#ifndef BGL_PRE_H_INCLUDED
#define BGL_PRE_H_INCLUDED

#include <stdint.h>

/* Receive side of an active message whose data the message layer delivers asynchronously. */
typedef struct {
    uint32_t handle;            /* the message layer's receive handle (unexpected, data later) */
    void *unpack_buf;           /* data land here, then unpack into a non-contiguous datatype */
} MPIDI_BGL_am_request_t;

typedef struct {
    int dummy;
} MPIDI_BGL_request_t;

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
