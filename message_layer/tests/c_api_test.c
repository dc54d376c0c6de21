/* Task program for the message layer's C ABI (bgl/message_layer/bgl_msg.h), compiled as C11 and run
 * by bglrun from ml_launcher_test.cpp.
 *
 *   c_api_test null        bgl_msg_init(NULL): the program was started by bglrun
 *   c_api_test host DIR    bgl_msg_init with a host bootstrap whose barrier and allgather are
 *                          implemented on files in DIR (a stand-in for a host process manager;
 *                          rank and size come from BGL_RANK and BGL_SIZE)
 *   c_api_test host_bad_size|host_bad_rank DIR
 *                          a host bootstrap that disagrees with bglrun's job: configuration error
 *   c_api_test strand      a sender that saw done() and entered the barrier (with tiny reception
 *                          FIFOs): the barrier flushes the last packets of its message
 *   c_api_test reinit      a second session after bgl_msg_finalize
 *
 * Rank 0 and the last rank ping-pong messages of several sizes with every protocol (and the
 * layer's own choice); the answer goes out as a gather list and comes back into a scatter list;
 * odd-numbered messages are taken as unexpected and accepted later. Then: bad input gives
 * BGL_MSG_ERR_ARG with a message, coordinates and mode queries, coprocessor work units. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "bgl/message_layer/bgl_msg.h"

static unsigned g_rank;

#define CHECK(cond)                                                                          \
  do {                                                                                       \
    if (!(cond)) {                                                                           \
      fprintf(stderr, "CHECK FAILED rank %u %s:%d: %s (last error: %s)\n", g_rank, __FILE__, \
              __LINE__, #cond, bgl_msg_last_error());                                        \
      fflush(stderr);                                                                        \
      exit(1);                                                                               \
    }                                                                                        \
  } while (0)

/* ------------------------------------------------------------------------------------------ */
/* A host bootstrap on files: each collective call has a generation number; a task announces
 * itself by creating DIR/<kind><generation>.<rank> (written to a temporary name, then renamed),
 * then waits until every task's file exists. */

struct file_pm {
  const char* dir;
  unsigned rank;
  unsigned size;
  unsigned generation;
  unsigned calls;
};

static void pause_briefly(void) {
  const struct timespec t = {0, 200000};
  nanosleep(&t, NULL);
}

static int publish(const struct file_pm* pm, char kind, const void* data, size_t bytes) {
  char tmp[4096], path[4096];
  snprintf(tmp, sizeof tmp, "%s/.%c%u.%u.tmp", pm->dir, kind, pm->generation, pm->rank);
  snprintf(path, sizeof path, "%s/%c%u.%u", pm->dir, kind, pm->generation, pm->rank);
  const int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) return -1;
  if (bytes > 0 && write(fd, data, bytes) != (ssize_t)bytes) {
    close(fd);
    return -1;
  }
  close(fd);
  return rename(tmp, path);
}

/* Waits for task r's file of this generation; reads `bytes` bytes of it into `out` (if any). */
static int collect(const struct file_pm* pm, char kind, unsigned r, void* out, size_t bytes) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%c%u.%u", pm->dir, kind, pm->generation, r);
  for (int tries = 0; tries < 300000; ++tries) { /* at most a minute */
    const int fd = open(path, O_RDONLY);
    if (fd >= 0) {
      const ssize_t n = bytes > 0 ? read(fd, out, bytes) : 0;
      close(fd);
      return n == (ssize_t)bytes ? 0 : -1;
    }
    if (errno != ENOENT) return -1;
    pause_briefly();
  }
  return -1;
}

static int file_barrier(void* context) {
  struct file_pm* pm = context;
  ++pm->generation;
  ++pm->calls;
  if (publish(pm, 'b', NULL, 0) != 0) return -1;
  for (unsigned r = 0; r < pm->size; ++r)
    if (collect(pm, 'b', r, NULL, 0) != 0) return -1;
  return 0;
}

static int file_broadcast(void* context, void* data, size_t bytes) {
  struct file_pm* pm = context;
  ++pm->generation;
  ++pm->calls;
  if (pm->rank == 0) return publish(pm, 'c', data, bytes);
  return collect(pm, 'c', 0, data, bytes);
}

/* ------------------------------------------------------------------------------------------ */
/* Messages */

