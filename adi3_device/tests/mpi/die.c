/* A rank dies in the middle of a job: `die RANK HOW` with HOW = kill (SIGKILL), segv (SIGSEGV),
 * exit (exit(3) without MPI_Finalize), abort (MPI_Abort(..., 4)) or publish (MPI_Publish_name, a
 * PMI command bglrun does not serve: the job stops). The other ranks are blocked in
 * a receive that never completes; the launcher must end the job, name RANK, and leave no
 * process or segment behind. */
#include "mpitest.h"
#include <signal.h>
#include <unistd.h>

int main(int argc, char** argv) {
  mt_init(&argc, &argv);
  int victim = argc > 1 ? atoi(argv[1]) : mt_size - 1;
  const char* how = argc > 2 ? argv[2] : "kill";
  double x = mt_rank, sum = 0;
  MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  MPI_Barrier(MPI_COMM_WORLD);
  if (mt_rank == victim && strcmp(how, "hang") != 0) {
    usleep(100000); /* let the others block first */
    fprintf(stderr, "die: rank %d dies (%s)\n", mt_rank, how);
    if (!strcmp(how, "kill"))
      raise(SIGKILL);
    else if (!strcmp(how, "segv"))
      raise(SIGSEGV);
    else if (!strcmp(how, "exit"))
      exit(3);
    else if (!strcmp(how, "publish"))
      MPI_Publish_name("bglemu-test", MPI_INFO_NULL, "port");
    else
      MPI_Abort(MPI_COMM_WORLD, 4);
  }
  int never;
  MPI_Recv(&never, 1, MPI_INT, victim, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  MPI_Finalize();
  return 0;
}
