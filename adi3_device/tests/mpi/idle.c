/* Waiting ranks give the CPU away. Rank 0 sleeps for `seconds` (default 2) while every other rank
 * waits in MPI_Barrier (a blocking MPI wait) and then in MPI_Recv; afterwards every rank reports
 * the CPU time (user + system, getrusage) it spent waiting. Stock MPICH busy-polls: with 8 or 64
 * ranks on 2 cores the waiting ranks would burn both cores for the whole time (about 2 x seconds
 * of CPU in total). The bgl device spins briefly, yields, then sleeps on its doorbell, so the
 * total stays a small fraction of that; the test fails when it exceeds `limit` (default 0.25) x
 * cores x seconds. A final allreduce checks that the ranks still communicate correctly. */
#include "mpitest.h"
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static double cpu_seconds(void) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

int main(int argc, char** argv) {
  mt_init(&argc, &argv);
  double seconds = argc > 1 ? atof(argv[1]) : 2.0;
  double limit = argc > 2 ? atof(argv[2]) : 0.25;
  long cores = sysconf(_SC_NPROCESSORS_ONLN);

  MPI_Barrier(MPI_COMM_WORLD);
  double c0 = cpu_seconds(), t0 = MPI_Wtime();
  if (mt_rank == 0) {
    struct timespec ts = {(time_t)seconds, (long)((seconds - (time_t)seconds) * 1e9)};
    nanosleep(&ts, NULL);
  }
  MPI_Barrier(MPI_COMM_WORLD); /* everyone else waits here for `seconds` */
  int token = 0;
  /* a chain of receives: rank i waits for i-1 (rank 0 sleeps again first) */
  if (mt_rank == 0) {
    struct timespec ts = {(time_t)(seconds / 2),
                          (long)((seconds / 2 - (time_t)(seconds / 2)) * 1e9)};
    nanosleep(&ts, NULL);
  } else {
    MPI_Recv(&token, 1, MPI_INT, mt_rank - 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  if (mt_rank + 1 < mt_size) MPI_Send(&token, 1, MPI_INT, mt_rank + 1, 7, MPI_COMM_WORLD);
  double cpu = cpu_seconds() - c0, wall = MPI_Wtime() - t0;

  double total = 0, worst = 0;
  MPI_Reduce(&cpu, &total, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
  MPI_Reduce(&cpu, &worst, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  if (mt_rank == 0) {
    double budget = limit * cores * wall;
    printf(
        "idle: %d ranks on %ld cores waited %.2f s: %.3f s of CPU in total (largest rank "
        "%.3f s), %.1f%% of the cores' time; limit %.3f s\n",
        mt_size, cores, wall, total, worst, 100.0 * total / (cores * wall), budget);
    MT_CHECK(total <= budget, "waiting ranks used %.3f s of CPU, more than %.3f s", total, budget);
  }
  long v = mt_rank + 1, sum = 0;
  MPI_Allreduce(&v, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  MT_CHECK(sum == (long)mt_size * (mt_size + 1) / 2, "allreduce gave %ld", sum);
  return mt_finish("idle");
}
