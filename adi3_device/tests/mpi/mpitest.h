/* Helpers shared by the device's MPI test programs. */
#ifndef BGL_MPITEST_H
#define BGL_MPITEST_H

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int mt_rank, mt_size, mt_errors;

#define MT_CHECK(cond, ...)                                                                        \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      if (mt_errors++ < 20) {                                                                      \
        fprintf(stderr, "rank %d: %s:%d: check failed: %s: ", mt_rank, __FILE__, __LINE__, #cond); \
        fprintf(stderr, __VA_ARGS__);                                                              \
        fprintf(stderr, "\n");                                                                     \
      }                                                                                            \
    }                                                                                              \
  } while (0)

static void mt_init(int* argc, char*** argv) {
  MPI_Init(argc, argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &mt_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &mt_size);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
}

/* Deterministic content: byte i of message `seed`. */
static inline unsigned char mt_byte(uint64_t seed, uint64_t i) {
  uint64_t x = (seed + 1) * 0x9e3779b97f4a7c15ull + i * 0xbf58476d1ce4e5b9ull;
  x ^= x >> 29;
  return (unsigned char)(x ^ (x >> 17));
}

static void mt_fill(unsigned char* p, size_t n, uint64_t seed) {
  for (size_t i = 0; i < n; i++)
    p[i] = mt_byte(seed, i);
}

static size_t mt_verify(const unsigned char* p, size_t n, uint64_t seed) {
  for (size_t i = 0; i < n; i++)
    if (p[i] != mt_byte(seed, i)) return i + 1;
  return 0;
}

/* Ends the test: every rank reports its errors, rank 0 prints the verdict. */
static int mt_finish(const char* name) {
  int total = 0;
  MPI_Allreduce(&mt_errors, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (mt_rank == 0)
    printf("%s: %s (%d ranks, %d errors)\n", name, total ? "FAILED" : "OK", mt_size, total);
  MPI_Finalize();
  return total ? 1 : 0;
}

#ifdef MPIX_H
/* Torus hops between two world ranks (MPIX_Rank2torus; the shorter way round where a dimension
 * wraps). For the programs that include <mpix.h> before this header. */
static int mt_torus_hops(int a, int b) {
  static MPIX_Hardware_t hw;
  static int have_hw;
  if (!have_hw) {
    MPIX_Hardware(&hw);
    have_hw = 1;
  }
  int ca[4], cb[4], h = 0;
  MPIX_Rank2torus(a, ca);
  MPIX_Rank2torus(b, cb);
  for (int d = 0; d < 3; d++) {
    int delta = abs(ca[d] - cb[d]);
    const int e = (int)hw.Size[d];
    if (hw.isTorus[d] && e - delta < delta) delta = e - delta;
    h += delta;
  }
  return h;
}
#endif

#endif
