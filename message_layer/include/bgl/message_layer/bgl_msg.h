/* C ABI of the bglemu message layer (for C users such as MPICH's CH4 netmod).
 *
 * All calls return 0 (or, for bgl_msg_post, BGL_MSG_SENT) on success or a negative bgl_msg_status;
 * bgl_msg_last_error() explains the latest failure in the calling thread. Send descriptors are
 * owned by the caller and must stay alive and unchanged from bgl_msg_post() until their done (and
 * remote_done) callbacks ran. */
#ifndef BGL_MSG_H
#define BGL_MSG_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>
#include "bgl/message_layer/bgl_ids.h"

#ifdef __cplusplus
extern "C" {
#endif

enum bgl_msg_status {
  BGL_MSG_SENT = 1, /* bgl_msg_post: the data went out in the call (see there) */
  BGL_MSG_OK = 0,
  BGL_MSG_ERR_CONFIG = -1,
  BGL_MSG_ERR_ARG = -2,
  BGL_MSG_ERR_INTERNAL = -3
};
enum bgl_msg_protocol {
  BGL_MSG_AUTO = -1,
  BGL_MSG_ONE_PACKET = 0,
  BGL_MSG_EAGER = 1,
  BGL_MSG_RENDEZVOUS = 2,
  BGL_MSG_ADAPTIVE_EAGER = 3,
  BGL_MSG_VIRTUAL_NODE = 4, /* to this node's other task in virtual-node mode */
  BGL_MSG_PROTOCOLS = 5     /* how many there are */
};
enum bgl_msg_target_kind {
  BGL_MSG_TARGET_BUFFER = 0,
  BGL_MSG_TARGET_IOV = 1,
  BGL_MSG_TARGET_LATER = 2
};

#define BGL_MSG_MAX_USER_HEADER 128
#define BGL_MSG_SEND_OPAQUE_BYTES 384
#ifdef __cplusplus
#define BGL_MSG_ALIGN16 alignas(16)
#else
#define BGL_MSG_ALIGN16 _Alignas(16)
#endif

typedef struct bgl_msg_session bgl_msg_session_t;
typedef struct {
  uint32_t id;
} bgl_msg_recv_handle_t;

typedef struct bgl_msg_bootstrap {
  void* context;
  uint32_t rank;
  uint32_t size;
  int (*barrier)(void* context);
  /* Rank 0's `bytes` bytes at `data` replace every rank's (O(size) for the process manager). */
  int (*broadcast)(void* context, void* data, size_t bytes);
} bgl_msg_bootstrap_t;

typedef struct bgl_msg_arrival {
  uint32_t source;
  uint8_t handler;
  const void* header;
  size_t header_bytes;
  uint64_t bytes;
  int protocol;
  bgl_msg_recv_handle_t handle;
} bgl_msg_arrival_t;

typedef void (*bgl_msg_recv_done_fn)(void* context, uint32_t handle_id, size_t bytes);

typedef struct bgl_msg_recv_target {
  int kind; /* bgl_msg_target_kind */
  void* buffer;
  size_t bytes;
  const struct iovec* iov;
  size_t iov_count;
  bgl_msg_recv_done_fn done;
  void* context;
} bgl_msg_recv_target_t;

typedef bgl_msg_recv_target_t (*bgl_msg_arrival_fn)(void* context,
                                                    const bgl_msg_arrival_t* arrival);

typedef struct bgl_msg_send bgl_msg_send_t;
typedef void (*bgl_msg_send_done_fn)(bgl_msg_send_t* send);

struct bgl_msg_send {
  uint32_t dest;
  uint8_t handler;
  int protocol; /* bgl_msg_protocol; BGL_MSG_AUTO chooses by size */
  const void* header;
  size_t header_bytes;
  const void* data; /* used when iov_count == 0 */
  size_t bytes;
  const struct iovec* iov;
  size_t iov_count;
  bgl_msg_send_done_fn done;
  bgl_msg_send_done_fn remote_done; /* rendezvous: receiver has everything (optional) */
  void* context;
  BGL_MSG_ALIGN16 unsigned char opaque[BGL_MSG_SEND_OPAQUE_BYTES]; /* the layer's; do not touch */
};

/* bootstrap == NULL: a program started by bglrun. A process may start a new session after
 * bgl_msg_finalize(). */
int bgl_msg_init(const bgl_msg_bootstrap_t* bootstrap, bgl_msg_session_t** session);
/* Advances until every packet the task still owes the network has left it (so a message whose
 * done callback ran is delivered even if its last packets were still queued), then ends the
 * session. Not collective. Gives up with an error logged after 10 s without any progress (a peer
 * that stopped receiving). NULL is ignored. */
void bgl_msg_finalize(bgl_msg_session_t* session);
const char* bgl_msg_last_error(void);

uint32_t bgl_msg_rank(const bgl_msg_session_t* session);
uint32_t bgl_msg_size(const bgl_msg_session_t* session);
int bgl_msg_mode(const bgl_msg_session_t* session); /* 0 heater, 1 coprocessor, 2 virtual node */
int bgl_msg_coords(const bgl_msg_session_t* session, uint32_t rank, int xyzt[4]);
size_t bgl_msg_max_one_packet(size_t header_bytes);

/* Virtual time (bglrun --virtual-time): the task's Blue Gene/L clock in seconds. Returns
 * BGL_MSG_ERR_CONFIG (and leaves *seconds alone) when the job runs without virtual time. */
int bgl_msg_vtime(const bgl_msg_session_t* session, double* seconds);
/* Virtual time: charges the MPI layer's modelled cost of one call to the task's clock (nothing
 * without virtual time). */
enum bgl_msg_vt_call { BGL_MSG_VT_MPI_SEND = 0, BGL_MSG_VT_MPI_RECV = 1 };
void bgl_msg_vt_charge(bgl_msg_session_t* session, int call);

int bgl_msg_register(bgl_msg_session_t* session, uint8_t handler, bgl_msg_arrival_fn fn,
                     void* context);
/* Returns BGL_MSG_SENT when the layer no longer reads the send's header and data (a one-packet
 * message that went out in the call itself: the caller may reuse its buffers at once, as after
 * fi_inject), BGL_MSG_OK when they are still the layer's until the done callback, or an error.
 * Either way the descriptor stays the layer's until its done callback, which runs from a later
 * bgl_msg_advance(). */
int bgl_msg_post(bgl_msg_session_t* session, bgl_msg_send_t* send);
int bgl_msg_accept(bgl_msg_session_t* session, bgl_msg_recv_handle_t handle,
                   const bgl_msg_recv_target_t* target);
/* Returns 1 if anything happened, 0 if not. */
int bgl_msg_advance(bgl_msg_session_t* session);
/* The task's waits, with the job's waiting policy (BGL_SPIN, BGL_YIELD, BGL_SLEEP_US and the
 * defaults by tasks per core). After an advance that did nothing:
 * bgl_msg_wait: a blocking caller waits until something may have happened (spin, yield, then a
 *   sleep on the task's doorbell, which arriving packets ring; shorter while packets wait for room
 *   in a peer's FIFO); it then advances again.
 * bgl_msg_poll_yield: a non-blocking caller that returns now gives the core away once when this
 *   host's tasks outnumber its cores (the task it polls for may need the core), else nothing. */
void bgl_msg_wait(bgl_msg_session_t* session);
void bgl_msg_poll_yield(bgl_msg_session_t* session);
/* 1 when nothing this task posted is queued or in flight: every done (and remote_done) callback
 * has run, no rendezvous waits for its ack or fin, no control packet is owed and the injection
 * FIFOs are empty; 0 otherwise. (done alone means only "the send buffer may be reused".) */
int bgl_msg_idle(const bgl_msg_session_t* session);
/* A barrier of all tasks that keeps advancing: the task first flushes what it owes the network
 * (its peers keep receiving), then waits while still advancing, so peers can flush into it.
 * With a host bootstrap the host's barrier is called after the flush. */
int bgl_msg_barrier(bgl_msg_session_t* session);

/* Coprocessor mode: run work units on the node's second processor. bgl_msg_costart returns
 * BGL_MSG_ERR_CONFIG when the job is not in coprocessor mode; bgl_msg_cojoin waits for the unit
 * and stores its result (-1000 if it failed) in *result. */
typedef int (*bgl_msg_unit_fn)(void* arg);
int bgl_msg_costart(bgl_msg_session_t* session, bgl_msg_unit_fn unit, void* arg, uint32_t* ticket);
int bgl_msg_cojoin(bgl_msg_session_t* session, uint32_t ticket, int* result);

#ifdef __cplusplus
}
#endif

#endif /* BGL_MSG_H */
