/* Hello from every rank of an MPI program on the emulated Blue Gene/L: MPI_Get_processor_name
 * reports the task's place in the partition, as BG/L's MPI did.
 *
 *   P=$(tools/build_mpich.sh --print-prefix)
 *   $P/bin/mpicc -o hello examples/mpi/hello.c
 *   build/bin/bglrun -np 16 --shape 2x2x2 --mode vn --mapfile examples/mpi/map-2x2x2-vn.txt ./hello
 */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char** argv) {
  int rank, size, len;
  char name[MPI_MAX_PROCESSOR_NAME];
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Get_processor_name(name, &len);
  int token = rank;
  /* pass a token around the ring so that the lines come out in rank order */
  if (rank > 0) MPI_Recv(&token, 1, MPI_INT, rank - 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  printf("hello from rank %d of %d on %s\n", rank, size, name);
  fflush(stdout);
  if (rank + 1 < size) MPI_Send(&token, 1, MPI_INT, rank + 1, 0, MPI_COMM_WORLD);
  MPI_Finalize();
  return 0;
}
