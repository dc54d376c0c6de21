/* Ping-pong latency and bandwidth (2 ranks) and ring / collective timings (any number of ranks),
 * built unchanged against Debian's MPICH and against MPICH with the bgl device
 * (tools/mpi_compare.sh runs both).
 *
 *   mpi_bench pingpong [max_bytes]     rank 0 <-> rank 1, 1 B .. max_bytes (default 4 MiB)
 *   mpi_bench bw [max_bytes]           rank 0 -> rank 1 as osu_bw measures it: a window of 64
 *                                      MPI_Isend (one buffer) against 64 MPI_Irecv, then a 4-byte
 *                                      reply; the time per message = window time / 64
 *   mpi_bench ring [bytes]             a token around all ranks
 *   mpi_bench coll [max_bytes]         allreduce, bcast, allgather, alltoall, barrier
 *   mpi_bench pack [max_bytes]         MPI_Pack of a strided vector and of an indexed type
 *                                      (the datatype engine: dataloop here, yaksa in Debian's)
 *   mpi_bench idle [calls]             the cost of one MPI_Test / MPI_Iprobe that finds nothing
 *                                      (any number of ranks >= 2), timed in batches of `calls`
 *                                      (default 100); rows test/1k and iprobe/1k give the time
 *                                      of 1000 calls (in us, i.e. ns per call)
 *
 * Each measurement repeats for about BENCH_TIME seconds (default 0.3; at least 5 times) and
 * reports the minimum and the median (P50) of the single-operation times (each the slowest rank's
 * time for that iteration), and for
 * the ping-pong one-way latency = round trip / 2 and bandwidth = bytes / one-way P50 time; for bw
 * the time per message of a window and bandwidth = bytes / that P50 time.
 * Collective sizes go 8 B, 64 B, ... (x8) up to max_bytes; allgather and alltoall stop where one
 * rank's buffers would exceed 16 MiB (64 ranks: 256 KiB blocks) so that 64 ranks fit in memory.
 * Output: one line per measurement,
 *   <test> <bytes> <min_us> <p50_us> <mean_us> <MB/s> <iterations>
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Every buffer: a 4 MiB ping-pong, bcast/allreduce up to max, allgather/alltoall up to 16 MiB
 * (bytes x ranks), packing up to 8 MiB of sparse source. */
enum { BUFFER_BYTES = 32 << 20 };

static int rank, size;
static double budget = 0.3;

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

/* Number of repetitions for an operation that takes `t` seconds (rank 0's view), agreed by all
 * ranks. */
