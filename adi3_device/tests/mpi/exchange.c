/* A deterministic exchange for comparing statistics: every rank sends one message of each
 * protocol's size (one-packet, eager, rendezvous) to the next rank in a ring and receives one of
 * each from the previous one, then all ranks sum their ranks with MPI_Allreduce. The messages,
 * their bytes, the packets and the links they cross are the same in every run. */
#include "mpitest.h"

int main(int argc, char** argv) {
  mt_init(&argc, &argv);
  static const int sizes[] = {100, 5000, 100000};
  unsigned char* out = malloc(100000);
  unsigned char* in = malloc(100000);
  const int next = (mt_rank + 1) % mt_size, prev = (mt_rank + mt_size - 1) % mt_size;
  for (int i = 0; i < 3; i++) {
    mt_fill(out, (size_t)sizes[i], (uint64_t)(100 * mt_rank + i));
    MPI_Sendrecv(out, sizes[i], MPI_BYTE, next, i, in, sizes[i], MPI_BYTE, prev, i, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    MT_CHECK(mt_verify(in, (size_t)sizes[i], (uint64_t)(100 * prev + i)) == 0,
             "message %d from %d corrupt", i, prev);
  }
  int sum = 0;
  MPI_Allreduce(&mt_rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MT_CHECK(sum == mt_size * (mt_size - 1) / 2, "allreduce gave %d", sum);
  free(out);
  free(in);
  return mt_finish("exchange");
}
