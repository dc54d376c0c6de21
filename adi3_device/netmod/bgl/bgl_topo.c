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

/* MPI_Dist_graph_create(_adjacent) with reorder (mpich_patches/0004): every rank's edges
 * (sources[i] -> its degrees[i] destinations) are gathered, the whole graph placed like an
 * MPI_Graph_create graph, and *newcomm is comm split by the new ranks; new_of_old[r] is old
 * rank r's new rank. *newcomm stays NULL (MPICH's placement) when the device's topologies are
 * off or the gathered edges name a rank outside comm: a decision every rank takes alike. */
int MPIDI_BGL_dist_graph_reorder(MPIR_Comm * comm, int n, const int sources[],
                                 const int degrees[], const int destinations[],
                                 MPIR_Comm ** newcomm, int **new_of_old);
int MPIDI_BGL_dist_graph_reorder(MPIR_Comm * comm, int n, const int sources[],
                                 const int degrees[], const int destinations[],
                                 MPIR_Comm ** newcomm, int **new_of_old)
{
    int mpi_errno = MPI_SUCCESS;
    MPIR_Errflag_t errflag = MPIR_ERR_NONE;
    const int size = comm->local_size;
    int nedges = 0, *pairs = NULL, *all = NULL, *index = NULL, *edges = NULL, *fill = NULL;
    int *rank_of_pos = NULL, *perm = NULL;
    MPI_Aint *counts = NULL, *displs = NULL, mine;
    uint32_t *tasks = NULL;

    *newcomm = NULL;
    *new_of_old = NULL;
    if (!topo_enabled || comm->comm_kind != MPIR_COMM_KIND__INTRACOMM ||
        MPIDI_BGL_global.idle == NULL)
        return MPI_SUCCESS;

    for (int i = 0; i < n; i++)
        nedges += degrees[i];
    pairs = MPL_malloc(sizeof(int) * (size_t) (2 * nedges + 1), MPL_MEM_COMM);
    counts = MPL_malloc(sizeof(MPI_Aint) * (size_t) size, MPL_MEM_COMM);
    displs = MPL_malloc(sizeof(MPI_Aint) * (size_t) size, MPL_MEM_COMM);
    MPIR_ERR_CHKANDJUMP(!pairs || !counts || !displs, mpi_errno, MPI_ERR_OTHER, "**nomem");
    for (int i = 0, e = 0; i < n; i++)
        for (int j = 0; j < degrees[i]; j++, e++) {
            pairs[2 * e] = sources[i];
            pairs[2 * e + 1] = destinations[e];
        }
    mine = 2 * nedges;
    mpi_errno = MPIR_Allgather_impl(&mine, 1, MPI_AINT, counts, 1, MPI_AINT, comm, &errflag);
    MPIR_ERR_CHECK(mpi_errno);
    MPI_Aint total = 0;
    for (int r = 0; r < size; r++) {
        displs[r] = total;
        total += counts[r];
    }
    all = MPL_malloc(sizeof(int) * (size_t) (total + 1), MPL_MEM_COMM);
    MPIR_ERR_CHKANDJUMP(!all, mpi_errno, MPI_ERR_OTHER, "**nomem");
    mpi_errno = MPIR_Allgatherv_impl(pairs, mine, MPI_INT, all, counts, displs, MPI_INT, comm,
                                     &errflag);
    MPIR_ERR_CHECK(mpi_errno);
    MPIR_ERR_CHKANDJUMP(errflag, mpi_errno, MPI_ERR_OTHER, "**coll_fail");
    for (MPI_Aint k = 0; k < total; k++)
        if (all[k] < 0 || all[k] >= size)
            goto fn_exit;       /* MPICH's own routine reports it */

    /* The gathered edges as a graph: source -> destinations, CSR. */
    const int m = (int) (total / 2);
    index = MPL_calloc((size_t) size, sizeof(int), MPL_MEM_COMM);
    fill = MPL_calloc((size_t) size + 1, sizeof(int), MPL_MEM_COMM);
    edges = MPL_malloc(sizeof(int) * (size_t) (m + 1), MPL_MEM_COMM);
    rank_of_pos = MPL_malloc(sizeof(int) * (size_t) size, MPL_MEM_COMM);
    perm = MPL_malloc(sizeof(int) * (size_t) size, MPL_MEM_COMM);
    MPIR_ERR_CHKANDJUMP(!index || !fill || !edges || !rank_of_pos || !perm, mpi_errno,
                        MPI_ERR_OTHER, "**nomem");
    for (int e = 0; e < m; e++)
        fill[all[2 * e] + 1]++;
    for (int r = 0; r < size; r++) {
        fill[r + 1] += fill[r];
        index[r] = fill[r + 1];
    }
    for (int e = 0; e < m; e++)
        edges[fill[all[2 * e]]++] = all[2 * e + 1];

    mpi_errno = comm_tasks(comm, &tasks);
    MPIR_ERR_CHECK(mpi_errno);
    MPIR_ERR_CHKANDJUMP1(bgl_nm_topo_graph_map(MPIDI_BGL_global.idle, size, tasks, size, index,
                                               edges, rank_of_pos) != 0,
                         mpi_errno, MPI_ERR_OTHER, "**fail", "**fail %s", bgl_nm_idle_error());
    for (int p = 0; p < size; p++)
        perm[rank_of_pos[p]] = p;
    mpi_errno = MPIR_Comm_split_impl(comm, 0, perm[comm->rank], newcomm);
    MPIR_ERR_CHECK(mpi_errno);
    *new_of_old = perm;
    perm = NULL;

  fn_exit:
    MPL_free(pairs);
    MPL_free(counts);
    MPL_free(displs);
    MPL_free(all);
    MPL_free(index);
    MPL_free(fill);
    MPL_free(edges);
    MPL_free(rank_of_pos);
    MPL_free(perm);
    MPL_free(tasks);
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