static unsigned char pattern(uint32_t seq, size_t i) {
  return (unsigned char)(seq * 131u + i * 7u + (i >> 9));
}

struct header {
  uint32_t seq;
  uint32_t bytes;
};

/* What arrived: one message at a time is in flight between the two tasks. */
struct inbox {
  bgl_msg_session_t* session;
  int arrived;
  int completed;
  size_t completed_bytes;
  uint32_t completed_handle;
  bgl_msg_arrival_t arrival;
  struct header header;
  int later;   /* answered BGL_MSG_TARGET_LATER */
  int scatter; /* receive into three pieces */
  unsigned char* buffer;
  struct iovec iov[3];
};

static void on_done(void* context, uint32_t handle, size_t bytes) {
  struct inbox* in = context;
  ++in->completed;
  in->completed_bytes = bytes;
  in->completed_handle = handle;
}

static void split3(struct iovec iov[3], unsigned char* base, size_t bytes) {
  const size_t a = bytes / 3, b = bytes / 2 > a ? bytes / 2 - a : 0;
  iov[0].iov_base = base;
  iov[0].iov_len = a;
  iov[1].iov_base = base + a + 1; /* pieces not adjacent: the data really are scattered */
  iov[1].iov_len = b;
  iov[2].iov_base = base + a + b + 3;
  iov[2].iov_len = bytes - a - b;
}

static bgl_msg_recv_target_t target_of(struct inbox* in) {
  bgl_msg_recv_target_t t;
  memset(&t, 0, sizeof t);
  t.done = on_done;
  t.context = in;
  if (in->scatter) {
    split3(in->iov, in->buffer, in->header.bytes);
    t.kind = BGL_MSG_TARGET_IOV;
    t.iov = in->iov;
    t.iov_count = 3;
  } else {
    t.kind = BGL_MSG_TARGET_BUFFER;
    t.buffer = in->buffer + 1; /* odd alignment */
    t.bytes = in->header.bytes;
  }
  return t;
}

static bgl_msg_recv_target_t on_arrival(void* context, const bgl_msg_arrival_t* a) {
  struct inbox* in = context;
  ++in->arrived;
  in->arrival = *a;
  CHECK(a->header_bytes == sizeof(struct header));
  memcpy(&in->header, a->header, sizeof in->header);
  CHECK(a->bytes == in->header.bytes);
  in->scatter = (int)(in->header.seq % 3 == 0);
  free(in->buffer);
  in->buffer = malloc(in->header.bytes + 8);
  CHECK(in->buffer != NULL);
  if (in->header.seq % 2 == 1) {
    bgl_msg_recv_target_t t;
    memset(&t, 0, sizeof t);
    t.kind = BGL_MSG_TARGET_LATER;
    in->later = 1;
    return t;
  }
  in->later = 0;
  return target_of(in);
}

/* Copies what arrived into `out` (gathering a scatter list back). */
static void contents(const struct inbox* in, unsigned char* out) {
  if (!in->scatter) {
    memcpy(out, in->buffer + 1, in->header.bytes);
    return;
  }
  size_t at = 0;
  for (int i = 0; i < 3; ++i) {
    memcpy(out + at, in->iov[i].iov_base, in->iov[i].iov_len);
    at += in->iov[i].iov_len;
  }
}

struct send_state {
  int done;
  int remote_done;
};

static void send_done(bgl_msg_send_t* s) {
  ++((struct send_state*)s->context)->done;
}
static void send_remote_done(bgl_msg_send_t* s) {
  ++((struct send_state*)s->context)->remote_done;
}

/* Waits for one message into `in` (it may have arrived already, while this task waited for its
 * own send), accepting it if it was unexpected; then marks it consumed. */
