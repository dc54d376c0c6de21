/* Point-to-point over the bgl device: every protocol by size (0 B .. 8 MiB: one-packet, eager,
 * rendezvous), wildcards, probe, unexpected messages (eager in the layer's pool, rendezvous held
 * back), synchronous sends, matched probes, cancelled receives, order across protocols,
 * non-contiguous datatypes (iovec and pack paths, both sides), truncation, Isend/Irecv/Waitall
 * storms, and a flood of small sends into a rank that is not receiving yet (injected sends that
 * must wait for room, in order with larger ones). Any number of ranks >= 2. */
#include <unistd.h>

#include "mpitest.h"

static const size_t sizes[] = {
    0,   1,    7,    8,     100,   179,   180,   181,   200,    216,     217,           228,    229,
    240, 1000, 4096, 16383, 16384, 16385, 65536, 65537, 100000, 1 << 20, (1 << 20) + 3, 8 << 20};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

/* Ping-pong of every size between rank 0 and every other rank, checking the data both ways. */
static void pingpong(void) {
  size_t max = sizes[NSIZES - 1];
  unsigned char* buf = malloc(max);
  for (int peer = 1; peer < mt_size; peer++) {
    for (size_t i = 0; i < NSIZES; i++) {
      size_t n = sizes[i];
      MPI_Status st;
      int count;
      if (mt_rank == 0) {
        mt_fill(buf, n, i);
        MPI_Send(buf, (int)n, MPI_BYTE, peer, (int)i, MPI_COMM_WORLD);
        memset(buf, 0, n);
        MPI_Recv(buf, (int)max, MPI_BYTE, peer, (int)i, MPI_COMM_WORLD, &st);
        MPI_Get_count(&st, MPI_BYTE, &count);
        MT_CHECK((size_t)count == n, "pong of %zu bytes from %d has %d", n, peer, count);
        MT_CHECK(mt_verify(buf, n, i + 1000) == 0, "pong of %zu bytes from %d corrupt at %zu", n,
                 peer, mt_verify(buf, n, i + 1000));
      } else if (mt_rank == peer) {
        memset(buf, 0, n);
        MPI_Recv(buf, (int)max, MPI_BYTE, 0, (int)i, MPI_COMM_WORLD, &st);
        MPI_Get_count(&st, MPI_BYTE, &count);
        MT_CHECK((size_t)count == n, "ping of %zu bytes has %d", n, count);
        MT_CHECK(mt_verify(buf, n, i) == 0, "ping of %zu bytes corrupt at %zu", n,
                 mt_verify(buf, n, i));
        mt_fill(buf, n, i + 1000);
        MPI_Send(buf, (int)n, MPI_BYTE, 0, (int)i, MPI_COMM_WORLD);
      }
    }
  }
  free(buf);
}

/* Every rank sends one message of each size to rank 0, which receives them with MPI_ANY_SOURCE
 * and MPI_ANY_TAG after probing each. */
static void wildcards(void) {
  const size_t n_small = 5;
  static const size_t wsizes[] = {0, 150, 3000, 20000, 300000};
  unsigned char* buf = malloc(300000);
  if (mt_rank != 0) {
    MPI_Request req[5];
    unsigned char* out[5];
    for (size_t i = 0; i < n_small; i++) {
      out[i] = malloc(wsizes[i] + 1);
      mt_fill(out[i], wsizes[i], 100 * mt_rank + i);
      MPI_Isend(out[i], (int)wsizes[i], MPI_BYTE, 0, (int)(10 * mt_rank + i), MPI_COMM_WORLD,
                &req[i]);
    }
    MPI_Waitall((int)n_small, req, MPI_STATUSES_IGNORE);
    for (size_t i = 0; i < n_small; i++)
      free(out[i]);
  } else {
    int expected = (mt_size - 1) * (int)n_small;
    int* next = calloc(mt_size, sizeof(int));
    for (int k = 0; k < expected; k++) {
      MPI_Status st;
      int count;
      MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
      MPI_Get_count(&st, MPI_BYTE, &count);
      int src = st.MPI_SOURCE, tag = st.MPI_TAG;
      int idx = tag - 10 * src;
      MT_CHECK(idx >= 0 && idx < (int)n_small, "tag %d from %d", tag, src);
      if (idx < 0 || idx >= (int)n_small) break;
      MT_CHECK(idx == next[src], "message %d from %d overtook message %d", idx, src, next[src]);
      next[src] = idx + 1;
      MT_CHECK((size_t)count == wsizes[idx], "probe count %d, expected %zu", count, wsizes[idx]);
      MPI_Recv(buf, count, MPI_BYTE, MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &st);
      MT_CHECK(st.MPI_SOURCE == src, "received from %d after probing %d", st.MPI_SOURCE, src);
      MT_CHECK(mt_verify(buf, wsizes[idx], 100 * src + idx) == 0,
               "wildcard message %d from %d corrupt", idx, src);
    }
    free(next);
  }
  free(buf);
}

