/*
 * The Blue Gene extensions to MPI (mpix.h, installed with this MPICH): the partition, node mode
 * and rank mapping of the job, as libbglml sees them (bgl_nm_topo.h), through the calls the BG/P
 * and BG/Q MPICH ports offered, and their Fortran bindings. libmpi is compiled with hidden
 * visibility, so every entry point is marked for export.
 */

#include "bgl_impl.h"
#include <bgl_nm_topo.h>
#include <mpix.h>
#include <limits.h>

#define MPIX_EXPORT __attribute__ ((visibility("default")))

enum { BGL_CLOCK_MHZ = 700, BGL_NODE_MEMORY_MB = 512 };

/* The device is up (between MPI_Init and MPI_Finalize). */
static int ready(void)
{
    return MPIDI_BGL_global.session != NULL;
}

static int partition(bgl_nm_partition_t * p)
{
    return ready() && bgl_nm_topo_partition(MPIDI_BGL_global.session, p) == 0;
}

MPIX_EXPORT int MPIX_Hardware(MPIX_Hardware_t * hw)
{
    bgl_nm_partition_t p;
    int loc[4];
    if (hw == NULL)
        return MPI_ERR_ARG;
    if (!partition(&p) ||
        bgl_nm_topo_location(MPIDI_BGL_global.session, (uint32_t) MPIR_Process.rank, loc) != 0)
        return MPI_ERR_OTHER;
    memset(hw, 0, sizeof(*hw));
    const unsigned nodes = (unsigned) (p.extent[0] * p.extent[1] * p.extent[2]);
    const unsigned node = (unsigned) (loc[0] + p.extent[0] * (loc[1] + p.extent[1] * loc[2]));
    hw->prank = node + nodes * (unsigned) loc[3];
    hw->psize = nodes * (unsigned) p.tasks_per_node;
    hw->ppn = (unsigned) p.tasks_per_node;
    hw->coreID = (unsigned) loc[3];
    hw->clockMHz = BGL_CLOCK_MHZ;
    hw->memSize = BGL_NODE_MEMORY_MB / (unsigned) p.tasks_per_node;
    hw->torus_dimension = 3;
    for (int d = 0; d < MPIX_TORUS_MAX_DIMS; d++) {
        hw->Size[d] = d < 3 ? (unsigned) p.extent[d] : 1;
        hw->Coords[d] = d < 3 ? (unsigned) loc[d] : 0;
        hw->isTorus[d] = d < 3 ? (unsigned) p.torus[d] : 0;
    }
    hw->rankInPset = node;
    hw->sizeOfPset = nodes;
    hw->idOfPset = 0;
    return MPI_SUCCESS;
}

MPIX_EXPORT int MPIX_Torus_ndims(int *numdim)
{
    if (numdim == NULL)
        return MPI_ERR_ARG;
    if (!ready())
        return MPI_ERR_OTHER;
    *numdim = 3;
    return MPI_SUCCESS;
}

MPIX_EXPORT int MPIX_Rank2torus(int rank, int *coords)
{
    if (coords == NULL)
        return MPI_ERR_ARG;
    if (!ready())
        return MPI_ERR_OTHER;
    if (rank < 0 || rank >= MPIR_Process.size)
        return MPI_ERR_RANK;
    return bgl_nm_topo_location(MPIDI_BGL_global.session, (uint32_t) rank, coords) == 0 ?
        MPI_SUCCESS : MPI_ERR_RANK;
}

MPIX_EXPORT int MPIX_Torus2rank(int *coords, int *rank)
{
    int task;
    if (coords == NULL || rank == NULL)
        return MPI_ERR_ARG;
    if (!ready())
        return MPI_ERR_OTHER;
    if (bgl_nm_topo_task_at(MPIDI_BGL_global.session, coords, &task) != 0)
        return MPI_ERR_ARG;
    *rank = task < 0 ? MPI_UNDEFINED : task;
    return MPI_SUCCESS;
}

