/* A fixed number of 8-byte MPI_Send/MPI_Recv round trips between ranks 0 and 1 and nothing else:
 * tools/mpi_instructions.sh runs it under callgrind twice (N1 and N2 round trips) and divides the
 * difference, which leaves only the cost of a round trip. Rank 1 receives first.
 *
 *   mpi_pingpong_count N */
#include <mpi.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank;
  char buf[8] = {0};
  long n = argc > 1 ? atol(argv[1]) : 1000;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  for (long i = 0; i < n; i++) {
    if (rank == 0) {
      MPI_Send(buf, 8, MPI_CHAR, 1, 0, MPI_COMM_WORLD);
      MPI_Recv(buf, 8, MPI_CHAR, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (rank == 1) {
      MPI_Recv(buf, 8, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(buf, 8, MPI_CHAR, 0, 0, MPI_COMM_WORLD);
    }
  }
  MPI_Finalize();
  return 0;
}
