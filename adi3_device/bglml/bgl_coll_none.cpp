// libbglml's collective hooks while no collectives library is linked in: every operation is
// "not handled", so MPICH runs its own algorithms (over the device's active messages). The
// collectives library replaces this file (see adi3_device/README.md, "Collective hooks").
#include "bgl_coll_hooks.h"

extern "C" {

int bgl_coll_init(const bgl_coll_env_t* env) {
  return env && env->version == BGL_COLL_HOOKS_VERSION ? BGL_MSG_OK : BGL_MSG_ERR_ARG;
}
void bgl_coll_finalize(void) {}
void bgl_coll_comm_free(uint32_t) {}

int bgl_coll_barrier(const bgl_coll_comm_t*) {
  return BGL_COLL_NOT_HANDLED;
}
int bgl_coll_bcast(const bgl_coll_comm_t*, void*, size_t, uint32_t) {
  return BGL_COLL_NOT_HANDLED;
}
int bgl_coll_reduce(const bgl_coll_comm_t*, const void*, void*, size_t, bgl_coll_dtype_t,
                    bgl_coll_op_t, uint32_t) {
  return BGL_COLL_NOT_HANDLED;
}
int bgl_coll_allreduce(const bgl_coll_comm_t*, const void*, void*, size_t, bgl_coll_dtype_t,
                       bgl_coll_op_t) {
  return BGL_COLL_NOT_HANDLED;
}
int bgl_coll_allgather(const bgl_coll_comm_t*, const void*, void*, size_t) {
  return BGL_COLL_NOT_HANDLED;
}
int bgl_coll_alltoall(const bgl_coll_comm_t*, const void*, void*, size_t) {
  return BGL_COLL_NOT_HANDLED;
}

}  // extern "C"
