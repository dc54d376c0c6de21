/* libbglml's MPI-call timeline (bgl_nm_trace.h) as the netmod and MPICH's bindings drive it,
 * without MPICH: the hook's entries and exits of a few MPI functions (nested ones as MPICH makes
 * them), the notes of their arguments and the end inside MPI_Finalize. Run by bglrun --trace
 * (bglml_launcher_test.cpp checks the merged trace); prints "nm_trace: off" without --trace. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "bgl/message_layer/bgl_msg.h"
#include "bgl_nm_trace.h"

#define CHECK(cond)                                                                              \
  do {                                                                                           \
    if (!(cond)) {                                                                               \
      fprintf(stderr, "CHECK FAILED line %d: %s (%s)\n", __LINE__, #cond, bgl_msg_last_error()); \
      exit(1);                                                                                   \
    }                                                                                            \
  } while (0)

static bgl_nm_call_hook_t g_hook;

/* Another thread's calls are not on the timeline. */
static void* other_thread(void* unused) {
  (void)unused;
  g_hook("internal_Barrier", 1);
  bgl_nm_trace_note(BGL_NM_TRACE_BARRIER, -1, UINT64_MAX, 99);
  g_hook("internal_Barrier", 0);
  return NULL;
}

int main(void) {
  bgl_msg_session_t* session = NULL;
  CHECK(bgl_msg_init(NULL, &session) == 0);
  const uint32_t rank = bgl_msg_rank(session), size = bgl_msg_size(session);
  g_hook = bgl_nm_trace_open(session);
  if (g_hook == NULL) {
    bgl_nm_trace_close(); /* harmless */
    bgl_msg_finalize(session);
    if (rank == 0) printf("nm_trace: off\n");
    return 0;
  }
  const int64_t next = (rank + 1) % size;
  g_hook("internal_Init", 0); /* MPI_Init returns: it began at bgl_nm_trace_open */

  g_hook("internal_Comm_rank", 1);
  g_hook("internal_Comm_rank", 0);

  /* MPICH's own collectives inside MPI_Comm_split: no spans, no arguments of the split. */
  g_hook("internal_Comm_split", 1);
  g_hook("internal_Allreduce", 1);
  bgl_nm_trace_note(BGL_NM_TRACE_ALLREDUCE, -1, 4, size);
  g_hook("internal_Allreduce", 0);
  bgl_nm_trace_note(BGL_NM_TRACE_SEND, next, 1, size);
  g_hook("internal_Comm_split", 0);

  /* Notes of another kind are ignored; the first of the call's kind counts. */
  g_hook("internal_Allreduce", 1);
  bgl_nm_trace_note(BGL_NM_TRACE_SEND, next, 5, size);
  bgl_nm_trace_note(BGL_NM_TRACE_ALLREDUCE, -1, 8, size);
  bgl_nm_trace_note(BGL_NM_TRACE_ALLREDUCE, -1, 16, 1);
  g_hook("internal_Allreduce", 0);

  pthread_t t;
  CHECK(pthread_create(&t, NULL, other_thread, NULL) == 0);
  CHECK(pthread_join(t, NULL) == 0);

  g_hook("internal_Send_c", 1);
  bgl_nm_trace_note(BGL_NM_TRACE_SEND, next, 64, size);
  g_hook("internal_Send_c", 0);

  g_hook("MPIX_Grequest_start", 1);
  g_hook("MPIX_Grequest_start", 0);

  g_hook("internal_Bcast", 1);
  bgl_nm_trace_note(BGL_NM_TRACE_BCAST, 0, 3000, size);
  g_hook("internal_Bcast", 0);

  g_hook("internal_Finalize", 1);
  CHECK(bgl_msg_barrier(session) == 0);
  bgl_nm_trace_close(); /* the netmod uninstalls the hook first */
  bgl_msg_finalize(session);
  if (rank == 0) printf("nm_trace: ok\n");
  return 0;
}
