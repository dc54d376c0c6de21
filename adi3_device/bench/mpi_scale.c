/* The scale benchmark's MPI program (bench/scale.sh runs it at 64, 512 and 1,024 tasks on the
 * device, and the same source under SimGrid's smpirun and Open MPI when they are installed):
 *
 *   100 x MPI_Allreduce of one double, 100 x MPI_Barrier, 10 x MPI_Alltoall of 8 bytes per peer,
 *   10 x a 3D halo exchange (a periodic Cartesian grid from MPI_Dims_create, 1 KiB to each of the
 *   six neighbours with MPI_Irecv/MPI_Isend/MPI_Waitall)
 *
 * An argument names the phases to run, comma-separated (`mpi_scale allreduce` is the 100-allreduce
 * program); without one, all four run. Each phase starts after a barrier; rank 0 prints the phase's
 * wall time divided by its count:
 *
 *   scale <phase> <count> <per_op_us>
 *   scale main_entered_ns <CLOCK_REALTIME when the slowest task entered main>
 *   scale finalize_ns <CLOCK_REALTIME when rank 0 reached MPI_Finalize>
 *
 * so that the script can split the job's wall time into start-up, the phases and shutdown. The
 * program checks its results (the allreduce's sum, the alltoall's blocks, the halo's contents) and
 * exits with 1, naming the phase, when one is wrong.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { kAllreduces = 100, kBarriers = 100, kAlltoalls = 10, kHalos = 10, kHaloBytes = 1024 };

static double realtime_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void fail(const char* phase, int rank) {
  fprintf(stderr, "mpi_scale: rank %d: wrong result in %s\n", rank, phase);
  MPI_Abort(MPI_COMM_WORLD, 1);
}

static void report(int rank, const char* phase, int count, double seconds) {
  if (rank == 0) printf("scale %s %d %.3f\n", phase, count, seconds * 1e6 / count);
}

static double allreduces(int rank, int size) {
  const double start = MPI_Wtime();
  for (int i = 0; i < kAllreduces; ++i) {
    double mine = rank + i, sum = 0;
    MPI_Allreduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    if (sum != (double)size * (size - 1) / 2 + (double)i * size) fail("allreduce", rank);
  }
  return MPI_Wtime() - start;
}

static double barriers(void) {
  const double start = MPI_Wtime();
  for (int i = 0; i < kBarriers; ++i)
    MPI_Barrier(MPI_COMM_WORLD);
  return MPI_Wtime() - start;
}

static double alltoalls(int rank, int size) {
  uint64_t *out = malloc(sizeof *out * (size_t)size), *in = malloc(sizeof *in * (size_t)size);
  if (!out || !in) fail("alltoall (memory)", rank);
  const double start = MPI_Wtime();
  for (int i = 0; i < kAlltoalls; ++i) {
    for (int p = 0; p < size; ++p)
      out[p] = (uint64_t)rank << 32 | (uint64_t)p << 8 | (uint64_t)i;
    MPI_Alltoall(out, 8, MPI_BYTE, in, 8, MPI_BYTE, MPI_COMM_WORLD);
    for (int p = 0; p < size; ++p)
      if (in[p] != ((uint64_t)p << 32 | (uint64_t)rank << 8 | (uint64_t)i)) fail("alltoall", rank);
  }
  const double seconds = MPI_Wtime() - start;
  free(out);
  free(in);
  return seconds;
}

/* Each neighbour's block carries the sender's rank and the iteration in every byte pair. */
static double halos(int rank, int size) {
  int dims[3] = {0, 0, 0}, periods[3] = {1, 1, 1};
  MPI_Dims_create(size, 3, dims);
  MPI_Comm grid;
  MPI_Cart_create(MPI_COMM_WORLD, 3, dims, periods, 1, &grid);
  int me;
  MPI_Comm_rank(grid, &me);
  int peer[6];
  for (int d = 0; d < 3; ++d)
    MPI_Cart_shift(grid, d, 1, &peer[2 * d], &peer[2 * d + 1]);
  static unsigned char out[6][kHaloBytes], in[6][kHaloBytes];
  MPI_Request req[12];
  const double start = MPI_Wtime();
  for (int i = 0; i < kHalos; ++i) {
    for (int n = 0; n < 6; ++n) {
      memset(out[n], (me * 7 + i) & 0xff, kHaloBytes);
      MPI_Irecv(in[n], kHaloBytes, MPI_BYTE, peer[n], n ^ 1, grid, &req[n]);
    }
    for (int n = 0; n < 6; ++n)
      MPI_Isend(out[n], kHaloBytes, MPI_BYTE, peer[n], n, grid, &req[6 + n]);
    MPI_Waitall(12, req, MPI_STATUSES_IGNORE);
    for (int n = 0; n < 6; ++n)
      if (in[n][0] != ((peer[n] * 7 + i) & 0xff) || in[n][kHaloBytes - 1] != in[n][0])
        fail("halo", rank);
  }
  const double seconds = MPI_Wtime() - start;
  MPI_Comm_free(&grid);
  return seconds;
}

enum { kAllreducePhase = 1, kBarrierPhase = 2, kAlltoallPhase = 4, kHaloPhase = 8 };

/* The phases a comma-separated list names (NULL: all of them), or 0 when a name is unknown. */
static int phase_set(const char* list) {
  static const char* const kNames[] = {"allreduce", "barrier", "alltoall", "halo"};
  const int phases = (int)(sizeof kNames / sizeof kNames[0]);
  if (!list) return kAllreducePhase | kBarrierPhase | kAlltoallPhase | kHaloPhase;
  char copy[256];
  snprintf(copy, sizeof copy, "%s", list);
  int set = 0;
  for (char* name = strtok(copy, ","); name; name = strtok(NULL, ",")) {
    int k = 0;
    while (k < phases && strcmp(name, kNames[k]) != 0)
      ++k;
    if (k == phases) return 0;
    set |= 1 << k;
  }
  return set;
}

int main(int argc, char** argv) {
  const double entered = realtime_ns();
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int phases = phase_set(argc > 1 ? argv[1] : NULL);
  if (!phases) {
    if (rank == 0)
      fprintf(stderr,
              "mpi_scale: unknown phase in '%s' (phases: allreduce,barrier,alltoall,halo)\n",
              argv[1]);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  double latest = 0;
  MPI_Reduce(&entered, &latest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  if (rank == 0) printf("scale main_entered_ns %.0f\n", latest);

  if (phases & kAllreducePhase) {
    MPI_Barrier(MPI_COMM_WORLD);
    report(rank, "allreduce", kAllreduces, allreduces(rank, size));
  }
  if (phases & kBarrierPhase) {
    MPI_Barrier(MPI_COMM_WORLD);
    report(rank, "barrier", kBarriers, barriers());
  }
  if (phases & kAlltoallPhase) {
    MPI_Barrier(MPI_COMM_WORLD);
    report(rank, "alltoall", kAlltoalls, alltoalls(rank, size));
  }
  if (phases & kHaloPhase) {
    MPI_Barrier(MPI_COMM_WORLD);
    report(rank, "halo", kHalos, halos(rank, size));
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    printf("scale finalize_ns %.0f\n", realtime_ns());
    fflush(stdout);
  }
  MPI_Finalize();
  return 0;
}
