/* C ABI of the bglemu collectives library, for the MPICH device's collective hooks
 * (docs/COLLECTIVES.md, "C entry").
 *
 * Every operation is blocking and returns BGL_COLL_DONE when it ran the collective,
 * BGL_COLL_NOT_HANDLED when the caller must use its own algorithm (BGL_COLL_<OP>=mpich, a type or
 * operation the library does not reduce), or a negative bgl_coll_status on error;
 * bgl_coll_last_error() explains the latest failure in the calling thread. Every rank of a
 * communicator gets the same answer for the same call. Byte counts are per rank, contiguous. */
#ifndef BGL_COLL_H
#define BGL_COLL_H
#include <stddef.h>
#include <stdint.h>

#include "bgl/msg/bgl_msg.h"

#ifdef __cplusplus
extern "C" {
#endif

enum bgl_coll_status {
  BGL_COLL_NOT_HANDLED = 0,
  BGL_COLL_DONE = 1,
  BGL_COLL_ERR_CONFIG = -1,
  BGL_COLL_ERR_ARG = -2,
  BGL_COLL_ERR_INTERNAL = -3
};
enum bgl_coll_dtype {
  BGL_COLL_I8,
  BGL_COLL_U8,
  BGL_COLL_I32,
  BGL_COLL_U32,
  BGL_COLL_I64,
  BGL_COLL_U64,
  BGL_COLL_F32,
  BGL_COLL_F64
};
enum bgl_coll_op {
  BGL_COLL_SUM,
  BGL_COLL_PROD,
  BGL_COLL_MAX,
  BGL_COLL_MIN,
  BGL_COLL_BAND,
  BGL_COLL_BOR,
  BGL_COLL_BXOR
};
/* sendbuf value meaning MPI_IN_PLACE (the input is in recvbuf, at the rank's block for allgather
 * and alltoall's own block). */
#define BGL_COLL_IN_PLACE ((const void*)-1)

typedef struct bgl_coll_comm bgl_coll_comm_t;

/* world_ranks: communicator rank -> job rank (NULL = identity; size must then equal the job
 * size). context_id distinguishes communicators whose collectives may overlap in time (MPICH's
 * context id); every member passes the same value. The library uses message-layer handler 62 and
 * the collective network's route class combine1. */
int bgl_coll_comm_create(bgl_msg_session_t* session, uint32_t size, uint32_t rank,
                         const uint32_t* world_ranks, uint32_t context_id, bgl_coll_comm_t** comm);
void bgl_coll_comm_free(bgl_coll_comm_t* comm);

int bgl_coll_bcast(bgl_coll_comm_t* comm, void* buf, size_t bytes, uint32_t root);
int bgl_coll_reduce(bgl_coll_comm_t* comm, const void* sendbuf, void* recvbuf, size_t count,
                    int dtype, int op, uint32_t root);
int bgl_coll_allreduce(bgl_coll_comm_t* comm, const void* sendbuf, void* recvbuf, size_t count,
                       int dtype, int op);
int bgl_coll_allgather(bgl_coll_comm_t* comm, const void* sendbuf, void* recvbuf, size_t bytes);
int bgl_coll_alltoall(bgl_coll_comm_t* comm, const void* sendbuf, void* recvbuf, size_t bytes);
int bgl_coll_barrier(bgl_coll_comm_t* comm);
const char* bgl_coll_last_error(void);

#ifdef __cplusplus
}
#endif
#endif /* BGL_COLL_H */
