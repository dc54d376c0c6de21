/* Point-to-point traffic outstanding across collectives that run on the collective network and
 * the global interrupt (MPI_COMM_WORLD): MPI requires that a started send progresses while its
 * sender waits in another MPI call. Rank 0 starts a large (rendezvous) send to rank 1 and enters
 * MPI_Allreduce / MPI_Barrier before waiting for it; rank 1 receives first, then joins. A rank
 * that waited on the tree without serving the message layer would never deliver the data. */
#include "mpitest.h"

enum { BYTES = 1 << 20 };

int main(int argc, char** argv) {
  mt_init(&argc, &argv);
  if (mt_size < 2) {
    fprintf(stderr, "overlap: needs 2 ranks or more\n");
    return 2;
  }
  unsigned char* buf = malloc(BYTES);
  for (int round = 0; round < 3; round++) {
    double in = mt_rank + round, out = 0;
    if (mt_rank == 0) {
      for (int i = 0; i < BYTES; i++)
        buf[i] = (unsigned char)(i * 13 + round);
      MPI_Request r;
      MPI_Isend(buf, BYTES, MPI_BYTE, 1, round, MPI_COMM_WORLD, &r);
      MPI_Allreduce(&in, &out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
      MPI_Barrier(MPI_COMM_WORLD);
      MPI_Wait(&r, MPI_STATUS_IGNORE);
    } else {
      if (mt_rank == 1) {
        memset(buf, 0, BYTES);
        MPI_Recv(buf, BYTES, MPI_BYTE, 0, round, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        int bad = 0;
        for (int i = 0; i < BYTES; i++)
          bad += buf[i] != (unsigned char)(i * 13 + round);
        MT_CHECK(bad == 0, "round %d: %d bytes differ", round, bad);
      }
      MPI_Allreduce(&in, &out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
      MPI_Barrier(MPI_COMM_WORLD);
    }
    const double expect = mt_size * (mt_size - 1) / 2.0 + (double)mt_size * round;
    MT_CHECK(out == expect, "round %d: allreduce %g, expected %g", round, out, expect);
  }
  free(buf);
  return mt_finish("overlap");
}
