/* Collective call sites for bglrun --stats: exchange() calls MPI_Allreduce 6 times and MPI_Bcast
 * twice, main() calls MPI_Barrier 3 times and MPI_Allreduce once on a split communicator (even
 * and odd ranks). The test finds the lines of these calls in this file and expects them in the
 * statistics with the algorithm the collectives library chose. */
#include <mpi.h>
#include <stdio.h>

static void __attribute__((noinline)) exchange(int rank, int size) {
  long sum = 0, mine = rank + 1;
  for (int i = 0; i < 6; ++i)
    MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (sum != (long)size * (size + 1) / 2)
    fprintf(stderr, "rank %d: allreduce gave %ld\n", rank, sum);
  char data[3000];
  for (int i = 0; i < 2; ++i)
    MPI_Bcast(data, sizeof data, MPI_CHAR, 1, MPI_COMM_WORLD);
}

int main(int argc, char** argv) {
  int rank, size;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  exchange(rank, size);
  for (int i = 0; i < 3; ++i)
    MPI_Barrier(MPI_COMM_WORLD);
  MPI_Comm half;
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
  int one = 1, count = 0;
  MPI_Allreduce(&one, &count, 1, MPI_INT, MPI_SUM, half);
  MPI_Comm_free(&half);
  if (rank == 0) printf("sites: ok, %d in my half\n", count);
  MPI_Finalize();
  return 0;
}