static void receive_one(bgl_msg_session_t* s, struct inbox* in) {
  while (in->arrived == 0)
    if (!bgl_msg_advance(s)) bgl_msg_wait(s);
  if (in->later) {
    /* Unexpected: let the data (if eager) settle in the pool first. */
    for (int i = 0; i < 100; ++i)
      bgl_msg_advance(s);
    CHECK(in->completed == 0);
    const bgl_msg_recv_target_t t = target_of(in);
    CHECK(bgl_msg_accept(s, in->arrival.handle, &t) == BGL_MSG_OK);
    /* Used up: a second accept is refused. */
    while (in->completed == 0)
      if (!bgl_msg_advance(s)) bgl_msg_wait(s);
    CHECK(bgl_msg_accept(s, in->arrival.handle, &t) == BGL_MSG_ERR_ARG);
    CHECK(strstr(bgl_msg_last_error(), "not waiting for a buffer") != NULL);
  }
  while (in->completed == 0)
    if (!bgl_msg_advance(s)) bgl_msg_wait(s);
  CHECK(in->arrived == 1);
  CHECK(in->completed == 1);
  CHECK(in->completed_bytes == in->header.bytes);
  CHECK(in->completed_handle == in->arrival.handle.id);
  in->arrived = in->completed = 0;
}

/* Posts and waits for done (and remote_done for a rendezvous). */
static void send_and_wait(bgl_msg_session_t* s, bgl_msg_send_t* m, struct send_state* st,
                          int rendezvous) {
  st->done = st->remote_done = 0;
  m->context = st;
  m->done = send_done;
  m->remote_done = send_remote_done;
  /* In this ping-pong nothing waits before the message: a one-packet message goes out in post()
   * and its buffers are free at once; no other protocol releases them before its packets left. */
  const int posted = bgl_msg_post(s, m);
  CHECK(posted == BGL_MSG_OK || posted == BGL_MSG_SENT);
  if (m->protocol == BGL_MSG_ONE_PACKET) CHECK(posted == BGL_MSG_SENT);
  if (m->protocol != BGL_MSG_ONE_PACKET && m->protocol != BGL_MSG_AUTO) CHECK(posted == BGL_MSG_OK);
  CHECK(bgl_msg_idle(s) == 0); /* its done callback has not run yet */
  while (st->done == 0 || (rendezvous && st->remote_done == 0))
    if (!bgl_msg_advance(s)) bgl_msg_wait(s);
  CHECK(st->done == 1);
  /* The eager protocols never hear back from the receiver. */
  if (m->protocol == BGL_MSG_ONE_PACKET || m->protocol == BGL_MSG_EAGER ||
      m->protocol == BGL_MSG_ADAPTIVE_EAGER)
    CHECK(st->remote_done == 0);
}

static int pingpong(bgl_msg_session_t* s, unsigned peer, int first) {
  struct inbox in;
  memset(&in, 0, sizeof in);
  in.session = s;
  CHECK(bgl_msg_register(s, 3, on_arrival, &in) == BGL_MSG_OK);
  const int protocols[] = {BGL_MSG_AUTO, BGL_MSG_ONE_PACKET, BGL_MSG_EAGER, BGL_MSG_RENDEZVOUS,
                           BGL_MSG_ADAPTIVE_EAGER};
  const size_t sizes[] = {0, 1, 100, 220, 221, 5000, 100000};
  uint32_t seq = 0;
  int messages = 0;
  for (size_t p = 0; p < sizeof protocols / sizeof protocols[0]; ++p) {
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; ++k) {
      const size_t bytes = sizes[k];
      if (protocols[p] == BGL_MSG_ONE_PACKET &&
          bytes > bgl_msg_max_one_packet(sizeof(struct header)))
        continue; /* the one-packet protocol carries at most 220 bytes beside this header */
      const int rendezvous =
          protocols[p] == BGL_MSG_RENDEZVOUS || (protocols[p] == BGL_MSG_AUTO && bytes > 16384);
      struct header h = {seq, (uint32_t)bytes};
      struct send_state st;
      bgl_msg_send_t m;
      memset(&m, 0, sizeof m);
      m.dest = peer;
      m.handler = 3;
      m.protocol = protocols[p];
      m.header = &h;
      m.header_bytes = sizeof h;
      if (first) {
        unsigned char* data = malloc(bytes + 1);
        CHECK(data != NULL);
        for (size_t i = 0; i < bytes; ++i)
          data[i] = pattern(seq, i);
        m.data = data;
        m.bytes = bytes;
        send_and_wait(s, &m, &st, rendezvous);
        free(data);
        receive_one(s, &in); /* the echo */
      } else {
        receive_one(s, &in);
        CHECK(in.arrival.source == peer);
        CHECK(in.arrival.handler == 3);
        CHECK(in.header.seq == seq);
        if (protocols[p] != BGL_MSG_AUTO) CHECK(in.arrival.protocol == protocols[p]);
        /* Echo as a gather list of three pieces. */
        unsigned char* copy = malloc(bytes + 8);
        CHECK(copy != NULL);
        contents(&in, copy);
        struct iovec iov[3];
        split3(iov, copy, bytes);
        memmove((unsigned char*)iov[2].iov_base, copy + iov[0].iov_len + iov[1].iov_len,
                iov[2].iov_len);
        memmove((unsigned char*)iov[1].iov_base, copy + iov[0].iov_len, iov[1].iov_len);
        m.iov = iov;
        m.iov_count = 3;
        send_and_wait(s, &m, &st, rendezvous);
        free(copy);
        ++seq;
        continue;
      }
      /* The echo must be what was sent. */
      unsigned char* back = malloc(bytes + 1);
      CHECK(back != NULL);
      contents(&in, back);
      for (size_t i = 0; i < bytes; ++i)
        CHECK(back[i] == pattern(seq, i));
      free(back);
      CHECK(in.header.seq == seq);
      ++messages;
      ++seq;
    }
  }
  free(in.buffer);
  return messages;
}

