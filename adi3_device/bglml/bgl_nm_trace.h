/* The MPI calls of a task's timeline (bglrun --trace): MPICH's bindings call a hook at the entry
 * and exit of every MPI function (mpich_patches/0005, mpir_func.h's MPIR_FUNC_TERSE_ENTER/EXIT);
 * the netmod installs the hook these functions provide when the task records a trace, and notes
 * the arguments of the common calls. Each outermost MPI call becomes one complete span (category
 * "mpi") named by the function; MPI calls made inside another MPI call (by MPICH itself) are not
 * recorded. All functions are for the thread that initialised MPI; others are ignored. */
#ifndef BGL_NM_TRACE_H
#define BGL_NM_TRACE_H

#include <stdint.h>

#include "bgl/message_layer/bgl_msg.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The hook's type: `function` is the binding's __func__ (a static string: "internal_Send" names
 * MPI_Send), `enter` 1 at the entry, 0 at the exit. */
typedef void (*bgl_nm_call_hook_t)(const char* function, int enter);

/* NULL when the task records no trace. Otherwise the hook to install, and the timeline counts the
 * MPI call this is made from (MPI_Init or MPI_Init_thread, named at its exit) as begun now. */
bgl_nm_call_hook_t bgl_nm_trace_open(bgl_msg_session_t* session);
/* Before the session ends (MPI_Finalize): records the MPI call still open as ending now; the hook
 * must be uninstalled first. Harmless when not open. */
void bgl_nm_trace_close(void);

/* What a note describes; it is kept only when the outermost open MPI call is of that kind. */
typedef enum {
  BGL_NM_TRACE_SEND = 0, /* MPI_Send, MPI_Isend, MPI_Ssend, ..., MPI_Sendrecv (the send's) */
  BGL_NM_TRACE_BARRIER,
  BGL_NM_TRACE_BCAST,
  BGL_NM_TRACE_REDUCE,
  BGL_NM_TRACE_ALLREDUCE,
  BGL_NM_TRACE_ALLGATHER,
  BGL_NM_TRACE_ALLTOALL
} bgl_nm_trace_kind_t;
/* The arguments of the open MPI call, the first note of its kind only: the peer (destination or
 * root, -1: none), bytes (count times the type's size, the send buffer's for allgather and
 * alltoall; UINT64_MAX: none) and the communicator's size. */
void bgl_nm_trace_note(bgl_nm_trace_kind_t kind, int64_t peer, uint64_t bytes, uint32_t comm_size);

#ifdef __cplusplus
}
#endif

#endif /* BGL_NM_TRACE_H */
