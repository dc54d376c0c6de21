/* MPI_Wtime with and without virtual time: with bglrun --virtual-time it is the task's BG/L clock
 * (MPI_WTIME_IS_GLOBAL true, MPI_Wtick one 700 MHz cycle), otherwise the host's clock. Rank 0
 * prints what it saw, its clock after the first MPI_Barrier (start) and the time of one 1-byte
 * round trip with rank 1, over 100 of them. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char** argv) {
  int rank, size, *global = NULL, found = 0;
  char byte = 0;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_WTIME_IS_GLOBAL, &global, &found);
  MPI_Barrier(MPI_COMM_WORLD);
  const double start = MPI_Wtime();
  for (int i = 0; i < 100 && size > 1; ++i) {
    if (rank == 0) {
      MPI_Send(&byte, 1, MPI_CHAR, 1, 0, MPI_COMM_WORLD);
      MPI_Recv(&byte, 1, MPI_CHAR, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (rank == 1) {
      MPI_Recv(&byte, 1, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(&byte, 1, MPI_CHAR, 0, 0, MPI_COMM_WORLD);
    }
  }
  const double end = MPI_Wtime();
  if (rank == 0)
    printf("wtime: global=%d tick=%.4g start=%.9f round_trip_us=%.3f\n",
           found && global ? *global : -1, MPI_Wtick(), start, (end - start) / 100 * 1e6);
  MPI_Finalize();
  return 0;
}