MPIX_EXPORT int MPIX_Comm_rank2global(MPI_Comm comm, int crank, int *grank)
{
    MPI_Group group, world;
    int size, rc;
    if (grank == NULL)
        return MPI_ERR_ARG;
    if (!ready())
        return MPI_ERR_OTHER;
    if ((rc = PMPI_Comm_size(comm, &size)) != MPI_SUCCESS)
        return rc;
    if (crank < 0 || crank >= size)
        return MPI_ERR_RANK;
    if ((rc = PMPI_Comm_group(comm, &group)) != MPI_SUCCESS)
        return rc;
    rc = PMPI_Comm_group(MPI_COMM_WORLD, &world);
    if (rc == MPI_SUCCESS) {
        rc = PMPI_Group_translate_ranks(group, 1, &crank, world, grank);
        PMPI_Group_free(&world);
    }
    PMPI_Group_free(&group);
    return rc;
}

/* The rank in comm of world rank grank, or MPI_UNDEFINED. */
static int global2comm(MPI_Comm comm, int grank, int *crank)
{
    MPI_Group group, world;
    int rc = PMPI_Comm_group(comm, &group);
    if (rc != MPI_SUCCESS)
        return rc;
    rc = PMPI_Comm_group(MPI_COMM_WORLD, &world);
    if (rc == MPI_SUCCESS) {
        rc = PMPI_Group_translate_ranks(world, 1, &grank, group, crank);
        PMPI_Group_free(&world);
    }
    PMPI_Group_free(&group);
    return rc;
}

MPIX_EXPORT int MPIX_Cart_comm_create(MPI_Comm * cart_comm)
{
    bgl_nm_partition_t p;
    int loc[4], rc;
    MPI_Comm ordered;
    if (cart_comm == NULL)
        return MPI_ERR_ARG;
    *cart_comm = MPI_COMM_NULL;
    if (!partition(&p) ||
        bgl_nm_topo_location(MPIDI_BGL_global.session, (uint32_t) MPIR_Process.rank, loc) != 0)
        return MPI_ERR_OTHER;
    /* [T, Z, Y, X], x fastest: Cartesian rank = x + X * (y + Y * (z + Z * t)). */
    const int dims[4] = { p.tasks_per_node, p.extent[2], p.extent[1], p.extent[0] };
    const int periods[4] = { 1, p.torus[2], p.torus[1], p.torus[0] };
    if (dims[0] * dims[1] * dims[2] * dims[3] != MPIR_Process.size)
        return MPI_ERR_TOPOLOGY;
    const int key = loc[0] + p.extent[0] * (loc[1] + p.extent[1] * (loc[2] + p.extent[2] * loc[3]));
    if ((rc = PMPI_Comm_split(MPI_COMM_WORLD, 0, key, &ordered)) != MPI_SUCCESS)
        return rc;
    rc = PMPI_Cart_create(ordered, 4, dims, periods, 0, cart_comm);
    PMPI_Comm_free(&ordered);
    return rc;
}

MPIX_EXPORT unsigned MPIX_torus2rank(unsigned x, unsigned y, unsigned z, unsigned t)
{
    int coords[4] = { (int) x, (int) y, (int) z, (int) t }, rank;
    if (x > INT_MAX || y > INT_MAX || z > INT_MAX || t > INT_MAX ||
        MPIX_Torus2rank(coords, &rank) != MPI_SUCCESS || rank == MPI_UNDEFINED)
        return (unsigned) -1;
    return (unsigned) rank;
}

MPIX_EXPORT void MPIX_rank2torus(unsigned rank, unsigned *x, unsigned *y, unsigned *z,
                                 unsigned *t)
{
    int c[4];
    if (rank > INT_MAX || MPIX_Rank2torus((int) rank, c) != MPI_SUCCESS)
        c[0] = c[1] = c[2] = c[3] = -1;
    *x = (unsigned) c[0];
    *y = (unsigned) c[1];
    *z = (unsigned) c[2];
    *t = (unsigned) c[3];
}