/* Rank 1 sends messages of every size before rank 0 posts anything (unexpected: eager in the
 * layer's pool, rendezvous waiting), then rank 0 receives them in reverse tag order. */
static void unexpected(void) {
  if (mt_size < 2) return;
  const int n = (int)NSIZES;
  MPI_Request* req = malloc(n * sizeof(MPI_Request));
  unsigned char** bufs = malloc(n * sizeof(unsigned char*));
  for (int i = 0; i < n; i++)
    bufs[i] = malloc(sizes[i] + 1);
  if (mt_rank == 1) {
    for (int i = 0; i < n; i++) {
      mt_fill(bufs[i], sizes[i], 7000 + i);
      MPI_Isend(bufs[i], (int)sizes[i], MPI_BYTE, 0, i, MPI_COMM_WORLD, &req[i]);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Waitall(n, req, MPI_STATUSES_IGNORE);
  } else {
    MPI_Barrier(MPI_COMM_WORLD);
    if (mt_rank == 0) {
      /* Give the eager data time to arrive into the pool first. */
      double t = MPI_Wtime();
      while (MPI_Wtime() - t < 0.05) {
        int flag;
        MPI_Iprobe(1, n - 1, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
      }
      for (int i = n - 1; i >= 0; i--)
        MPI_Irecv(bufs[i], (int)sizes[i], MPI_BYTE, 1, i, MPI_COMM_WORLD, &req[i]);
      MPI_Status* st = malloc(n * sizeof(MPI_Status));
      MPI_Waitall(n, req, st);
      for (int i = 0; i < n; i++) {
        int count;
        MPI_Get_count(&st[i], MPI_BYTE, &count);
        MT_CHECK((size_t)count == sizes[i], "unexpected %zu bytes: count %d", sizes[i], count);
        MT_CHECK(mt_verify(bufs[i], sizes[i], 7000 + i) == 0, "unexpected %zu bytes corrupt at %zu",
                 sizes[i], mt_verify(bufs[i], sizes[i], 7000 + i));
      }
      free(st);
    }
  }
  for (int i = 0; i < n; i++)
    free(bufs[i]);
  free(bufs);
  free(req);
}

/* Ssend completes only once the receive matched: rank 1 waits until the message (or its
 * rendezvous request) is there, so rank 0 is inside MPI_Ssend, then posts the receive 30 ms
 * later. However late either rank is scheduled, the Ssend lasts at least those 30 ms. */
static void synchronous(void) {
  if (mt_size < 2 || mt_rank > 1) return;
  static const size_t ssizes[] = {0, 64, 5000, 200000};
  unsigned char* buf = malloc(200000);
  for (size_t i = 0; i < 4; i++) {
    if (mt_rank == 0) {
      mt_fill(buf, ssizes[i], 50 + i);
      double t0 = MPI_Wtime();
      MPI_Ssend(buf, (int)ssizes[i], MPI_BYTE, 1, 5, MPI_COMM_WORLD);
      double waited = MPI_Wtime() - t0;
      MT_CHECK(waited > 0.015,
               "Ssend of %zu bytes returned after %.3f s, before the "
               "receive was posted",
               ssizes[i], waited);
    } else {
      int arrived = 0;
      while (!arrived)
        MPI_Iprobe(0, 5, MPI_COMM_WORLD, &arrived, MPI_STATUS_IGNORE);
      double t0 = MPI_Wtime();
      while (MPI_Wtime() - t0 < 0.03) {
        int flag;
        MPI_Iprobe(0, 5, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
      }
      MPI_Recv(buf, (int)ssizes[i], MPI_BYTE, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MT_CHECK(mt_verify(buf, ssizes[i], 50 + i) == 0, "Ssend data corrupt");
    }
  }
  free(buf);
}

/* Matched probes, cancels and order across protocols. Rank 1 sends, before rank 0 looks, a
 * message in every protocol under one tag each (0 B, one packet, eager, rendezvous) and an
 * Issend; rank 0 takes them with MPI_Mprobe in the order sent, MPI_Mrecv's them in the reverse
 * order, and the Issend is not complete before rank 0 touched it. Then two receives posted before
 * their messages, a large one first, take the messages in the order posted, and receives that no
 * message matches are cancelled. */
static void probes_and_cancels(void) {
  MPI_Comm pair;
  MPI_Comm_split(MPI_COMM_WORLD, mt_rank <= 1 ? 0 : MPI_UNDEFINED, mt_rank, &pair);
  if (mt_rank > 1) return;
  static const size_t psizes[] = {0, 100, 5000, 300000, 64};
  enum { N = 5 };
  unsigned char* bufs[N];
  for (int i = 0; i < N; i++)
    bufs[i] = malloc(psizes[i] + 1);
  if (mt_rank == 1) {
    MPI_Request req[N];
    for (int i = 0; i < N; i++) {
      mt_fill(bufs[i], psizes[i], 900 + i);
      if (i == N - 1)
        MPI_Issend(bufs[i], (int)psizes[i], MPI_BYTE, 0, 20 + i, pair, &req[i]);
      else
        MPI_Isend(bufs[i], (int)psizes[i], MPI_BYTE, 0, 20 + i, pair, &req[i]);
    }
    MPI_Barrier(pair);
    int done = 0;
    double t0 = MPI_Wtime();
    while (!done && MPI_Wtime() - t0 < 0.02)
      MPI_Test(&req[N - 1], &done, MPI_STATUS_IGNORE);
    MT_CHECK(!done, "an Issend completed before its receiver looked at it");
    MPI_Barrier(pair);
    MPI_Waitall(N, req, MPI_STATUSES_IGNORE);
  } else {
    MPI_Barrier(pair);
    MPI_Barrier(pair);
    MPI_Message msg[N];
    for (int i = 0; i < N; i++) {
      MPI_Status st;
      int count;
      MPI_Mprobe(1, MPI_ANY_TAG, pair, &msg[i], &st);
      MPI_Get_count(&st, MPI_BYTE, &count);
      MT_CHECK(st.MPI_TAG == 20 + i, "mprobe %d found tag %d: a message overtook", i, st.MPI_TAG);
      MT_CHECK((size_t)count == psizes[i], "mprobe %d: count %d, expected %zu", i, count,
               psizes[i]);
    }
    int flag = 1;
    MPI_Iprobe(1, MPI_ANY_TAG, pair, &flag, MPI_STATUS_IGNORE);
    MT_CHECK(!flag, "a message mprobed is still found by MPI_Iprobe");
    for (int i = N - 1; i >= 0; i--) {
      MPI_Status st;
      int count;
      MPI_Mrecv(bufs[i], (int)psizes[i], MPI_BYTE, &msg[i], &st);
      MPI_Get_count(&st, MPI_BYTE, &count);
      MT_CHECK((size_t)count == psizes[i] && st.MPI_SOURCE == 1 && st.MPI_TAG == 20 + i,
               "mrecv %d: count %d source %d tag %d", i, count, st.MPI_SOURCE, st.MPI_TAG);
      MT_CHECK(mt_verify(bufs[i], psizes[i], 900 + i) == 0, "mrecv %d corrupt", i);
    }
  }

  /* Posted first: a rendezvous, then a one-packet message under the same tag. */
  if (mt_rank == 0) {
    MPI_Request req[2];
    MPI_Status st[2];
    MPI_Irecv(bufs[3], (int)psizes[3], MPI_BYTE, MPI_ANY_SOURCE, 30, pair, &req[0]);
    MPI_Irecv(bufs[1], (int)psizes[1], MPI_BYTE, 1, MPI_ANY_TAG, pair, &req[1]);
    MPI_Barrier(pair);
    MPI_Waitall(2, req, st);
    int c0, c1;
    MPI_Get_count(&st[0], MPI_BYTE, &c0);
    MPI_Get_count(&st[1], MPI_BYTE, &c1);
    MT_CHECK((size_t)c0 == psizes[3] && mt_verify(bufs[3], psizes[3], 950) == 0,
             "the first receive posted got %d bytes, not the first message", c0);
    MT_CHECK(
        (size_t)c1 == psizes[1] && st[1].MPI_TAG == 30 && mt_verify(bufs[1], psizes[1], 951) == 0,
        "the second receive posted got %d bytes tag %d", c1, st[1].MPI_TAG);
  } else {
    mt_fill(bufs[3], psizes[3], 950);
    mt_fill(bufs[1], psizes[1], 951);
    MPI_Barrier(pair);
    MPI_Send(bufs[3], (int)psizes[3], MPI_BYTE, 0, 30, pair);
    MPI_Send(bufs[1], (int)psizes[1], MPI_BYTE, 0, 30, pair);
  }

  /* Nothing matches these: both are cancelled, and the message sent after the cancels goes to
   * the receive posted after them. */
  if (mt_rank == 0) {
    MPI_Request req[2];
    MPI_Irecv(bufs[2], 10, MPI_BYTE, 1, 77, pair, &req[0]);
    MPI_Irecv(bufs[2], 10, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, pair, &req[1]);
    for (int i = 0; i < 2; i++) {
      MPI_Status st;
      int cancelled = 0;
      MPI_Cancel(&req[i]);
      MPI_Wait(&req[i], &st);
      MPI_Test_cancelled(&st, &cancelled);
      MT_CHECK(cancelled, "receive %d was not cancelled", i);
    }
    MPI_Barrier(pair);
    MPI_Status st;
    MPI_Recv(bufs[2], (int)psizes[2], MPI_BYTE, 1, MPI_ANY_TAG, pair, &st);
    MT_CHECK(st.MPI_TAG == 78 && mt_verify(bufs[2], psizes[2], 960) == 0,
             "the message after the cancels: tag %d", st.MPI_TAG);
  } else {
    mt_fill(bufs[2], psizes[2], 960);
    MPI_Barrier(pair);
    MPI_Send(bufs[2], (int)psizes[2], MPI_BYTE, 0, 78, pair);
  }
  MPI_Comm_free(&pair);
  for (int i = 0; i < N; i++)
    free(bufs[i]);
}

/* Vector and indexed datatypes, few and many pieces, on the sending side, the receiving side and
 * both, between ranks 0 and 1, checked against a contiguous reference. */
static void datatypes(void) {
  if (mt_size < 2 || mt_rank > 1) return;
  struct {
    int count, blocklen, stride;
  } shapes[] = {{1, 1, 2},    {10, 3, 5},        {60, 100, 150},
                {5000, 2, 3}, {100, 5000, 5001}, {200000, 4, 6}};
  for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
    int count = shapes[s].count, bl = shapes[s].blocklen, stride = shapes[s].stride;
    MPI_Datatype vec, idx;
    MPI_Type_vector(count, bl, stride, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    int *displs = malloc(count * sizeof(int)), *lens = malloc(count * sizeof(int));
    for (int i = 0; i < count; i++) {
      displs[i] = i * stride + (i % 2);
      lens[i] = bl - (i % 2 && bl > 1 ? 1 : 0);
    }
    MPI_Type_indexed(count, lens, displs, MPI_INT, &idx);
    MPI_Type_commit(&idx);
    size_t extent_ints = (size_t)count * stride + 2;
    int* sparse = malloc(extent_ints * sizeof(int));
    int n_vec = count * bl, n_idx = 0;
    for (int i = 0; i < count; i++)
      n_idx += lens[i];
    int* dense = malloc((size_t)n_vec * sizeof(int));

    for (int mode = 0; mode < 4; mode++) {
      /* mode 0: vector -> contig, 1: contig -> vector, 2: vector -> vector,
       * 3: indexed -> indexed */
      MPI_Datatype type = mode == 3 ? idx : vec;
      int n = mode == 3 ? n_idx : n_vec;
      if (mt_rank == 0) {
        for (size_t i = 0; i < extent_ints; i++)
          sparse[i] = (int)(i * 7 + s * 13 + mode);
        if (mode == 1) {
          /* the values the vector would carry */
          for (int b = 0, k = 0; b < count; b++)
            for (int j = 0; j < bl; j++)
              dense[k++] = sparse[b * stride + j];
          MPI_Send(dense, n, MPI_INT, 1, mode, MPI_COMM_WORLD);
        } else {
          MPI_Send(sparse, 1, type, 1, mode, MPI_COMM_WORLD);
        }
      } else {
        for (size_t i = 0; i < extent_ints; i++)
          sparse[i] = -1;
        MPI_Status st;
        int got;
        if (mode == 0) {
          MPI_Recv(dense, n, MPI_INT, 0, mode, MPI_COMM_WORLD, &st);
          MPI_Get_count(&st, MPI_INT, &got);
          MT_CHECK(got == n, "vector->contig count %d of %d", got, n);
          for (int b = 0, k = 0; b < count; b++)
            for (int j = 0; j < bl; j++, k++) {
              int want = (int)((b * stride + j) * 7 + s * 13 + mode);
              if (dense[k] != want) {
                MT_CHECK(0, "shape %zu vector->contig element %d: %d != %d", s, k, dense[k], want);
                b = count;
                break;
              }
            }
        } else {
          MPI_Recv(sparse, 1, type, 0, mode, MPI_COMM_WORLD, &st);
          MPI_Get_count(&st, MPI_INT, &got);
          MT_CHECK(got == n, "mode %d count %d of %d", mode, got, n);
          int bad = 0;
          for (int b = 0; b < count && !bad; b++) {
            int start = mode == 3 ? displs[b] : b * stride;
            int len = mode == 3 ? lens[b] : bl;
            for (int j = 0; j < len; j++) {
              int at = start + j;
              int want = (int)(at * 7 + s * 13 + mode);
              if (sparse[at] != want) {
                MT_CHECK(0, "shape %zu mode %d element %d: %d != %d", s, mode, at, sparse[at],
                         want);
                bad = 1;
                break;
              }
            }
            /* holes stay untouched */
            int hole = start + len;
            int next = b + 1 < count ? (mode == 3 ? displs[b + 1] : (b + 1) * stride) : hole;
            for (int h = hole; h < next && !bad; h++)
              if (sparse[h] != -1) {
                MT_CHECK(0, "shape %zu mode %d hole %d written", s, mode, h);
                bad = 1;
              }
          }
        }
      }
    }
    free(sparse);
    free(dense);
    free(displs);
    free(lens);
    MPI_Type_free(&vec);
    MPI_Type_free(&idx);
  }
}

/* A receive buffer too small for the message: MPI_ERR_TRUNCATE, the part that fits delivered. */
static void truncation(void) {
  if (mt_size < 2 || mt_rank > 1) return;
  static const size_t tsizes[] = {100, 20000, 500000};
  unsigned char* buf = malloc(500000);
  for (size_t i = 0; i < 3; i++) {
    size_t n = tsizes[i];
    if (mt_rank == 0) {
      mt_fill(buf, n, 300 + i);
      MPI_Send(buf, (int)n, MPI_BYTE, 1, 9, MPI_COMM_WORLD);
    } else {
      MPI_Status st;
      memset(buf, 0, n);
      int rc = MPI_Recv(buf, (int)(n / 2), MPI_BYTE, 0, 9, MPI_COMM_WORLD, &st);
      int cls;
      MPI_Error_class(rc, &cls);
      MT_CHECK(cls == MPI_ERR_TRUNCATE, "truncated receive of %zu bytes: error class %d", n, cls);
      MT_CHECK(mt_verify(buf, n / 2, 300 + i) == 0, "truncated data corrupt");
      MT_CHECK(buf[n / 2] == 0, "data beyond the receive buffer");
    }
  }
  free(buf);
}

/* Storm: every rank exchanges many messages of mixed sizes with every other rank at once. */
static void storm(void) {
  const int per_peer = 40;
  int n = (mt_size - 1) * per_peer;
  MPI_Request* req = malloc(2 * n * sizeof(MPI_Request));
  unsigned char **sbuf = malloc(n * sizeof(void*)), **rbuf = malloc(n * sizeof(void*));
  size_t* len = malloc(n * sizeof(size_t));
  int k = 0;
  for (int round = 0; round < 3; round++) {
    k = 0;
    for (int p = 0; p < mt_size; p++) {
      if (p == mt_rank) continue;
      for (int m = 0; m < per_peer; m++, k++) {
        size_t sz = (size_t)((m * 7919 + round * 31) % 5 == 0 ? 70000 : (m * 977) % 9000);
        len[k] = sz;
        rbuf[k] = malloc(sz + 1);
        sbuf[k] = malloc(sz + 1);
        mt_fill(sbuf[k], sz, ((uint64_t)mt_rank << 32) + (p << 16) + m + round);
        MPI_Irecv(rbuf[k], (int)sz, MPI_BYTE, p, m, MPI_COMM_WORLD, &req[2 * k]);
      }
    }
    k = 0;
    for (int p = 0; p < mt_size; p++) {
      if (p == mt_rank) continue;
      for (int m = 0; m < per_peer; m++, k++)
        MPI_Isend(sbuf[k], (int)len[k], MPI_BYTE, p, m, MPI_COMM_WORLD, &req[2 * k + 1]);
    }
    MPI_Waitall(2 * n, req, MPI_STATUSES_IGNORE);
    k = 0;
    for (int p = 0; p < mt_size; p++) {
      if (p == mt_rank) continue;
      for (int m = 0; m < per_peer; m++, k++) {
        MT_CHECK(mt_verify(rbuf[k], len[k], ((uint64_t)p << 32) + (mt_rank << 16) + m + round) == 0,
                 "storm message %d from %d corrupt", m, p);
        free(rbuf[k]);
        free(sbuf[k]);
      }
    }
  }
  free(req);
  free(sbuf);
  free(rbuf);
  free(len);
}

/* Every other rank sends rank 0 a flood of small messages (injected sends: contiguous, at most 216
 * bytes) with an occasional larger one (MPIDIG's path) while rank 0 is still asleep: the 64-packet
 * reception FIFO and the injection FIFOs fill, so sends wait in the layer and complete later. Rank
 * 0 then receives them from each source in order and checks every byte. */
static void flood(void) {
  enum { kMessages = 3000, kTag = 77 };
  const size_t max = 20000;
  unsigned char* buf = malloc(max);
  MT_CHECK(buf != NULL, "no memory");
  if (mt_rank != 0) {
    MPI_Request* req = malloc(kMessages * sizeof(MPI_Request));
    unsigned char** out = malloc(kMessages * sizeof(void*));
    for (int m = 0; m < kMessages; m++) {
      const size_t sz = m % 500 == 499 ? 20000 : (size_t)(m * 37) % 218;
      out[m] = malloc(sz + 1);
      mt_fill(out[m], sz, ((uint64_t)mt_rank << 32) + (uint64_t)m);
      if (m % 3 == 0) {
        MPI_Send(out[m], (int)sz, MPI_BYTE, 0, kTag, MPI_COMM_WORLD);
        req[m] = MPI_REQUEST_NULL;
      } else {
        MPI_Isend(out[m], (int)sz, MPI_BYTE, 0, kTag, MPI_COMM_WORLD, &req[m]);
      }
    }
    MPI_Waitall(kMessages, req, MPI_STATUSES_IGNORE);
    for (int m = 0; m < kMessages; m++)
      free(out[m]);
    free(out);
    free(req);
  } else {
    usleep(100000);
    for (int m = 0; m < kMessages; m++) {
      const size_t sz = m % 500 == 499 ? 20000 : (size_t)(m * 37) % 218;
      for (int p = 1; p < mt_size; p++) {
        MPI_Status st;
        int count;
        MPI_Recv(buf, (int)max, MPI_BYTE, p, kTag, MPI_COMM_WORLD, &st);
        MPI_Get_count(&st, MPI_BYTE, &count);
        MT_CHECK((size_t)count == sz, "flood message %d from %d: %d bytes, expected %zu", m, p,
                 count, sz);
        MT_CHECK(mt_verify(buf, sz, ((uint64_t)p << 32) + (uint64_t)m) == 0,
                 "flood message %d from %d corrupt or out of order", m, p);
      }
    }
  }
  free(buf);
}

int main(int argc, char** argv) {
  mt_init(&argc, &argv);
  if (mt_size < 2) {
    fprintf(stderr, "pt2pt needs at least 2 ranks\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  char name[MPI_MAX_PROCESSOR_NAME];
  int len;
  MPI_Get_processor_name(name, &len);
  MT_CHECK(strncmp(name, "BGL <", 5) == 0, "processor name '%s'", name);

  pingpong();
  MPI_Barrier(MPI_COMM_WORLD);
  wildcards();
  MPI_Barrier(MPI_COMM_WORLD);
  unexpected();
  MPI_Barrier(MPI_COMM_WORLD);
  synchronous();
  MPI_Barrier(MPI_COMM_WORLD);
  probes_and_cancels();
  MPI_Barrier(MPI_COMM_WORLD);
  datatypes();
  MPI_Barrier(MPI_COMM_WORLD);
  truncation();
  MPI_Barrier(MPI_COMM_WORLD);
  storm();
  MPI_Barrier(MPI_COMM_WORLD);
  flood();
  return mt_finish("pt2pt");
}