/* Ends a ping-pong so that neither task leaves while its last packets may still sit in its
 * injection FIFO (the C ABI has no call that tells when they left): the first task says bye
 * after the last echo arrived, the other answers; each waits for the other's word. */
static bgl_msg_recv_target_t on_word(void* context, const bgl_msg_arrival_t* a) {
  (void)a;
  ++*(int*)context;
  bgl_msg_recv_target_t t;
  memset(&t, 0, sizeof t);
  t.kind = BGL_MSG_TARGET_BUFFER;
  return t;
}

static void handshake(bgl_msg_session_t* s, unsigned peer, int first) {
  int words = 0;
  CHECK(bgl_msg_register(s, 4, on_word, &words) == BGL_MSG_OK);
  struct send_state st;
  bgl_msg_send_t m;
  memset(&m, 0, sizeof m);
  m.dest = peer;
  m.handler = 4;
  m.protocol = BGL_MSG_ONE_PACKET;
  if (first) send_and_wait(s, &m, &st, 0);
  while (words == 0)
    if (!bgl_msg_advance(s)) bgl_msg_wait(s);
  if (!first) send_and_wait(s, &m, &st, 0);
}

/* Mode "strand": the last task sends one adaptive-eager message and, once its done callback ran,
 * enters bgl_msg_barrier(). With small reception FIFOs the last packets are still in its
 * injection FIFO then; the barrier must move them on (it used to strand them: rank 0 never got
 * the whole message). Afterwards the sender is idle. */
static void strand(bgl_msg_session_t* s, unsigned me, unsigned last) {
  const size_t bytes = 200000;
  if (me == last) {
    unsigned char* data = calloc(bytes, 1);
    CHECK(data != NULL);
    struct header h = {0, (uint32_t)bytes};
    struct send_state st;
    bgl_msg_send_t m;
    memset(&m, 0, sizeof m);
    m.dest = 0;
    m.handler = 3;
    m.protocol = BGL_MSG_ADAPTIVE_EAGER;
    m.header = &h;
    m.header_bytes = sizeof h;
    m.data = data;
    m.bytes = bytes;
    send_and_wait(s, &m, &st, 0);
    CHECK(bgl_msg_barrier(s) == BGL_MSG_OK);
    CHECK(bgl_msg_idle(s) == 1);
    free(data);
  } else if (me == 0) {
    struct inbox in;
    memset(&in, 0, sizeof in);
    CHECK(bgl_msg_register(s, 3, on_arrival, &in) == BGL_MSG_OK);
    const time_t start = time(NULL);
    while (in.completed == 0 && time(NULL) - start < 10)
      if (!bgl_msg_advance(s)) bgl_msg_wait(s);
    if (in.completed == 0) {
      fprintf(stderr,
              "CHECK FAILED rank 0: a message whose sender saw done() and entered "
              "bgl_msg_barrier() never arrives (its last packets stay in the sender's injection "
              "FIFO)\n");
      exit(1);
    }
    free(in.buffer);
    CHECK(bgl_msg_barrier(s) == BGL_MSG_OK);
  } else {
    CHECK(bgl_msg_barrier(s) == BGL_MSG_OK);
  }
}

