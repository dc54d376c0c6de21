/* What one blocking collective costs each task of an oversubscribed job, from the kernel's own
 * accounting: `mpi_wait_cost [CALLS] [OP] [COUNT]` runs CALLS (default 100) x OP, an
 * MPI_Allreduce (sum) of COUNT doubles (default 1; OP "allreduce", the default), an MPI_Barrier
 * ("barrier"), or an MPI_Alltoall or MPI_Allgather of COUNT doubles per rank ("alltoall",
 * "allgather"), after one untimed call, and
 * rank 0 prints the job's mean per task and call of getrusage's voluntary and involuntary context
 * switches and user and system CPU time, and the wall time per call:
 *
 *   wait_cost <op> tasks <N> voluntary_cs <v> involuntary_cs <i> user_us <u> sys_us <s> call_us <w>
 *
 * With many tasks a core, a call in which every task must run costs each at least one wake-up
 * (bench/sched_floor measures the floor); this says how many it took and what they cost.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

static double us(struct timeval t) {
  return t.tv_sec * 1e6 + t.tv_usec;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int calls = argc > 1 ? atoi(argv[1]) : 100;
  const char* op = argc > 2 ? argv[2] : "allreduce";
  const int count = argc > 3 ? atoi(argv[3]) : 1;
  enum { kAllreduce, kBarrier, kAlltoall, kAllgather, kOps } which = kOps;
  const char* names[kOps] = {"allreduce", "barrier", "alltoall", "allgather"};
  for (int i = 0; i < kOps; ++i)
    if (strcmp(op, names[i]) == 0) which = i;
  if (calls < 1 || which == kOps || count < 1) {
    if (rank == 0) {
      fprintf(stderr,
              "usage: mpi_wait_cost [CALLS >= 1] [allreduce|barrier|alltoall|allgather] "
              "[COUNT >= 1]\n");
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Barrier(MPI_COMM_WORLD); /* until rank 0's abort ends the job */
  }
  /* COUNT doubles to and from each rank; block r of `out` holds rank * size + r */
  const size_t n = (size_t)size * (size_t)count;
  double* out = malloc(sizeof(double) * n);
  double* in = malloc(sizeof(double) * n);
  double* x = malloc(sizeof(double) * (size_t)count);
  double* sum = malloc(sizeof(double) * (size_t)count);
  for (size_t i = 0; i < n; ++i)
    out[i] = rank * (double)size + (double)(i / (size_t)count);
  for (int i = 0; i < count; ++i)
    x[i] = 1;
  MPI_Allreduce(x, sum, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  struct rusage before, after;
  getrusage(RUSAGE_SELF, &before);
  const double start = MPI_Wtime();
  for (int i = 0; i < calls; ++i) {
    if (which == kBarrier)
      MPI_Barrier(MPI_COMM_WORLD);
    else if (which == kAlltoall)
      MPI_Alltoall(out, count, MPI_DOUBLE, in, count, MPI_DOUBLE, MPI_COMM_WORLD);
    else if (which == kAllgather)
      MPI_Allgather(out, count, MPI_DOUBLE, in, count, MPI_DOUBLE, MPI_COMM_WORLD);
    else
      MPI_Allreduce(x, sum, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  }
  const double wall = MPI_Wtime() - start;
  getrusage(RUSAGE_SELF, &after);
  for (int i = 0; i < count; ++i)
    if (sum[i] != size) {
      fprintf(stderr, "mpi_wait_cost: rank %d: the allreduce gave %g, not %d\n", rank, sum[i],
              size);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  for (size_t i = 0; which >= kAlltoall && i < n; ++i) {
    /* alltoall: rank r's block for this rank; allgather: rank r's first block */
    const int r = (int)(i / (size_t)count);
    const double want = r * (double)size + (which == kAlltoall ? rank : 0);
    if (in[i] != want) {
      fprintf(stderr, "mpi_wait_cost: rank %d: %s block %d is %g, not %g\n", rank, op, r, in[i],
              want);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  }
  free(out);
  free(in);
  free(x);
  free(sum);
  double mine[4] = {
      (double)(after.ru_nvcsw - before.ru_nvcsw), (double)(after.ru_nivcsw - before.ru_nivcsw),
      us(after.ru_utime) - us(before.ru_utime), us(after.ru_stime) - us(before.ru_stime)};
  double total[4];
  MPI_Reduce(mine, total, 4, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
  const double per = (double)size * calls;
  if (rank == 0)
    printf(
        "wait_cost %s tasks %d voluntary_cs %.2f involuntary_cs %.2f user_us %.1f sys_us %.1f "
        "call_us %.1f\n",
        op, size, total[0] / per, total[1] / per, total[2] / per, total[3] / per,
        wall * 1e6 / calls);
  MPI_Finalize();
  return 0;
}
