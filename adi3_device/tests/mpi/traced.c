/* bglrun --trace: a program whose MPI calls the trace must show on every task's timeline, in this
 * order, each as one span with its arguments, and none of the MPI calls MPICH makes inside them
 * (MPI_Comm_split's collectives). Even ranks send first in the ring of blocking calls. Needs an
 * even number of ranks, at least 2. */
#include <mpi.h>
#include <stdio.h>

#define N 1000 /* doubles: 8000 bytes */

int main(int argc, char** argv) {
  int rank, size, errors = 0;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  static double out[N], in[N];
  for (int i = 0; i < N; ++i)
    out[i] = rank * 10000.0 + i;

  if (rank % 2 == 0) {
    MPI_Send(out, N, MPI_DOUBLE, next, 1, MPI_COMM_WORLD);
    MPI_Recv(in, N, MPI_DOUBLE, prev, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  } else {
    MPI_Recv(in, N, MPI_DOUBLE, prev, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Send(out, N, MPI_DOUBLE, next, 1, MPI_COMM_WORLD);
  }
  errors += in[N - 1] != prev * 10000.0 + N - 1;

  MPI_Request requests[2];
  MPI_Irecv(in, N, MPI_DOUBLE, prev, 2, MPI_COMM_WORLD, &requests[0]);
  MPI_Isend(out, N, MPI_DOUBLE, next, 2, MPI_COMM_WORLD, &requests[1]);
  MPI_Wait(&requests[0], MPI_STATUS_IGNORE);
  MPI_Wait(&requests[1], MPI_STATUS_IGNORE);
  errors += in[0] != prev * 10000.0;

  double mine = rank + 1, sum = 0;
  MPI_Allreduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  errors += sum != size * (size + 1) / 2.0;

  MPI_Bcast(out, N, MPI_DOUBLE, 1, MPI_COMM_WORLD);
  errors += out[5] != 10005.0;

  MPI_Comm half;
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
  int one = 1, members = 0;
  MPI_Allreduce(&one, &members, 1, MPI_INT, MPI_SUM, half);
  errors += members != size / 2;
  MPI_Comm_free(&half);

  MPI_Barrier(MPI_COMM_WORLD);
  if (errors != 0) fprintf(stderr, "rank %d: %d wrong results\n", rank, errors);
  if (rank == 0) printf("traced: %s, %d ranks, sum %g\n", errors ? "FAILED" : "OK", size, sum);
  MPI_Finalize();
  return errors != 0;
}
