/* Waiting for a late rank: rank 0 sleeps SECONDS (default 0.5) before MPI_Barrier and
 * MPI_Allreduce, which the others entered at once; each waiting rank counts its voluntary context
 * switches (getrusage) across each call, and rank 0 prints the largest:
 *
 *   late barrier_switches <max> allreduce_switches <max>
 *
 * A wait that is woken only by the operation's end (and the wait policy's safety-net re-check)
 * switches a few times; one that re-checks every few milliseconds, hundreds of times. */
#include "mpitest.h"
#include <sys/resource.h>
#include <unistd.h>

static long switches(void) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_nvcsw;
}

static long waited(int late_us, int allreduce) {
  const long before = switches();
  if (mt_rank == 0) usleep(late_us);
  double x = 1, sum = 0;
  if (allreduce)
    MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  else
    MPI_Barrier(MPI_COMM_WORLD);
  if (allreduce) MT_CHECK(sum == mt_size, "allreduce gave %g, not %d", sum, mt_size);
  long mine = mt_rank == 0 ? 0 : switches() - before, most = 0;
  MPI_Reduce(&mine, &most, 1, MPI_LONG, MPI_MAX, 0, MPI_COMM_WORLD);
  return most;
}

int main(int argc, char** argv) {
  mt_init(&argc, &argv);
  const int late_us = (int)((argc > 1 ? atof(argv[1]) : 0.5) * 1e6);
  MPI_Barrier(MPI_COMM_WORLD);
  const long barrier = waited(late_us, 0);
  const long allreduce = waited(late_us, 1);
  if (mt_rank == 0)
    printf("late barrier_switches %ld allreduce_switches %ld\n", barrier, allreduce);
  return mt_finish("late");
}
