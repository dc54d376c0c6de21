/*
 * Torus-aware process topologies (see bgl_topo.h): MPICH's topology hooks, MPII_Topo_ops on
 * every intracommunicator (cartMap, graphMap; mpich_patches/0003 makes MPI_Cart_create and
 * MPI_Graph_create with reorder use them too) and MPIR_Process.dimsCreate, over libbglml's
 * placement. Every rank computes the whole placement from the communicator's task locations,
 * which all ranks know alike, so no communication is needed.
 */

#include "bgl_impl.h"
#include "bgl_topo.h"
#include <bgl_nm_topo.h>

static int topo_enabled = 1;

/* Task (world rank) of every rank of comm. */
static int comm_tasks(const MPIR_Comm * comm, uint32_t ** tasks_out)
{
    int mpi_errno = MPI_SUCCESS;
    int n = comm->local_size;
    uint32_t *tasks = MPL_malloc(sizeof(uint32_t) * (size_t) (n > 0 ? n : 1), MPL_MEM_COMM);
    MPIR_ERR_CHKANDJUMP(tasks == NULL, mpi_errno, MPI_ERR_OTHER, "**nomem");
    for (int i = 0; i < n; i++) {
        int lpid, avtid;
        MPIDIU_comm_rank_to_pid((MPIR_Comm *) comm, i, &lpid, &avtid);
        tasks[i] = (uint32_t) lpid;
    }
    *tasks_out = tasks;
  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* This rank's position in rank_of_pos[0..m), or MPI_UNDEFINED. */
static int my_position(const MPIR_Comm * comm, const int *rank_of_pos, int m)
{
    for (int p = 0; p < m; p++)
        if (rank_of_pos[p] == comm->rank)
            return p;
    return MPI_UNDEFINED;
}

static int cart_map(const MPIR_Comm * comm, int ndims, const int dims[], const int periods[],
                    int *newrank)
{
    int mpi_errno = MPI_SUCCESS;
    uint32_t *tasks = NULL;
    int *rank_of_pos = NULL;
    long m = 1;

    for (int i = 0; i < ndims; i++) {
        if (dims[i] <= 0)       /* MPICH's own routine reports it */
            return MPIR_Cart_map_impl((MPIR_Comm *) comm, ndims, dims, periods, newrank);
        m *= dims[i];
    }
    MPIR_ERR_CHKANDJUMP2(m > comm->local_size, mpi_errno, MPI_ERR_DIMS, "**topotoolarge",
                         "**topotoolarge %d %d", comm->local_size, (int) m);
    if (ndims == 0)
        return MPIR_Cart_map_impl((MPIR_Comm *) comm, ndims, dims, periods, newrank);

    mpi_errno = comm_tasks(comm, &tasks);
    MPIR_ERR_CHECK(mpi_errno);
    rank_of_pos = MPL_malloc(sizeof(int) * (size_t) m, MPL_MEM_COMM);
    MPIR_ERR_CHKANDJUMP(rank_of_pos == NULL, mpi_errno, MPI_ERR_OTHER, "**nomem");
    MPIR_ERR_CHKANDJUMP1(bgl_nm_topo_cart_map(MPIDI_BGL_global.idle, comm->local_size, tasks,
                                              ndims, dims, periods, rank_of_pos) != 0,
                         mpi_errno, MPI_ERR_OTHER, "**fail", "**fail %s", bgl_nm_idle_error());
    *newrank = my_position(comm, rank_of_pos, (int) m);

  fn_exit:
    MPL_free(tasks);
    MPL_free(rank_of_pos);
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

static int graph_map(const MPIR_Comm * comm, int nnodes, const int indx[], const int edges[],
                     int *newrank)
{
    int mpi_errno = MPI_SUCCESS;
    uint32_t *tasks = NULL;
    int *rank_of_pos = NULL;

    if (nnodes <= 0 || nnodes > comm->local_size)       /* MPICH's routine decides */
        return MPIR_Graph_map_impl((MPIR_Comm *) comm, nnodes, indx, edges, newrank);
    for (int i = 0; i < indx[nnodes - 1]; i++)
        if (edges[i] < 0 || edges[i] >= nnodes)
            return MPIR_Graph_map_impl((MPIR_Comm *) comm, nnodes, indx, edges, newrank);

    mpi_errno = comm_tasks(comm, &tasks);
    MPIR_ERR_CHECK(mpi_errno);
    rank_of_pos = MPL_malloc(sizeof(int) * (size_t) nnodes, MPL_MEM_COMM);
    MPIR_ERR_CHKANDJUMP(rank_of_pos == NULL, mpi_errno, MPI_ERR_OTHER, "**nomem");
    MPIR_ERR_CHKANDJUMP1(bgl_nm_topo_graph_map(MPIDI_BGL_global.idle, comm->local_size, tasks,
                                               nnodes, indx, edges, rank_of_pos) != 0,
                         mpi_errno, MPI_ERR_OTHER, "**fail", "**fail %s", bgl_nm_idle_error());
    *newrank = my_position(comm, rank_of_pos, nnodes);

  fn_exit:
    MPL_free(tasks);
    MPL_free(rank_of_pos);
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

static MPII_Topo_ops topo_ops = {
    .cartCreate = NULL,
    .cartMap = cart_map,
    .graphCreate = NULL,
    .graphMap = graph_map,
};

static int dims_create(int nnodes, int ndims, int dims[]);

/* MPICH's answer (and its error checks): its routine with our hook out of the way. */
static int mpich_dims_create(int nnodes, int ndims, int dims[])
{
    MPIR_Process.dimsCreate = NULL;
    int mpi_errno = MPIR_Dims_create_impl(nnodes, ndims, dims);
    MPIR_Process.dimsCreate = dims_create;
    return mpi_errno;
}

/* For the whole job's size, dimensions that fold onto the partition (the most balanced such
 * choice); otherwise, or when none exists, MPICH's. */
static int dims_create(int nnodes, int ndims, int dims[])
{
    int mpi_errno = MPI_SUCCESS;
    int *mine = NULL;
    uint32_t *tasks = NULL;

    if (nnodes != MPIR_Process.size || ndims <= 0 || MPIDI_BGL_global.idle == NULL)
        return mpich_dims_create(nnodes, ndims, dims);
    mine = MPL_malloc(sizeof(int) * (size_t) ndims, MPL_MEM_COMM);
    tasks = MPL_malloc(sizeof(uint32_t) * (size_t) nnodes, MPL_MEM_COMM);
    MPIR_ERR_CHKANDJUMP(mine == NULL || tasks == NULL, mpi_errno, MPI_ERR_OTHER, "**nomem");
    memcpy(mine, dims, sizeof(int) * (size_t) ndims);
    mpi_errno = mpich_dims_create(nnodes, ndims, dims); /* checks the arguments */
    MPIR_ERR_CHECK(mpi_errno);
    for (int i = 0; i < nnodes; i++)
        tasks[i] = (uint32_t) i;
    if (bgl_nm_topo_dims_create(MPIDI_BGL_global.idle, nnodes, tasks, ndims, mine) == 1)
        memcpy(dims, mine, sizeof(int) * (size_t) ndims);

  fn_exit:
    MPL_free(mine);
    MPL_free(tasks);
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

int MPIDI_BGL_topo_init(void)
{
    const char *v = getenv("BGL_NM_TOPO");
    topo_enabled = !(v && strcmp(v, "0") == 0);
    if (topo_enabled)
        MPIR_Process.dimsCreate = dims_create;
    return MPI_SUCCESS;
}

void MPIDI_BGL_topo_comm_init(MPIR_Comm * comm)
{
    if (topo_enabled && comm->comm_kind == MPIR_COMM_KIND__INTRACOMM)
        comm->topo_fns = &topo_ops;
}
