/* The collective hooks (bgl_coll_hooks.h) in libbglml as the MPICH device calls them, without
 * MPICH: a session of the message layer, a progress function like the device's, the world and a
 * sub-communicator, every operation with its in-place variant, element types and operations the
 * device translates, the BGL_COLL_<OP> override and bad arguments. Run by bglrun
 * (bglml_launcher_test.cpp). */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bgl_coll_hooks.h"

static uint32_t g_rank;
static bgl_msg_session_t* g_session;
static unsigned long g_rounds;

#define CHECK(cond)                                                                          \
  do {                                                                                       \
    if (!(cond)) {                                                                           \
      fprintf(stderr, "CHECK FAILED rank %u line %d: %s (%s)\n", (unsigned)g_rank, __LINE__, \
              #cond, bgl_msg_last_error());                                                  \
      exit(1);                                                                               \
    }                                                                                        \
  } while (0)

/* The device's progress in miniature: advance, and wait when nothing happened and asked to. */
static int progress(void* context, int wait) {
  (void)context;
  ++g_rounds;
  const int rc = bgl_msg_advance(g_session);
  if (rc < 0) return rc;
  if (rc == 0 && wait) bgl_msg_wait(g_session);
  return rc;
}

static void exercise(const bgl_coll_comm_t* c) {
  const uint32_t p = c->size, me = c->rank;
  enum { N = 5000 };
  /* bcast from the last rank */
  static unsigned char buf[N];
  for (int i = 0; i < N; i++)
    buf[i] = me == p - 1 ? (unsigned char)(i * 7 + 3) : 0;
  CHECK(bgl_coll_bcast(c, buf, N, p - 1) == BGL_COLL_DONE);
  for (int i = 0; i < N; i++)
    CHECK(buf[i] == (unsigned char)(i * 7 + 3));
  /* allreduce sum of int64, and in place (sendbuf == recvbuf) */
  static int64_t in[N], out[N];
  for (int i = 0; i < N; i++)
    in[i] = (int64_t)me * 100000 + i;
  CHECK(bgl_coll_allreduce(c, in, out, N, BGL_COLL_I64, BGL_COLL_SUM) == BGL_COLL_DONE);
  for (int i = 0; i < N; i++)
    CHECK(out[i] == (int64_t)p * i + 100000 * (int64_t)p * (p - 1) / 2);
  memcpy(out, in, sizeof in);
  CHECK(bgl_coll_allreduce(c, out, out, 7, BGL_COLL_I64, BGL_COLL_MAX) == BGL_COLL_DONE);
  for (int i = 0; i < 7; i++)
    CHECK(out[i] == (int64_t)(p - 1) * 100000 + i);
  /* 16-bit and logical operations (MPI_SHORT, MPI_LAND / MPI_LXOR) */
  int16_t s16[2] = {(int16_t)(me + 1), (int16_t)-me}, r16[2];
  CHECK(bgl_coll_allreduce(c, s16, r16, 2, BGL_COLL_I16, BGL_COLL_MIN) == BGL_COLL_DONE);
  CHECK(r16[0] == 1 && r16[1] == -(int16_t)(p - 1));
  int32_t flags[2] = {me != 0 ? 5 : 0, 1}, land[2];
  CHECK(bgl_coll_allreduce(c, flags, land, 2, BGL_COLL_I32, BGL_COLL_LAND) == BGL_COLL_DONE);
  CHECK(land[0] == (p == 1) && land[1] == 1);
  CHECK(bgl_coll_allreduce(c, flags, land, 2, BGL_COLL_I32, BGL_COLL_LXOR) == BGL_COLL_DONE);
  CHECK(land[0] == (int32_t)((p - 1) % 2) && land[1] == (int32_t)(p % 2));
  /* double sum reduce to rank 0; the root in place */
  double d[3] = {0.5 * me, 1.0, -2.0 * me}, r[3] = {0, 0, 0};
  CHECK(bgl_coll_reduce(c, d, r, 3, BGL_COLL_F64, BGL_COLL_SUM, 0) == BGL_COLL_DONE);
  if (me == 0) CHECK(r[0] == 0.25 * p * (p - 1) && r[1] == p && r[2] == -1.0 * p * (p - 1));
  memcpy(r, d, sizeof d);
  CHECK(bgl_coll_reduce(c, me == 0 ? r : d, me == 0 ? r : NULL, 3, BGL_COLL_F64, BGL_COLL_SUM, 0) ==
        BGL_COLL_DONE);
  if (me == 0) CHECK(r[1] == p);
  /* allgather of 3 bytes, in place (sendbuf NULL) and not */
  unsigned char* g = calloc(3 * p, 1);
  for (int i = 0; i < 3; i++)
    g[3 * me + i] = (unsigned char)(me * 3 + i);
  CHECK(bgl_coll_allgather(c, NULL, g, 3) == BGL_COLL_DONE);
  for (uint32_t i = 0; i < 3 * p; i++)
    CHECK(g[i] == (unsigned char)i);
  unsigned char mine[3] = {(unsigned char)(me * 3), (unsigned char)(me * 3 + 1),
                           (unsigned char)(me * 3 + 2)};
  memset(g, 0, 3 * p);
  CHECK(bgl_coll_allgather(c, mine, g, 3) == BGL_COLL_DONE);
  for (uint32_t i = 0; i < 3 * p; i++)
    CHECK(g[i] == (unsigned char)i);
  free(g);
  /* alltoall of 2 int32 per pair, and in place */
  int32_t* s = malloc(8 * p);
  int32_t* t = malloc(8 * p);
  for (uint32_t j = 0; j < p; j++)
    s[2 * j] = (int32_t)(me * 1000 + j), s[2 * j + 1] = -1;
  CHECK(bgl_coll_alltoall(c, s, t, 8) == BGL_COLL_DONE);
  for (uint32_t i = 0; i < p; i++)
    CHECK(t[2 * i] == (int32_t)(i * 1000 + me) && t[2 * i + 1] == -1);
  CHECK(bgl_coll_alltoall(c, NULL, s, 8) == BGL_COLL_DONE);
  for (uint32_t i = 0; i < p; i++)
    CHECK(s[2 * i] == (int32_t)(i * 1000 + me));
  free(s);
  free(t);
  CHECK(bgl_coll_barrier(c) == BGL_COLL_DONE);
}

int main(void) {
  if (bgl_msg_init(NULL, &g_session) != 0) {
    fprintf(stderr, "init: %s\n", bgl_msg_last_error());
    return 2;
  }
  g_rank = bgl_msg_rank(g_session);
  const uint32_t n = bgl_msg_size(g_session);
  const bgl_coll_env_t env = {BGL_COLL_HOOKS_VERSION, g_session, progress, NULL};
  CHECK(bgl_coll_init(&env) == 0);
  const bgl_coll_comm_t world = {0, n, g_rank, NULL, 1};
  exercise(&world);
  /* The library waited through our progress function, never behind its back. */
  CHECK(g_rounds > 0);
  /* Overrides: "mpich" hands the call back; an unknown name is a configuration error. */
  setenv("BGL_COLL_BCAST", "mpich", 1);
  unsigned char one = 1;
  CHECK(bgl_coll_bcast(&world, &one, 1, 0) == BGL_COLL_NOT_HANDLED);
  setenv("BGL_COLL_BCAST", "no_such_algorithm", 1);
  CHECK(bgl_coll_bcast(&world, &one, 1, 0) == BGL_MSG_ERR_CONFIG);
  CHECK(strstr(bgl_msg_last_error(), "valid: mpich, binomial") != NULL);
  setenv("BGL_COLL_BCAST", "scatter_allgather", 1);
  exercise(&world);
  unsetenv("BGL_COLL_BCAST");
  /* The upper half of the job, reversed: a communicator with its own rank table. */
  const uint32_t half = n / 2;
  if (g_rank >= n - half) {
    uint32_t* ranks = malloc(sizeof(uint32_t) * half);
    for (uint32_t i = 0; i < half; i++)
      ranks[i] = n - 1 - i;
    const bgl_coll_comm_t sub = {7, half, n - 1 - g_rank, ranks, 0};
    exercise(&sub);
    bgl_coll_comm_free(sub.id);
    free(ranks);
  }
  CHECK(bgl_coll_barrier(&world) == BGL_COLL_DONE);
  /* Bad arguments are errors, not crashes. */
  const bgl_coll_comm_t too_big = {9, n + 1, 0, NULL, 0};
  CHECK(bgl_coll_barrier(&too_big) == BGL_MSG_ERR_ARG);
  CHECK(bgl_coll_bcast(&world, &one, 1, n + 5) == BGL_MSG_ERR_ARG);
  CHECK(bgl_coll_barrier(NULL) == BGL_MSG_ERR_ARG);
  const bgl_coll_env_t old = {BGL_COLL_HOOKS_VERSION + 1, g_session, progress, NULL};
  bgl_coll_finalize();
  CHECK(bgl_coll_init(&old) == BGL_MSG_ERR_ARG);
  CHECK(bgl_coll_barrier(&world) < 0); /* outside init/finalize */
  if (g_rank == 0) printf("coll_hooks: ok\n");
  bgl_msg_finalize(g_session);
  return 0;
}
