/* Ping-pong latency and bandwidth (2 ranks) and ring / collective timings (any number of ranks),
 * built unchanged against Debian's MPICH and against MPICH with the bgl device
 * (tools/mpi_compare.sh runs both).
 *
 *   mpi_bench pingpong [max_bytes]     rank 0 <-> rank 1, 1 B .. max_bytes (default 4 MiB)
 *   mpi_bench ring [bytes]             a token around all ranks
 *   mpi_bench coll [max_bytes]         allreduce, bcast, allgather, alltoall, barrier
 *
 * Each measurement repeats for about BENCH_TIME seconds (default 0.3; at least 5 times) and
 * reports the minimum and the median (P50) of the single-operation times (each the slowest rank's
 * time for that iteration), and for
 * the ping-pong one-way latency = round trip / 2 and bandwidth = bytes / one-way P50 time.
 * Collective sizes go 8 B, 64 B, ... (x8) up to max_bytes; allgather and alltoall stop where one
 * rank's buffers would exceed 16 MiB (64 ranks: 256 KiB blocks) so that 64 ranks fit in memory.
 * Output: one line per measurement,
 *   <test> <bytes> <min_us> <p50_us> <mean_us> <MB/s> <iterations>
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static void pingpong(size_t max) {
  char* buf = malloc(max > 0 ? max : 1);
  memset(buf, 1, max);
  double* t = malloc(100000 * sizeof(double));
  for (size_t bytes = 1; bytes <= max; bytes *= 2) {
    double t0 = 0, w[10];
    for (int warm = 0; warm < 10; warm++) {
      t0 = MPI_Wtime();
      if (rank == 0) {
        MPI_Send(buf, (int)bytes, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
        MPI_Recv(buf, (int)bytes, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else if (rank == 1) {
        MPI_Recv(buf, (int)bytes, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(buf, (int)bytes, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
      }
      w[warm] = MPI_Wtime() - t0;
    }
    qsort(w, 10, sizeof(double), cmp_double);
    int n = repetitions(w[5]);
    for (int i = 0; i < n; i++) {
      double s = MPI_Wtime();
      if (rank == 0) {
        MPI_Send(buf, (int)bytes, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
        MPI_Recv(buf, (int)bytes, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else if (rank == 1) {
        MPI_Recv(buf, (int)bytes, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(buf, (int)bytes, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
      }
      t[i] = MPI_Wtime() - s;
    }
    report("pingpong", bytes, t, n, 0.5);
    if (bytes == max) break;
    if (bytes * 2 > max) bytes = max / 2;
  }
  free(t);
  free(buf);
}

static void ring(size_t bytes) {
  char* buf = malloc(bytes > 0 ? bytes : 1);
  double* t = malloc(100000 * sizeof(double));
  int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  double t0 = 0, w[5];
  for (int warm = 0; warm < 5; warm++) {
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    if (rank == 0) {
      MPI_Send(buf, (int)bytes, MPI_BYTE, next, 0, MPI_COMM_WORLD);
      MPI_Recv(buf, (int)bytes, MPI_BYTE, prev, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
      MPI_Recv(buf, (int)bytes, MPI_BYTE, prev, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(buf, (int)bytes, MPI_BYTE, next, 0, MPI_COMM_WORLD);
    }
    w[warm] = MPI_Wtime() - t0;
  }
  qsort(w, 5, sizeof(double), cmp_double);
  int n = repetitions(w[2]);
  for (int i = 0; i < n; i++) {
    double s = MPI_Wtime();
    if (rank == 0) {
      MPI_Send(buf, (int)bytes, MPI_BYTE, next, 0, MPI_COMM_WORLD);
      MPI_Recv(buf, (int)bytes, MPI_BYTE, prev, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
      MPI_Recv(buf, (int)bytes, MPI_BYTE, prev, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(buf, (int)bytes, MPI_BYTE, next, 0, MPI_COMM_WORLD);
    }
    t[i] = MPI_Wtime() - s;
  }
  report("ring/hop", bytes, t, n, 1.0 / size);
  free(t);
  free(buf);
}

enum { ALLREDUCE, BCAST, ALLGATHER, ALLTOALL, BARRIER };
static const char* coll_names[] = {"allreduce", "bcast", "allgather", "alltoall", "barrier"};

static void coll_once(int which, char* a, char* b, size_t bytes) {
  int count = (int)(bytes / sizeof(double));
  switch (which) {
    case ALLREDUCE:
      MPI_Allreduce(a, b, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
      break;
    case BCAST:
      MPI_Bcast(a, (int)bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
      break;
    case ALLGATHER:
      MPI_Allgather(a, (int)bytes, MPI_BYTE, b, (int)bytes, MPI_BYTE, MPI_COMM_WORLD);
      break;
    case ALLTOALL:
      MPI_Alltoall(a, (int)bytes, MPI_BYTE, b, (int)bytes, MPI_BYTE, MPI_COMM_WORLD);
      break;
    default:
      MPI_Barrier(MPI_COMM_WORLD);
  }
}

static void coll(size_t max) {
  /* bcast / allreduce use max bytes, allgather / alltoall at most 16 MiB (bytes x ranks) */
  size_t block = max > 8 ? max : 8, all = block * (size_t)size;
  size_t len = all < (16u << 20) ? all : (16u << 20);
  if (len < block) len = block;
  char *a = calloc(len, 1), *b = calloc(len, 1);
  double* t = malloc(100000 * sizeof(double));
  for (int which = 0; which <= BARRIER; which++) {
    for (size_t bytes = 8; bytes <= max; bytes *= 8) {
      if ((which == ALLGATHER || which == ALLTOALL) && bytes * size > (16u << 20)) break;
      double t0 = 0, w[5];
      for (int warm = 0; warm < 5; warm++) {
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        coll_once(which, a, b, bytes);
        w[warm] = MPI_Wtime() - t0;
      }
      qsort(w, 5, sizeof(double), cmp_double);
      int n = repetitions(w[2]);
      MPI_Barrier(MPI_COMM_WORLD);
      for (int i = 0; i < n; i++) {
        double s = MPI_Wtime();
        coll_once(which, a, b, bytes);
        t[i] = MPI_Wtime() - s;
      }
      report(coll_names[which], which == BARRIER ? 0 : bytes, t, n, 1.0);
      if (which == BARRIER || bytes == max) break;
      if (bytes * 8 > max) bytes = max / 8;
    }
  }
  free(t);
  free(a);
  free(b);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (getenv("BENCH_TIME")) budget = atof(getenv("BENCH_TIME"));
  const char* what = argc > 1 ? argv[1] : "pingpong";
  size_t arg = argc > 2 ? (size_t)atol(argv[2]) : 0;
  if (rank == 0)
    printf("# %s, %d ranks; test bytes min_us p50_us mean_us MB/s iterations\n", what, size);
  if (!strcmp(what, "pingpong"))
    pingpong(arg ? arg : 4 << 20);
  else if (!strcmp(what, "ring"))
    ring(arg ? arg : 8);
  else
    coll(arg ? arg : 1 << 20);
  MPI_Finalize();
  return 0;
}
