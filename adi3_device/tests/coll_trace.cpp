// A stand-in collectives library for the tests: preloaded into MPI ranks (LD_PRELOAD), it
// replaces libbglml's bgl_coll_* hooks, prints what the netmod passed (once per distinct call
// shape, from job rank 0 only) and answers "not handled", so MPICH still computes the result.
// mpi_device_test.cpp checks the translation (communicator, types, operations, in place) from
// these lines while the program checks the results.
#include <cstdio>
#include <set>
#include <string>

#include "bgl_coll_hooks.h"

namespace {

const char* dtype_name(bgl_coll_dtype_t t) {
  static const char* names[] = {"I8", "U8", "I16", "U16", "I32", "U32", "I64", "U64", "F32", "F64"};
  return static_cast<unsigned>(t) < std::size(names) ? names[t] : "?";
}
const char* op_name(bgl_coll_op_t op) {
  static const char* names[] = {"SUM", "PROD", "MAX",  "MIN", "LAND",
                                "LOR", "LXOR", "BAND", "BOR", "BXOR"};
  return static_cast<unsigned>(op) < std::size(names) ? names[op] : "?";
}

void trace(const bgl_coll_comm_t* c, const std::string& what) {
  const uint32_t job_rank = c->world_ranks ? c->world_ranks[c->rank] : c->rank;
  std::string ranks = "identity";
  if (c->world_ranks) {
    ranks.clear();
    for (uint32_t i = 0; i < c->size; ++i)
      ranks += (i ? "," : "") + std::to_string(c->world_ranks[i]);
  }
  const std::string line = "bgl_coll_trace: " + what + " size=" + std::to_string(c->size) +
                           " ranks=" + ranks + " whole_job=" + std::to_string(c->whole_job);
  static std::set<std::string> seen;
  if (job_rank == 0 && seen.insert(line).second) std::fprintf(stderr, "%s\n", line.c_str());
}

}  // namespace

extern "C" {

int bgl_coll_init(const bgl_coll_env_t* env) {
  std::fprintf(stderr, "bgl_coll_trace: init version=%d progress=%s\n", env->version,
               env->progress ? "yes" : "no");
  return BGL_MSG_OK;
}
void bgl_coll_finalize(void) {}
void bgl_coll_comm_free(uint32_t) {}

int bgl_coll_barrier(const bgl_coll_comm_t* c) {
  trace(c, "barrier");
  return BGL_COLL_NOT_HANDLED;
}
int bgl_coll_bcast(const bgl_coll_comm_t* c, void*, size_t bytes, uint32_t root) {
  trace(c, "bcast bytes=" + std::to_string(bytes) + " root=" + std::to_string(root));
  return BGL_COLL_NOT_HANDLED;
}
int bgl_coll_reduce(const bgl_coll_comm_t* c, const void* s, void* r, size_t count,
                    bgl_coll_dtype_t t, bgl_coll_op_t op, uint32_t root) {
  trace(c, std::string("reduce count=") + std::to_string(count) + " dtype=" + dtype_name(t) +
               " op=" + op_name(op) + " root=" + std::to_string(root) +
               " in_place=" + std::to_string(s == r));
  return BGL_COLL_NOT_HANDLED;
}
int bgl_coll_allreduce(const bgl_coll_comm_t* c, const void* s, void* r, size_t count,
                       bgl_coll_dtype_t t, bgl_coll_op_t op) {
  trace(c, std::string("allreduce count=") + std::to_string(count) + " dtype=" + dtype_name(t) +
               " op=" + op_name(op) + " in_place=" + std::to_string(s == r));
  return BGL_COLL_NOT_HANDLED;
}
int bgl_coll_allgather(const bgl_coll_comm_t* c, const void* s, void*, size_t bytes) {
  trace(c, "allgather bytes=" + std::to_string(bytes) + " in_place=" + std::to_string(!s));
  return BGL_COLL_NOT_HANDLED;
}
int bgl_coll_alltoall(const bgl_coll_comm_t* c, const void* s, void*, size_t bytes) {
  trace(c, "alltoall bytes=" + std::to_string(bytes) + " in_place=" + std::to_string(!s));
  return BGL_COLL_NOT_HANDLED;
}

}  // extern "C"
