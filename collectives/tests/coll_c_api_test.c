/* The C entry points as the MPICH device uses them, run by bglrun (coll_launcher_test.cpp):
 * world and sub-communicators, every operation, in-place variants, the BGL_COLL_<OP> override. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bgl/coll/bgl_coll.h"

static uint32_t g_rank;

#define CHECK(cond)                                                                          \
  do {                                                                                       \
    if (!(cond)) {                                                                           \
      fprintf(stderr, "CHECK FAILED rank %u line %d: %s (%s)\n", (unsigned)g_rank, __LINE__, \
              #cond, bgl_coll_last_error());                                                 \
      exit(1);                                                                               \
    }                                                                                        \
  } while (0)

static void exercise(bgl_coll_comm_t* c, uint32_t p, uint32_t me) {
  enum { N = 5000 };
  /* bcast from the last rank */
  static unsigned char buf[N];
  for (int i = 0; i < N; i++)
    buf[i] = me == p - 1 ? (unsigned char)(i * 7 + 3) : 0;
  CHECK(bgl_coll_bcast(c, buf, N, p - 1) == BGL_COLL_DONE);
  for (int i = 0; i < N; i++)
    CHECK(buf[i] == (unsigned char)(i * 7 + 3));
  /* allreduce sum of int64, and in place */
  int64_t in[N], out[N];
  for (int i = 0; i < N; i++)
    in[i] = (int64_t)me * 100000 + i;
  CHECK(bgl_coll_allreduce(c, in, out, N, BGL_COLL_I64, BGL_COLL_SUM) == BGL_COLL_DONE);
  for (int i = 0; i < N; i++)
    CHECK(out[i] == (int64_t)p * i + 100000 * (int64_t)p * (p - 1) / 2);
  memcpy(out, in, sizeof in);
  CHECK(bgl_coll_allreduce(c, BGL_COLL_IN_PLACE, out, 7, BGL_COLL_I64, BGL_COLL_MAX) ==
        BGL_COLL_DONE);
  for (int i = 0; i < 7; i++)
    CHECK(out[i] == (int64_t)(p - 1) * 100000 + i);
  /* double sum reduce to rank 0 */
  double d[3] = {0.5 * me, 1.0, -2.0 * me}, r[3] = {0, 0, 0};
  CHECK(bgl_coll_reduce(c, d, r, 3, BGL_COLL_F64, BGL_COLL_SUM, 0) == BGL_COLL_DONE);
  if (me == 0) CHECK(r[0] == 0.25 * p * (p - 1) && r[1] == p && r[2] == -1.0 * p * (p - 1));
  /* allgather of 3 bytes, in place */
  unsigned char* g = calloc(3 * p, 1);
  for (int i = 0; i < 3; i++)
    g[3 * me + i] = (unsigned char)(me * 3 + i);
  CHECK(bgl_coll_allgather(c, BGL_COLL_IN_PLACE, g, 3) == BGL_COLL_DONE);
  for (uint32_t i = 0; i < 3 * p; i++)
    CHECK(g[i] == (unsigned char)i);
  free(g);
  /* alltoall of 2 int32 per pair */
  int32_t* s = malloc(8 * p);
  int32_t* t = malloc(8 * p);
  for (uint32_t j = 0; j < p; j++)
    s[2 * j] = (int32_t)(me * 1000 + j), s[2 * j + 1] = -1;
  CHECK(bgl_coll_alltoall(c, s, t, 8) == BGL_COLL_DONE);
  for (uint32_t i = 0; i < p; i++)
    CHECK(t[2 * i] == (int32_t)(i * 1000 + me) && t[2 * i + 1] == -1);
  free(s);
  free(t);
  CHECK(bgl_coll_barrier(c) == BGL_COLL_DONE);
  /* not handled: bitwise on floating point is not an MPI operation the library takes */
  CHECK(bgl_coll_allreduce(c, d, r, 3, BGL_COLL_F64, BGL_COLL_BXOR) == BGL_COLL_NOT_HANDLED);
}

int main(void) {
  bgl_msg_session_t* session;
  if (bgl_msg_init(NULL, &session) != 0) {
    fprintf(stderr, "init: %s\n", bgl_msg_last_error());
    return 2;
  }
  g_rank = bgl_msg_rank(session);
  const uint32_t n = bgl_msg_size(session);
  bgl_coll_comm_t* world;
  CHECK(bgl_coll_comm_create(session, n, g_rank, NULL, 0, &world) == 0);
  exercise(world, n, g_rank);
  /* Overrides: "mpich" hands the call back; an unknown name is a configuration error. */
  setenv("BGL_COLL_BCAST", "mpich", 1);
  unsigned char one = 1;
  CHECK(bgl_coll_bcast(world, &one, 1, 0) == BGL_COLL_NOT_HANDLED);
  setenv("BGL_COLL_BCAST", "no_such_algorithm", 1);
  CHECK(bgl_coll_bcast(world, &one, 1, 0) == BGL_COLL_ERR_CONFIG);
  CHECK(strstr(bgl_coll_last_error(), "valid: mpich, binomial") != NULL);
  setenv("BGL_COLL_BCAST", "scatter_allgather", 1);
  exercise(world, n, g_rank);
  unsetenv("BGL_COLL_BCAST");
  /* The upper half of the job, reversed. */
  const uint32_t half = n / 2;
  if (g_rank >= n - half) {
    uint32_t* ranks = malloc(sizeof(uint32_t) * half);
    for (uint32_t i = 0; i < half; i++)
      ranks[i] = n - 1 - i;
    bgl_coll_comm_t* sub;
    CHECK(bgl_coll_comm_create(session, half, n - 1 - g_rank, ranks, 7, &sub) == 0);
    exercise(sub, half, n - 1 - g_rank);
    bgl_coll_comm_free(sub);
    free(ranks);
  }
  CHECK(bgl_coll_barrier(world) == BGL_COLL_DONE);
  /* Bad arguments are errors, not crashes. */
  bgl_coll_comm_t* bad;
  CHECK(bgl_coll_comm_create(session, n + 1, 0, NULL, 9, &bad) == BGL_COLL_ERR_ARG);
  CHECK(bgl_coll_bcast(world, &one, 1, n + 5) == BGL_COLL_ERR_ARG);
  bgl_coll_comm_free(world);
  if (g_rank == 0) printf("coll_c_api: ok\n");
  bgl_msg_finalize(session);
  return 0;
}
