/* Non-blocking collectives complete in MPICH's own progress. Every rank runs `rounds` (default
 * 400) non-blocking collectives on a duplicate of MPI_COMM_WORLD (MPI_Ibarrier, MPI_Ibcast,
 * MPI_Iallreduce, MPI_Ialltoall in turn), each waited for with MPI_Wait, and checks the results.
 * A rank alone in its communicator never gets a packet: MPICH's progress hooks run the schedule
 * and complete the request, and the device's blocking wait must then return to MPICH's loop
 * instead of sleeping for a packet (a nap per call made MPICH's coll/nonblocking3 at 1 rank take
 * 18 s). The test reads the task's sleeps from bglrun --stats.
 *
 *   alone [rounds] */
#include "mpitest.h"

static void one_round(MPI_Comm comm, int round) {
  MPI_Request req;
  int in[64], out[64];
  const int n = round % 64 + 1;
  for (int i = 0; i < 64; i++) {
    in[i] = round * 1000 + mt_rank * 64 + i;
    out[i] = -1;
  }
  switch (round % 4) {
    case 0:
      MPI_Ibarrier(comm, &req);
      MPI_Wait(&req, MPI_STATUS_IGNORE);
      return;
    case 1: {
      const int root = round % mt_size;
      int* buf = mt_rank == root ? in : out;
      MPI_Ibcast(buf, n, MPI_INT, root, comm, &req);
      MPI_Wait(&req, MPI_STATUS_IGNORE);
      for (int i = 0; i < n; i++)
        MT_CHECK(buf[i] == round * 1000 + root * 64 + i, "round %d: bcast[%d] = %d", round, i,
                 buf[i]);
      return;
    }
    case 2:
      MPI_Iallreduce(in, out, n, MPI_INT, MPI_SUM, comm, &req);
      MPI_Wait(&req, MPI_STATUS_IGNORE);
      for (int i = 0; i < n; i++) {
        const int want = mt_size * (round * 1000 + i) + 64 * mt_size * (mt_size - 1) / 2;
        MT_CHECK(out[i] == want, "round %d: allreduce[%d] = %d, want %d", round, i, out[i], want);
      }
      return;
    default: {
      const int per = 64 / mt_size;
      MPI_Ialltoall(in, per, MPI_INT, out, per, MPI_INT, comm, &req);
      MPI_Wait(&req, MPI_STATUS_IGNORE);
      for (int s = 0; s < mt_size; s++)
        for (int i = 0; i < per; i++) {
          const int want = round * 1000 + s * 64 + mt_rank * per + i;
          MT_CHECK(out[s * per + i] == want, "round %d: alltoall from %d [%d] = %d", round, s, i,
                   out[s * per + i]);
        }
      return;
    }
  }
}

int main(int argc, char** argv) {
  mt_init(&argc, &argv);
  const int rounds = argc > 1 ? atoi(argv[1]) : 400;
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  for (int round = 0; round < rounds; round++)
    one_round(comm, round);
  MPI_Comm_free(&comm);
  if (mt_rank == 0 && mt_errors == 0) printf("alone: OK, %d rounds\n", rounds);
  MPI_Finalize();
  return mt_errors != 0;
}