static int repetitions(double t) {
  MPI_Bcast(&t, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  int n = t > 0 ? (int)(budget / t) : 100000;
  if (n < 5) n = 5;
  if (n > 100000) n = 100000;
  MPI_Bcast(&n, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return n;
}

/* Collective: iteration i's time is the slowest rank's (a broadcast root or an eager sender
 * returns long before the operation is over; the last rank to finish defines it). */
static void report(const char* test, size_t bytes, double* t, int n, double scale) {
  MPI_Reduce(rank == 0 ? MPI_IN_PLACE : t, t, n, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  if (rank != 0) return;
  double sum = 0;
  for (int i = 0; i < n; i++)
    sum += t[i];
  qsort(t, n, sizeof(double), cmp_double);
  double p50 = t[n / 2] * scale, mean = sum / n * scale, min = t[0] * scale;
  double mbs = p50 > 0 ? bytes / p50 / 1e6 : 0;
  printf("%-10s %9zu %12.2f %12.2f %12.2f %10.1f %7d\n", test, bytes, min * 1e6, p50 * 1e6,
         mean * 1e6, mbs, n);
  fflush(stdout);
}

/* One operation of a measurement, on `bytes` bytes. */
typedef void (*op_fn)(size_t bytes);

/* Times `op`: `warmups` untimed-for-the-report runs (their median sets the repetition count, see
 * repetitions()), then the timed repetitions; `sync` puts a barrier before each warm-up so that
 * every rank starts it together (collectives), which ping-pongs do not need. */
static void measure(const char* test, size_t bytes, op_fn op, int warmups, int sync, double scale) {
  static double t[100000];
  double w[10];
  for (int i = 0; i < warmups; i++) {
    if (sync) MPI_Barrier(MPI_COMM_WORLD);
    double s = MPI_Wtime();
    op(bytes);
    w[i] = MPI_Wtime() - s;
  }
  qsort(w, warmups, sizeof(double), cmp_double);
  int n = repetitions(w[warmups / 2]);
  if (sync) MPI_Barrier(MPI_COMM_WORLD);
  for (int i = 0; i < n; i++) {
    double s = MPI_Wtime();
    op(bytes);
    t[i] = MPI_Wtime() - s;
  }
  report(test, bytes, t, n, scale);
}

/* Sizes 1 B (or `first`) .. max, multiplied by `step`, always ending at max. */
static size_t next_size(size_t bytes, size_t max, size_t step) {
  if (bytes == max) return 0;
  return bytes * step > max ? max : bytes * step;
}

static char *buf_a, *buf_b;

static void pingpong_once(size_t bytes) {
  if (rank == 0) {
    MPI_Send(buf_a, (int)bytes, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
    MPI_Recv(buf_a, (int)bytes, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  } else if (rank == 1) {
    MPI_Recv(buf_a, (int)bytes, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Send(buf_a, (int)bytes, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
  }
}

static void pingpong(size_t max) {
  for (size_t bytes = 1; bytes; bytes = next_size(bytes, max, 2))
    measure("pingpong", bytes, pingpong_once, 10, 0, 0.5);
}

enum { BW_WINDOW = 64 };

static void bw_once(size_t bytes) {
  MPI_Request req[BW_WINDOW];
  if (rank == 0) {
    for (int i = 0; i < BW_WINDOW; i++)
      MPI_Isend(buf_a, (int)bytes, MPI_BYTE, 1, 1, MPI_COMM_WORLD, &req[i]);
    MPI_Waitall(BW_WINDOW, req, MPI_STATUSES_IGNORE);
    MPI_Recv(buf_b, 4, MPI_BYTE, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  } else if (rank == 1) {
    for (int i = 0; i < BW_WINDOW; i++)
      MPI_Irecv(buf_a, (int)bytes, MPI_BYTE, 0, 1, MPI_COMM_WORLD, &req[i]);
    MPI_Waitall(BW_WINDOW, req, MPI_STATUSES_IGNORE);
    MPI_Send(buf_b, 4, MPI_BYTE, 0, 2, MPI_COMM_WORLD);
  }
}

static void bw(size_t max) {
  for (size_t bytes = 1; bytes; bytes = next_size(bytes, max, 2))
    measure("bw", bytes, bw_once, 10, 0, 1.0 / BW_WINDOW);
}

static void ring_once(size_t bytes) {
  int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  if (rank == 0) {
    MPI_Send(buf_a, (int)bytes, MPI_BYTE, next, 0, MPI_COMM_WORLD);
    MPI_Recv(buf_a, (int)bytes, MPI_BYTE, prev, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  } else {
    MPI_Recv(buf_a, (int)bytes, MPI_BYTE, prev, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Send(buf_a, (int)bytes, MPI_BYTE, next, 0, MPI_COMM_WORLD);
  }
}

static void ring(size_t bytes) {
  measure("ring/hop", bytes, ring_once, 5, 1, 1.0 / size);
}

static void allreduce_once(size_t bytes) {
  MPI_Allreduce(buf_a, buf_b, (int)(bytes / sizeof(double)), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
}
static void bcast_once(size_t bytes) {
  MPI_Bcast(buf_a, (int)bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
}
static void allgather_once(size_t bytes) {
  MPI_Allgather(buf_a, (int)bytes, MPI_BYTE, buf_b, (int)bytes, MPI_BYTE, MPI_COMM_WORLD);
}
static void alltoall_once(size_t bytes) {
  MPI_Alltoall(buf_a, (int)bytes, MPI_BYTE, buf_b, (int)bytes, MPI_BYTE, MPI_COMM_WORLD);
}
static void barrier_once(size_t bytes) {
  (void)bytes;
  MPI_Barrier(MPI_COMM_WORLD);
}

static void coll(size_t max) {
  static const struct {
    const char* name;
    op_fn op;
    int per_rank; /* the buffers hold bytes x ranks */
  } ops[] = {{"allreduce", allreduce_once, 0},
             {"bcast", bcast_once, 0},
             {"allgather", allgather_once, 1},
             {"alltoall", alltoall_once, 1}};
  /* BENCH_OPS=alltoall,barrier: only these (default: all). */
  const char* only = getenv("BENCH_OPS");
  for (size_t k = 0; k < sizeof(ops) / sizeof(ops[0]); k++)
    for (size_t bytes = 8; bytes && (!only || strstr(only, ops[k].name));
         bytes = next_size(bytes, max, 8)) {
      if (ops[k].per_rank && bytes * size > BUFFER_BYTES) break;
      measure(ops[k].name, bytes, ops[k].op, 5, 1, 1.0);
    }
  if (!only || strstr(only, "barrier")) measure("barrier", 0, barrier_once, 5, 1, 1.0);
}

/* The datatype engine alone: MPI_Pack of a strided vector (every other double) and of an
 * irregular indexed type (blocks of 1..4 doubles, gaps of 1..3), `bytes` of packed data. */
static MPI_Datatype pack_type;
static void pack_once(size_t bytes) {
  int position = 0, count = 1;
  (void)bytes;
  MPI_Pack(buf_a, count, pack_type, buf_b, BUFFER_BYTES, &position, MPI_COMM_SELF);
}

static void pack(size_t max) {
  for (int irregular = 0; irregular <= 1; irregular++)
    for (size_t bytes = 64; bytes; bytes = next_size(bytes, max, 8)) {
      int n = (int)(bytes / sizeof(double));
      if (irregular) {
        int blocks = 0, len[4096], disp[4096], at = 0, left = n;
        while (left > 0 && blocks < 4096) {
          len[blocks] = 1 + blocks % 4 < left ? 1 + blocks % 4 : left;
          disp[blocks] = at;
          at += len[blocks] + 1 + blocks % 3;
          left -= len[blocks++];
        }
        if (left > 0) break; /* more blocks than the table: stop at this size */
        MPI_Type_indexed(blocks, len, disp, MPI_DOUBLE, &pack_type);
      } else {
        MPI_Type_vector(n, 1, 2, MPI_DOUBLE, &pack_type);
      }
      MPI_Type_commit(&pack_type);
      measure(irregular ? "pack/idx" : "pack/vec", bytes, pack_once, 5, 0, 1.0);
      MPI_Type_free(&pack_type);
    }
}

/* Idle polling: every rank has posted a receive from its right neighbour that is not sent until
 * the end, and each operation is a batch of calls that find nothing (what an application that
 * overlaps computation with MPI_Test pays per call). */
static MPI_Request idle_req;
static size_t idle_calls;
static void test_batch(size_t bytes) {
  int flag = 0;
  (void)bytes;
  for (size_t i = 0; i < idle_calls; i++)
    MPI_Test(&idle_req, &flag, MPI_STATUS_IGNORE);
  if (flag) fprintf(stderr, "mpi_bench idle: rank %d: the receive completed early\n", rank);
}
static void iprobe_batch(size_t bytes) {
  int flag = 0;
  (void)bytes;
  for (size_t i = 0; i < idle_calls; i++)
    MPI_Iprobe(MPI_ANY_SOURCE, 2, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
  if (flag) fprintf(stderr, "mpi_bench idle: rank %d: MPI_Iprobe found a message\n", rank);
}

static void idle(size_t calls) {
  int token = 0;
  idle_calls = calls;
  MPI_Irecv(&token, 1, MPI_INT, (rank + 1) % size, 1, MPI_COMM_WORLD, &idle_req);
  measure("test/1k", 0, test_batch, 5, 1, 1000.0 / (double)calls);
  measure("iprobe/1k", 0, iprobe_batch, 5, 1, 1000.0 / (double)calls);
  MPI_Send(&token, 1, MPI_INT, (rank + size - 1) % size, 1, MPI_COMM_WORLD);
  MPI_Wait(&idle_req, MPI_STATUS_IGNORE);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (getenv("BENCH_TIME")) budget = atof(getenv("BENCH_TIME"));
  const char* what = argc > 1 ? argv[1] : "pingpong";
  size_t arg = argc > 2 ? (size_t)atol(argv[2]) : 0;
  buf_a = calloc(BUFFER_BYTES, 1);
  buf_b = calloc(BUFFER_BYTES, 1);
  if (rank == 0)
    printf("# %s, %d ranks; test bytes min_us p50_us mean_us MB/s iterations\n", what, size);
  if (!strcmp(what, "pingpong"))
    pingpong(arg ? arg : 4 << 20);
  else if (!strcmp(what, "bw"))
    bw(arg ? arg : 4 << 20);
  else if (!strcmp(what, "ring"))
    ring(arg ? arg : 8);
  else if (!strcmp(what, "pack"))
    pack(arg ? arg : 1 << 20);
  else if (!strcmp(what, "idle"))
    idle(arg ? arg : 100);
  else
    coll(arg ? arg : 1 << 20);
  free(buf_a);
  free(buf_b);
  MPI_Finalize();
  return 0;
}