static int unit_add(void* arg) {
  int* v = arg;
  return v[0] + v[1];
}

static void bad_input(bgl_msg_session_t* s) {
  const unsigned size = bgl_msg_size(s);
  unsigned char data[1000] = {0}, header[200] = {0};
  bgl_msg_send_t m;
  memset(&m, 0, sizeof m);
  m.protocol = BGL_MSG_AUTO;
  m.dest = size;
  CHECK(bgl_msg_post(s, &m) == BGL_MSG_ERR_ARG);
  CHECK(strstr(bgl_msg_last_error(), "message to rank") != NULL);
  m.dest = 0;
  m.header = header;
  m.header_bytes = 129;
  CHECK(bgl_msg_post(s, &m) == BGL_MSG_ERR_ARG);
  CHECK(strstr(bgl_msg_last_error(), "user header of 129 bytes exceeds 128") != NULL);
  m.header_bytes = 0;
  m.protocol = BGL_MSG_ONE_PACKET;
  m.data = data;
  m.bytes = sizeof data;
  CHECK(bgl_msg_post(s, &m) == BGL_MSG_ERR_ARG);
  CHECK(strstr(bgl_msg_last_error(), "one-packet protocol forced for 1000 bytes") != NULL);
  m.protocol = 17;
  CHECK(bgl_msg_post(s, &m) == BGL_MSG_ERR_ARG);
  CHECK(strstr(bgl_msg_last_error(), "unknown protocol") != NULL);
  m.protocol = -5;
  CHECK(bgl_msg_post(s, &m) == BGL_MSG_ERR_ARG);
  CHECK(bgl_msg_post(s, NULL) == BGL_MSG_ERR_ARG);
  const bgl_msg_recv_handle_t unknown = {12345};
  bgl_msg_recv_target_t t;
  memset(&t, 0, sizeof t);
  t.kind = BGL_MSG_TARGET_BUFFER;
  t.buffer = data;
  t.bytes = sizeof data;
  CHECK(bgl_msg_accept(s, unknown, &t) == BGL_MSG_ERR_ARG);
  CHECK(strstr(bgl_msg_last_error(), "not waiting for a buffer") != NULL);
  CHECK(bgl_msg_accept(s, unknown, NULL) == BGL_MSG_ERR_ARG);
  CHECK(bgl_msg_register(s, 64, on_arrival, NULL) == BGL_MSG_ERR_ARG);
  CHECK(bgl_msg_register(s, 5, NULL, NULL) == BGL_MSG_ERR_ARG);
  int xyzt[4];
  CHECK(bgl_msg_coords(s, size, xyzt) == BGL_MSG_ERR_ARG);
  CHECK(bgl_msg_max_one_packet(0) == 228);
  CHECK(bgl_msg_max_one_packet(129) == 0);
}

