/* Task program (C11) for the coprocessor work units of the C ABI (bgl_msg_costart/bgl_msg_cojoin),
 * run by bglrun from node_modes_launcher_test.cpp in every node mode.
 *
 * Coprocessor mode: every task offloads units to its coprocessor: results come back through
 * cojoin (and memory the unit wrote is visible afterwards), a unit's non-zero result is returned
 * as is, 256 units may be outstanding and the 257th costart fails with BGL_MSG_ERR_INTERNAL and a
 * message, bad arguments give BGL_MSG_ERR_ARG; and a unit summing a large array runs while the
 * main task exchanges messages with a partner (computation offloaded during communication).
 * Heater and virtual-node modes: costart and cojoin fail with BGL_MSG_ERR_CONFIG and a message
 * that names coprocessor mode; messages still work. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bgl/message_layer/bgl_msg.h"

static unsigned g_rank;
static int g_poll; /* NM_WAIT=poll: never call bgl_msg_wait (to tell waiting problems apart) */

#define CHECK(cond)                                                                          \
  do {                                                                                       \
    if (!(cond)) {                                                                           \
      fprintf(stderr, "CHECK FAILED rank %u %s:%d: %s (last error: %s)\n", g_rank, __FILE__, \
              __LINE__, #cond, bgl_msg_last_error());                                        \
      fflush(stderr);                                                                        \
      exit(1);                                                                               \
    }                                                                                        \
  } while (0)

struct square {
  long in;
  long out;
};

static int square_unit(void* arg) {
  struct square* s = (struct square*)arg;
  s->out = s->in * s->in;
  return (int)(s->in % 100);
}

static int failing_unit(void* arg) {
  (void)arg;
  return -5;
}

struct gate {
  volatile int* open;
  int index;
};

static int gated_unit(void* arg) {
  struct gate* g = (struct gate*)arg;
  while (!__atomic_load_n(g->open, __ATOMIC_ACQUIRE)) {
  }
  return g->index;
}

struct sum_job {
  const uint32_t* data;
  size_t n;
  uint64_t sum;
};

static int sum_unit(void* arg) {
  struct sum_job* j = (struct sum_job*)arg;
  uint64_t s = 0;
  for (size_t i = 0; i < j->n; ++i)
    s += j->data[i];
  j->sum = s;
  return 0;
}

/* Messages between partners: one eager and one rendezvous message each way, checked. The C ABI
 * cannot tell when a task's injected packets have left (there is no bgl_msg_idle and
 * bgl_msg_barrier does not advance), so the driver runs this program with reception FIFOs large
 * enough (--fifo-packets 4096) that every packet is delivered when it is injected. The
 * partner's next message may arrive before this task has checked the previous one: one slot per
 * message. */
struct slot {
  unsigned char* buffer;
  size_t bytes;
  int done;
};
struct inbox {
  struct slot slots[2];
  int arrived;
};

static void recv_done(void* context, uint32_t handle, size_t bytes) {
  struct slot* s = (struct slot*)context;
  (void)handle;
  s->bytes = bytes;
  s->done = 1;
}

static bgl_msg_recv_target_t on_arrival(void* context, const bgl_msg_arrival_t* a) {
  struct inbox* in = (struct inbox*)context;
  CHECK(in->arrived < 2);
  struct slot* s = &in->slots[in->arrived++];
  bgl_msg_recv_target_t t;
  memset(&t, 0, sizeof t);
  t.kind = BGL_MSG_TARGET_BUFFER;
  /* aligned_alloc needs a size that is a multiple of the alignment (C11 7.22.3.1). */
  s->buffer = (unsigned char*)aligned_alloc(64, (a->bytes + 64 + 63) / 64 * 64);
  t.buffer = s->buffer;
  t.bytes = a->bytes;
  t.done = recv_done;
  t.context = s;
  return t;
}

static void send_done(bgl_msg_send_t* s) {
  *(int*)s->context = 1;
}

static void exchange(bgl_msg_session_t* s, uint32_t partner, size_t bytes, struct slot* in) {
  unsigned char* data = (unsigned char*)malloc(bytes);
  for (size_t i = 0; i < bytes; ++i)
    data[i] = (unsigned char)(i * 7 + g_rank);
  bgl_msg_send_t m;
  memset(&m, 0, sizeof m);
  int sent = 0;
  m.dest = partner;
  m.handler = 3;
  m.protocol = BGL_MSG_AUTO;
  m.data = data;
  m.bytes = bytes;
  m.done = send_done;
  m.context = &sent;
  CHECK(bgl_msg_post(s, &m) >= 0);
  while (!sent || !in->done)
    if (bgl_msg_advance(s) == 0 && !g_poll) bgl_msg_wait(s);
  CHECK(in->bytes == bytes);
  for (size_t i = 0; i < bytes; ++i)
    CHECK(in->buffer[i] == (unsigned char)(i * 7 + partner));
  free(in->buffer);
  free(data);
}

static void coprocessor_mode(bgl_msg_session_t* s) {
  uint32_t tickets[256];
  struct square squares[256];
  int result = 0;
  for (int i = 0; i < 256; ++i) {
    squares[i].in = i + 1000 * (long)g_rank;
    squares[i].out = 0;
    CHECK(bgl_msg_costart(s, square_unit, &squares[i], &tickets[i]) == BGL_MSG_OK);
  }
  for (int i = 255; i >= 0; --i) {
    CHECK(bgl_msg_cojoin(s, tickets[i], &result) == BGL_MSG_OK);
    CHECK(result == (int)(squares[i].in % 100));
    CHECK(squares[i].out == squares[i].in * squares[i].in);
  }

  /* A unit's own error code passes through unchanged (only a failed unit gives -1000). */
  uint32_t t;
  CHECK(bgl_msg_costart(s, failing_unit, NULL, &t) == BGL_MSG_OK);
  CHECK(bgl_msg_cojoin(s, t, &result) == BGL_MSG_OK);
  CHECK(result == -5);

  /* 256 outstanding, then one more. */
  volatile int open = 0;
  struct gate gates[256];
  for (int i = 0; i < 256; ++i) {
    gates[i].open = &open;
    gates[i].index = i;
    CHECK(bgl_msg_costart(s, gated_unit, &gates[i], &tickets[i]) == BGL_MSG_OK);
  }
  struct gate extra = {&open, 999};
  CHECK(bgl_msg_costart(s, gated_unit, &extra, &t) == BGL_MSG_ERR_INTERNAL);
  CHECK(strstr(bgl_msg_last_error(), "256 units outstanding") != NULL);
  __atomic_store_n(&open, 1, __ATOMIC_RELEASE);
  for (int i = 0; i < 256; ++i) {
    CHECK(bgl_msg_cojoin(s, tickets[i], &result) == BGL_MSG_OK);
    CHECK(result == i);
  }

  /* Bad arguments. */
  CHECK(bgl_msg_costart(s, NULL, NULL, &t) == BGL_MSG_ERR_ARG);
  CHECK(bgl_msg_costart(s, square_unit, &squares[0], NULL) == BGL_MSG_ERR_ARG);
  CHECK(bgl_msg_cojoin(s, 7, &result) == BGL_MSG_ERR_ARG); /* never started */
  CHECK(strstr(bgl_msg_last_error(), "not started") != NULL);
  CHECK(bgl_msg_cojoin(s, 100000, &result) != BGL_MSG_OK); /* no such ticket */

  /* Still working; a NULL result pointer is allowed. */
  squares[0].in = 12;
  CHECK(bgl_msg_costart(s, square_unit, &squares[0], &t) == BGL_MSG_OK);
  CHECK(bgl_msg_cojoin(s, t, NULL) == BGL_MSG_OK);
  CHECK(squares[0].out == 144);
}

static void other_mode(bgl_msg_session_t* s) {
  struct square sq = {3, 0};
  uint32_t t = 12345;
  int result = 77;
  CHECK(bgl_msg_costart(s, square_unit, &sq, &t) == BGL_MSG_ERR_CONFIG);
  CHECK(strstr(bgl_msg_last_error(), "coprocessor mode") != NULL);
  CHECK(t == 12345);
  CHECK(bgl_msg_cojoin(s, 0, &result) == BGL_MSG_ERR_CONFIG);
  CHECK(strstr(bgl_msg_last_error(), "coprocessor mode") != NULL);
  CHECK(result == 77);
  CHECK(sq.out == 0);
}

int main(void) {
  bgl_msg_session_t* s = NULL;
  if (bgl_msg_init(NULL, &s) != BGL_MSG_OK) {
    fprintf(stderr, "bgl_msg_init: %s\n", bgl_msg_last_error());
    return 1;
  }
  g_rank = bgl_msg_rank(s);
  g_poll = getenv("NM_WAIT") != NULL && strcmp(getenv("NM_WAIT"), "poll") == 0;
  const uint32_t size = bgl_msg_size(s);
  const int mode = bgl_msg_mode(s);
  CHECK(mode >= 0 && mode <= 2);
  struct inbox in;
  memset(&in, 0, sizeof in);
  CHECK(bgl_msg_register(s, 3, on_arrival, &in) == BGL_MSG_OK);

  if (mode == 1)
    coprocessor_mode(s);
  else
    other_mode(s);

  /* Partners 2k and 2k+1 exchange messages; in coprocessor mode a unit sums an array meanwhile. */
  CHECK(size % 2 == 0);
  const uint32_t partner = g_rank ^ 1u;
  struct sum_job job = {NULL, 4u << 20, 0};
  uint32_t* data = (uint32_t*)malloc(job.n * sizeof *data);
  uint64_t expected = 0;
  for (size_t i = 0; i < job.n; ++i) {
    data[i] = (uint32_t)(i * 2654435761u);
    expected += data[i];
  }
  job.data = data;
  uint32_t ticket = 0;
  if (mode == 1) CHECK(bgl_msg_costart(s, sum_unit, &job, &ticket) == BGL_MSG_OK);
  exchange(s, partner, 1000, &in.slots[0]);
  exchange(s, partner, 300000, &in.slots[1]); /* rendezvous */
  if (mode == 1) {
    int result = -1;
    CHECK(bgl_msg_cojoin(s, ticket, &result) == BGL_MSG_OK);
    CHECK(result == 0);
  } else {
    sum_unit(&job);
  }
  CHECK(job.sum == expected);
  free(data);
  CHECK(bgl_msg_barrier(s) == BGL_MSG_OK);
  printf("c coprocessor: rank %u, mode %d: ok\n", g_rank, mode);
  bgl_msg_finalize(s);
  return 0;
}
