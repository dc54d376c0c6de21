/* Collectives over the bgl device (MPICH's algorithms over our active messages): Barrier, Bcast,
 * Reduce, Allreduce, Allgather, Alltoall on MPI_COMM_WORLD and on communicators from
 * MPI_Comm_split (even/odd ranks and a reversed order), at several sizes. */
#include "mpitest.h"

static const int counts[] = {1, 2, 45, 1000, 20000, 300000};
#define NCOUNTS (sizeof(counts) / sizeof(counts[0]))

static double value(int rank, int i) {
  return (double)((rank + 1) * 1000 + (i % 977));
}

static void run(MPI_Comm comm, const char* label) {
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);

  for (int rep = 0; rep < 3; rep++)
    MPI_Barrier(comm);

  for (size_t c = 0; c < NCOUNTS; c++) {
    int n = counts[c];
    double *a = malloc((size_t)n * sizeof(double)), *b = malloc((size_t)n * sizeof(double));
    /* Bcast from every root in turn (a few) */
    for (int root = 0; root < size && root < 3; root++) {
      for (int i = 0; i < n; i++)
        a[i] = rank == root ? value(root, i) : -1;
      MPI_Bcast(a, n, MPI_DOUBLE, root, comm);
      for (int i = 0; i < n; i++)
        if (a[i] != value(root, i)) {
          MT_CHECK(0, "%s bcast n=%d root=%d element %d: %g", label, n, root, i, a[i]);
          break;
        }
    }
    /* Reduce (sum) to the last rank, Allreduce (sum and max) */
    for (int i = 0; i < n; i++)
      a[i] = value(rank, i);
    MPI_Reduce(a, b, n, MPI_DOUBLE, MPI_SUM, size - 1, comm);
    if (rank == size - 1) {
      for (int i = 0; i < n; i++) {
        double want = 0;
        for (int r = 0; r < size; r++)
          want += value(r, i);
        if (b[i] != want) {
          MT_CHECK(0, "%s reduce n=%d element %d: %g != %g", label, n, i, b[i], want);
          break;
        }
      }
    }
    MPI_Allreduce(a, b, n, MPI_DOUBLE, MPI_SUM, comm);
    for (int i = 0; i < n; i++) {
      double want = 0;
      for (int r = 0; r < size; r++)
        want += value(r, i);
      if (b[i] != want) {
        MT_CHECK(0, "%s allreduce n=%d element %d: %g != %g", label, n, i, b[i], want);
        break;
      }
    }
    MPI_Allreduce(MPI_IN_PLACE, a, n, MPI_DOUBLE, MPI_MAX, comm);
    for (int i = 0; i < n; i++)
      if (a[i] != value(size - 1, i)) {
        MT_CHECK(0, "%s allreduce max n=%d element %d: %g", label, n, i, a[i]);
        break;
      }
    free(a);
    free(b);

    /* Allgather and Alltoall with n/size (at least 1) elements per rank */
    int m = n / size > 0 ? n / size : 1;
    if ((size_t)m * size > 4000000) m = 4000000 / size;
    int *s = malloc((size_t)m * size * sizeof(int)), *r = malloc((size_t)m * size * sizeof(int));
    for (int i = 0; i < m; i++)
      s[i] = rank * 100000 + i;
    MPI_Allgather(s, m, MPI_INT, r, m, MPI_INT, comm);
    for (int p = 0; p < size; p++)
      for (int i = 0; i < m; i++)
        if (r[p * m + i] != p * 100000 + i) {
          MT_CHECK(0, "%s allgather m=%d from %d element %d: %d", label, m, p, i, r[p * m + i]);
          p = size;
          break;
        }
    for (int p = 0; p < size; p++)
      for (int i = 0; i < m; i++)
        s[p * m + i] = rank * 1000000 + p * 1000 + (i % 1000);
    MPI_Alltoall(s, m, MPI_INT, r, m, MPI_INT, comm);
    for (int p = 0; p < size; p++)
      for (int i = 0; i < m; i++)
        if (r[p * m + i] != p * 1000000 + rank * 1000 + (i % 1000)) {
          MT_CHECK(0, "%s alltoall m=%d from %d element %d: %d", label, m, p, i, r[p * m + i]);
          p = size;
          break;
        }
    free(s);
    free(r);
  }
}

int main(int argc, char** argv) {
  mt_init(&argc, &argv);
  run(MPI_COMM_WORLD, "world");

  MPI_Comm half, reversed;
  MPI_Comm_split(MPI_COMM_WORLD, mt_rank % 2, mt_rank, &half);
  MPI_Comm_split(MPI_COMM_WORLD, 0, mt_size - mt_rank, &reversed);
  int hr, hs, rr, rs;
  MPI_Comm_rank(half, &hr);
  MPI_Comm_size(half, &hs);
  MPI_Comm_rank(reversed, &rr);
  MPI_Comm_size(reversed, &rs);
  MT_CHECK(hs == (mt_size + 1 - mt_rank % 2) / 2 && hr == mt_rank / 2, "split: rank %d of %d", hr,
           hs);
  MT_CHECK(rs == mt_size && rr == mt_size - 1 - mt_rank, "reversed split: rank %d of %d", rr, rs);
  run(half, mt_rank % 2 ? "odd" : "even");
  run(reversed, "reversed");
  MPI_Comm_free(&half);
  MPI_Comm_free(&reversed);
  return mt_finish("coll");
}