int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  const char* how = argc > 1 ? argv[1] : "null";
  bgl_msg_session_t* s = NULL;
  struct file_pm pm;
  memset(&pm, 0, sizeof pm);
  if (strcmp(how, "host_bad_size") == 0 || strcmp(how, "host_bad_rank") == 0) {
    /* One failed start per process (see "reinit"): a host whose process count or rank does not
     * match bglrun's job gets a configuration error that says so. */
    const char* r = getenv("BGL_RANK");
    const char* n = getenv("BGL_SIZE");
    CHECK(r != NULL && n != NULL);
    pm.dir = argc > 2 ? argv[2] : "/nonexistent";
    pm.rank = (unsigned)atoi(r);
    pm.size = (unsigned)atoi(n);
    g_rank = pm.rank;
    bgl_msg_bootstrap_t boot = {&pm, pm.rank, pm.size, file_barrier, file_broadcast};
    const int bad_size = strcmp(how, "host_bad_size") == 0;
    if (bad_size)
      boot.size = pm.size + 1;
    else
      boot.rank = pm.size + pm.rank;
    CHECK(bgl_msg_init(&boot, &s) == BGL_MSG_ERR_CONFIG);
    CHECK(strstr(bgl_msg_last_error(), bad_size
                                           ? "bglrun -np and the host's process count must agree"
                                           : "is outside the job's") != NULL);
    CHECK(pm.calls == 0); /* it did not get as far as a collective */
    printf("c_api: rank %u: %s: ok\n", pm.rank, bgl_msg_last_error());
    return 0;
  }
  if (strcmp(how, "reinit") == 0) {
    /* A second session after the first one was finalized (bglrun's inherited segment descriptor
     * used to be closed by the first). */
    CHECK(bgl_msg_init(NULL, &s) == BGL_MSG_OK);
    g_rank = bgl_msg_rank(s);
    CHECK(bgl_msg_barrier(s) == BGL_MSG_OK);
    bgl_msg_finalize(s);
    s = NULL;
    if (bgl_msg_init(NULL, &s) != BGL_MSG_OK) {
      fprintf(stderr, "CHECK FAILED rank %u: bgl_msg_init after bgl_msg_finalize: %s\n", g_rank,
              bgl_msg_last_error());
      return 1;
    }
    CHECK(bgl_msg_barrier(s) == BGL_MSG_OK);
    bgl_msg_finalize(s);
    printf("c_api: rank %u: second session: ok\n", g_rank);
    return 0;
  }
  if (strcmp(how, "host") == 0) {
    CHECK(argc > 2);
    const char* r = getenv("BGL_RANK");
    const char* n = getenv("BGL_SIZE");
    CHECK(r != NULL && n != NULL);
    pm.dir = argv[2];
    pm.rank = (unsigned)atoi(r);
    pm.size = (unsigned)atoi(n);
    g_rank = pm.rank;
    bgl_msg_bootstrap_t boot;
    boot.context = &pm;
    boot.rank = pm.rank;
    boot.size = pm.size;
    boot.barrier = file_barrier;
    boot.broadcast = file_broadcast;
    /* A bootstrap without callbacks is a configuration error, not a crash. */
    bgl_msg_bootstrap_t broken = boot;
    broken.barrier = NULL;
    CHECK(bgl_msg_init(&broken, &s) == BGL_MSG_ERR_CONFIG);
    CHECK(strstr(bgl_msg_last_error(), "barrier") != NULL);

    CHECK(bgl_msg_init(&boot, &s) == BGL_MSG_OK);
    CHECK(pm.calls > 0); /* the session used the host's collectives */
  } else {
    CHECK(bgl_msg_init(NULL, NULL) == BGL_MSG_ERR_ARG);
    CHECK(bgl_msg_init(NULL, &s) == BGL_MSG_OK);
  }
  CHECK(s != NULL);
  const unsigned me = bgl_msg_rank(s), size = bgl_msg_size(s);
  g_rank = me;
  CHECK(size >= 2);
  if (pm.dir) CHECK(me == pm.rank && size == pm.size);
  int xyzt[4];
  CHECK(bgl_msg_coords(s, me, xyzt) == BGL_MSG_OK);
  const int mode = bgl_msg_mode(s);
  CHECK(mode >= 0 && mode <= 2);
  CHECK(mode == 2 || xyzt[3] == 0);

  /* Coprocessor work units: only in coprocessor mode. */
  int operands[2] = {40, 2};
  uint32_t ticket = 0;
  int result = 0;
  if (mode == 1) {
    CHECK(bgl_msg_costart(s, unit_add, operands, &ticket) == BGL_MSG_OK);
    CHECK(bgl_msg_cojoin(s, ticket, &result) == BGL_MSG_OK);
    CHECK(result == 42);
  } else {
    CHECK(bgl_msg_costart(s, unit_add, operands, &ticket) == BGL_MSG_ERR_CONFIG);
    CHECK(strstr(bgl_msg_last_error(), "coprocessor mode") != NULL);
  }

  bad_input(s);
  const unsigned last = size - 1;
  if (strcmp(how, "strand") == 0) {
    strand(s, me, last);
    bgl_msg_finalize(s);
    return 0;
  }
  int messages = 0;
  if (me == 0) {
    messages = pingpong(s, last, 1);
    handshake(s, last, 1);
  } else if (me == last) {
    pingpong(s, 0, 0);
    handshake(s, 0, 0);
  }
  CHECK(bgl_msg_barrier(s) == BGL_MSG_OK);
  if (me == 0)
    printf("c_api: %d messages each way, %s bootstrap, mode %d, node (%d,%d,%d): ok\n", messages,
           how, mode, xyzt[0], xyzt[1], xyzt[2]);
  bgl_msg_finalize(s);
  return 0;
}
