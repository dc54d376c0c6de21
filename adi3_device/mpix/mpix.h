/*
 * mpix.h: the Blue Gene extensions to MPI, as the Blue Gene/P and Blue Gene/Q MPICH ports
 * declared them, for bglemu's MPICH (the bgl netmod). Programs written for those machines compile
 * unchanged; the answers describe the emulated Blue Gene/L partition the job runs on: its shape,
 * which dimensions wrap around, the node mode and the rank mapping (bglrun --shape, --mesh,
 * --mode, --mapping/--mapfile).
 *
 * Coordinates are x, y, z and t, t being the task's processor slot on its node (0 in heater and
 * coprocessor mode, 0 or 1 in virtual-node mode). Ranks are MPI_COMM_WORLD ranks unless a
 * communicator is given. The calls return MPI error codes (they do not call an error handler);
 * before MPI_Init or after MPI_Finalize they return MPI_ERR_OTHER.
 *
 * Fortran: include 'mpixf.h' (constants) and call the subroutines listed there.
 * Documentation: adi3_device/README.md, "The Blue Gene extensions (mpix.h)".
 */
#ifndef MPIX_H
#define MPIX_H
#ifndef __include_mpix_h__
#define __include_mpix_h__

#include <mpi.h>

#if defined(__cplusplus)
extern "C" {
#endif

#define MPIX_TORUS_MAX_DIMS 5 /* entries of the per-dimension arrays (BG/Q's value) */

typedef struct {
  unsigned prank;           /* the rank this task has under the default mapping (XYZT: x fastest, t
                             * slowest), whatever the job's mapping */
  unsigned psize;           /* tasks the partition holds: nodes times tasks per node */
  unsigned ppn;             /* tasks per node: 2 in virtual-node mode, else 1 */
  unsigned coreID;          /* this task's t */
  unsigned clockMHz;        /* 700, BG/L's processor clock */
  unsigned memSize;         /* MB of memory per task: BG/L's 512 MB node divided among its tasks */
  unsigned torus_dimension; /* 3 */
  unsigned Size[MPIX_TORUS_MAX_DIMS];    /* X, Y, Z; 1 beyond torus_dimension */
  unsigned Coords[MPIX_TORUS_MAX_DIMS];  /* this node's x, y, z; 0 beyond */
  unsigned isTorus[MPIX_TORUS_MAX_DIMS]; /* 1 where the dimension wraps around, 0 for a mesh */
  /* bglemu emulates no I/O nodes: the whole partition is one pset */
  unsigned rankInPset; /* this node's index, x + X * (y + Y * z) */
  unsigned sizeOfPset; /* nodes in the partition */
  unsigned idOfPset;   /* 0 */
} MPIX_Hardware_t;

/* ---- Blue Gene/Q style ---- */

/* Fills *hw for the calling task. */
int MPIX_Hardware(MPIX_Hardware_t* hw);
/* The number of torus dimensions (3); coordinate arrays have one more entry, t. */
int MPIX_Torus_ndims(int* numdim);
/* coords[0..3] = x, y, z, t of an MPI_COMM_WORLD rank (MPI_ERR_RANK if out of range). */
int MPIX_Rank2torus(int rank, int* coords);
/* The MPI_COMM_WORLD rank at x, y, z, t (coords[0..3]); MPI_UNDEFINED where no task runs (a job
 * smaller than its partition); MPI_ERR_ARG for coordinates outside the partition. */
int MPIX_Torus2rank(int* coords, int* rank);
/* The MPI_COMM_WORLD rank of rank crank of comm. */
int MPIX_Comm_rank2global(MPI_Comm comm, int crank, int* grank);

/* A 4-dimensional Cartesian communicator that is the partition: dimensions [T, Z, Y, X] (t
 * slowest, x fastest, as on Blue Gene/P), periodic where the torus wraps (T periodic), each
 * task's Cartesian coordinates its physical (t, z, y, x), so Cartesian neighbours are torus
 * neighbours. Under the default mapping (XYZT) its ranks are the MPI_COMM_WORLD ranks. Collective
 * over MPI_COMM_WORLD; MPI_ERR_TOPOLOGY unless the job fills its partition. */
int MPIX_Cart_comm_create(MPI_Comm* cart_comm);

/* ---- Blue Gene/P style ---- */

/* The MPI_COMM_WORLD rank at x, y, z, t; (unsigned) -1 where no task runs or outside the
 * partition. */
unsigned MPIX_torus2rank(unsigned x, unsigned y, unsigned z, unsigned t);
/* x, y, z, t of an MPI_COMM_WORLD rank; all (unsigned) -1 for a rank out of range. */
void MPIX_rank2torus(unsigned rank, unsigned* x, unsigned* y, unsigned* z, unsigned* t);
/* The rank in comm of the task at x, y, z, t; (unsigned) MPI_UNDEFINED when that task is not in
 * comm, (unsigned) -1 where no task runs or outside the partition. */
unsigned MPIX_Comm_torus2rank(MPI_Comm comm, unsigned x, unsigned y, unsigned z, unsigned t);
/* x, y, z, t of rank `rank` of comm; all (unsigned) -1 for a rank out of range. */
void MPIX_Comm_rank2torus(MPI_Comm comm, unsigned rank, unsigned* x, unsigned* y, unsigned* z,
                          unsigned* t);

#if defined(__cplusplus)
}
#endif

#endif /* __include_mpix_h__ */
#endif /* MPIX_H */
