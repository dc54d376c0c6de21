/* Collective hooks: the C entry points through which MPICH's bgl netmod offers a collective
 * operation to bglemu's collectives library before it runs MPICH's own algorithm.
 *
 * The netmod calls bgl_coll_<op>() from its collective entry points (MPI_Barrier, MPI_Bcast,
 * MPI_Reduce, MPI_Allreduce, MPI_Allgather, MPI_Alltoall) with everything translated out of
 * MPICH's types: the communicator as a list of job ranks, contiguous buffers (MPI_IN_PLACE
 * resolved), predefined element types and operations. A hook
 *   - returns BGL_COLL_DONE when it ran the operation (every rank of the communicator got the
 *     same answer for the same arguments: the decision must be a pure function of them),
 *   - returns BGL_COLL_NOT_HANDLED when it has no algorithm for the case: MPICH's runs instead,
 *   - returns a negative bgl_msg_status on failure (bgl_msg_last_error() explains); the netmod
 *     stops the job with that text (the other ranks are inside the same collective).
 * The hooks run inside an MPI call on the application's thread. They wait by calling
 * env->progress(env->progress_context) in their loops: the device's progress, which advances
 * the message layer, runs MPICH's own active messages that arrive meanwhile and idles politely
 * (spin, yield, doorbell sleep) when nothing happens. They must not call bgl_msg_advance()
 * themselves (MPICH's messages would be dispatched re-entrantly).
 *
 * Handlers BGL_HANDLER_COLL_FIRST .. BGL_MSG_MAX_HANDLERS-1 of the message layer belong to the
 * collectives library (register them in bgl_coll_init); the netmod uses those below it
 * (bgl/message_layer/bgl_ids.h).
 *
 * libbglml's default implementation (bgl_coll_none.cpp) handles nothing. */
#ifndef BGL_COLL_HOOKS_H
#define BGL_COLL_HOOKS_H

#include <stddef.h>
#include <stdint.h>

#include "bgl/message_layer/bgl_msg.h"

#ifdef __cplusplus
extern "C" {
#endif

#define BGL_COLL_HOOKS_VERSION 2
#define BGL_COLL_DONE 0
#define BGL_COLL_NOT_HANDLED 1

/* Element types of reductions (MPI's predefined integer and floating types by size). */
typedef enum bgl_coll_dtype {
  BGL_COLL_I8,
  BGL_COLL_U8,
  BGL_COLL_I16,
  BGL_COLL_U16,
  BGL_COLL_I32,
  BGL_COLL_U32,
  BGL_COLL_I64,
  BGL_COLL_U64,
  BGL_COLL_F32,
  BGL_COLL_F64
} bgl_coll_dtype_t;

/* MPI's predefined operations (all commutative). */
typedef enum bgl_coll_op {
  BGL_COLL_SUM,
  BGL_COLL_PROD,
  BGL_COLL_MAX,
  BGL_COLL_MIN,
  BGL_COLL_LAND,
  BGL_COLL_LOR,
  BGL_COLL_LXOR,
  BGL_COLL_BAND,
  BGL_COLL_BOR,
  BGL_COLL_BXOR
} bgl_coll_op_t;

/* What the library may use, given once by the device when MPI initialises. */
typedef struct bgl_coll_env {
  int version; /* BGL_COLL_HOOKS_VERSION */
  bgl_msg_session_t* session;
  /* One round of the device's progress: returns 1 if anything happened, 0 if not, negative on
   * error. When nothing happened and `wait` is 1, the round first waits until something may have
   * happened (the message layer's bgl_msg_wait); with 0 it returns at once (the caller waits
   * itself, on more than the task's doorbell). */
  int (*progress)(void* context, int wait);
  void* progress_context;
} bgl_coll_env_t;

/* An intra-communicator. `id` is unique among the communicators alive at the same time and equal
 * on all its ranks (MPICH's context id); `world_ranks[i]` is the job rank (task) of communicator
 * rank i, NULL when the communicator is MPI_COMM_WORLD's order (i -> i). `whole_job` is set when
 * it holds every task of the job (partition-wide hardware, e.g. the collective network, may be
 * used only then). The arrays stay valid until bgl_coll_comm_free(id). */
typedef struct bgl_coll_comm {
  uint32_t id;
  uint32_t size;
  uint32_t rank;
  const uint32_t* world_ranks;
  int whole_job;
} bgl_coll_comm_t;

/* Called in MPI_Init after the message layer is up, and in MPI_Finalize before it goes down. */
int bgl_coll_init(const bgl_coll_env_t* env);
void bgl_coll_finalize(void);
/* A communicator the hooks saw is freed (cached schedules may be dropped). */
void bgl_coll_comm_free(uint32_t id);

int bgl_coll_barrier(const bgl_coll_comm_t* comm);
/* `bytes` contiguous bytes, the root's are the input. */
int bgl_coll_bcast(const bgl_coll_comm_t* comm, void* buffer, size_t bytes, uint32_t root);
/* `count` elements; sendbuf == recvbuf means in place; recvbuf is significant at the root only. */
int bgl_coll_reduce(const bgl_coll_comm_t* comm, const void* sendbuf, void* recvbuf, size_t count,
                    bgl_coll_dtype_t dtype, bgl_coll_op_t op, uint32_t root);
int bgl_coll_allreduce(const bgl_coll_comm_t* comm, const void* sendbuf, void* recvbuf,
                       size_t count, bgl_coll_dtype_t dtype, bgl_coll_op_t op);
/* `bytes` per rank; sendbuf == NULL means in place (this rank's block is already in recvbuf). */
int bgl_coll_allgather(const bgl_coll_comm_t* comm, const void* sendbuf, void* recvbuf,
                       size_t bytes);
/* `bytes` per pair; sendbuf == NULL means in place (recvbuf holds the blocks to send). */
int bgl_coll_alltoall(const bgl_coll_comm_t* comm, const void* sendbuf, void* recvbuf,
                      size_t bytes);

#ifdef __cplusplus
}
#endif

#endif /* BGL_COLL_HOOKS_H */