MPIX_EXPORT unsigned MPIX_Comm_torus2rank(MPI_Comm comm, unsigned x, unsigned y, unsigned z,
                                          unsigned t)
{
    const unsigned world = MPIX_torus2rank(x, y, z, t);
    int crank;
    if (world == (unsigned) -1)
        return world;
    if (global2comm(comm, (int) world, &crank) != MPI_SUCCESS)
        return (unsigned) -1;
    return (unsigned) crank;
}

MPIX_EXPORT void MPIX_Comm_rank2torus(MPI_Comm comm, unsigned rank, unsigned *x, unsigned *y,
                                      unsigned *z, unsigned *t)
{
    int world;
    if (rank > INT_MAX || MPIX_Comm_rank2global(comm, (int) rank, &world) != MPI_SUCCESS) {
        *x = *y = *z = *t = (unsigned) -1;
        return;
    }
    MPIX_rank2torus((unsigned) world, x, y, z, t);
}

/* ---- Fortran (gfortran's names: lower case, one trailing underscore) ---- */

MPIX_EXPORT void mpix_hardware_(MPI_Fint * hw, MPI_Fint * ierr);
MPIX_EXPORT void mpix_torus_ndims_(MPI_Fint * ndims, MPI_Fint * ierr);
MPIX_EXPORT void mpix_rank2torus_(MPI_Fint * rank, MPI_Fint * coords, MPI_Fint * ierr);
MPIX_EXPORT void mpix_torus2rank_(MPI_Fint * coords, MPI_Fint * rank, MPI_Fint * ierr);
MPIX_EXPORT void mpix_comm_rank2global_(MPI_Fint * comm, MPI_Fint * crank, MPI_Fint * grank,
                                        MPI_Fint * ierr);
MPIX_EXPORT void mpix_cart_comm_create_(MPI_Fint * cart_comm, MPI_Fint * ierr);

/* hw(1..25): the fields of MPIX_Hardware_t in order (mpixf.h names the indices). */
void mpix_hardware_(MPI_Fint * hw, MPI_Fint * ierr)
{
    MPIX_Hardware_t h;
    *ierr = MPIX_Hardware(&h);
    if (*ierr != MPI_SUCCESS)
        return;
    const unsigned *fields = (const unsigned *) &h;
    for (size_t i = 0; i < sizeof(h) / sizeof(unsigned); i++)
        hw[i] = (MPI_Fint) fields[i];
}

void mpix_torus_ndims_(MPI_Fint * ndims, MPI_Fint * ierr)
{
    int n = 0;
    *ierr = MPIX_Torus_ndims(&n);
    *ndims = n;
}

void mpix_rank2torus_(MPI_Fint * rank, MPI_Fint * coords, MPI_Fint * ierr)
{
    int c[4];
    *ierr = MPIX_Rank2torus(*rank, c);
    if (*ierr == MPI_SUCCESS)
        for (int i = 0; i < 4; i++)
            coords[i] = c[i];
}

void mpix_torus2rank_(MPI_Fint * coords, MPI_Fint * rank, MPI_Fint * ierr)
{
    int c[4] = { coords[0], coords[1], coords[2], coords[3] }, r = MPI_UNDEFINED;
    *ierr = MPIX_Torus2rank(c, &r);
    *rank = r;
}

void mpix_comm_rank2global_(MPI_Fint * comm, MPI_Fint * crank, MPI_Fint * grank,
                            MPI_Fint * ierr)
{
    int g = MPI_UNDEFINED;
    *ierr = MPIX_Comm_rank2global(MPI_Comm_f2c(*comm), *crank, &g);
    *grank = g;
}

void mpix_cart_comm_create_(MPI_Fint * cart_comm, MPI_Fint * ierr)
{
    MPI_Comm c = MPI_COMM_NULL;
    *ierr = MPIX_Cart_comm_create(&c);
    *cart_comm = MPI_Comm_c2f(c);
}
