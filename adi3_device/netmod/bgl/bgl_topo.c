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
/* Distributed graphs are placed only on request (BGL_NM_TOPO_DIST_GRAPH=1). Placing one renames
 * processes (each keeps its edges, their ranks translated), and codes written against MPICH's
 * identity reorder, MPICH's own tests among them (topo/distgraph1, topo/dgraph_unwgt), pass
 * reorder=1 yet keep using their comm_old ranks for the new communicator. */
static int dist_graph_enabled_by_user = 0;

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
    MPIR_ERR_CHKANDJUMP1(bgl_nm_topo_cart_map(MPIDI_BGL_global.session, comm->local_size, tasks,
                                              ndims, dims, periods, rank_of_pos) != 0,
                         mpi_errno, MPI_ERR_OTHER, "**fail", "**fail %s", bgl_nm_topo_error());
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
    MPIR_ERR_CHKANDJUMP1(bgl_nm_topo_graph_map(MPIDI_BGL_global.session, comm->local_size, tasks,
                                               nnodes, indx, edges, rank_of_pos) != 0,
                         mpi_errno, MPI_ERR_OTHER, "**fail", "**fail %s", bgl_nm_topo_error());
    *newrank = my_position(comm, rank_of_pos, nnodes);

  fn_exit:
    MPL_free(tasks);
    MPL_free(rank_of_pos);
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* Gathers every rank's `count` ints (`mine`) into *all (*total ints, rank order), *starts[r]
 * being where rank r's begin. */
static int allgather_ints(MPIR_Comm * comm, const int *mine, int count, int **all,
                          MPI_Aint ** starts, MPI_Aint * total)
{
    int mpi_errno = MPI_SUCCESS;
    MPIR_Errflag_t errflag = MPIR_ERR_NONE;
    const int size = comm->local_size;
    MPI_Aint n = count, *counts = MPL_malloc(sizeof(MPI_Aint) * (size_t) size, MPL_MEM_COMM);
    *starts = MPL_malloc(sizeof(MPI_Aint) * (size_t) (size + 1), MPL_MEM_COMM);
    *all = NULL;
    MPIR_ERR_CHKANDJUMP(!counts || !*starts, mpi_errno, MPI_ERR_OTHER, "**nomem");
    mpi_errno = MPIR_Allgather_impl(&n, 1, MPI_AINT, counts, 1, MPI_AINT, comm, &errflag);
    MPIR_ERR_CHECK(mpi_errno);
    (*starts)[0] = 0;
    for (int r = 0; r < size; r++)
        (*starts)[r + 1] = (*starts)[r] + counts[r];
    *total = (*starts)[size];
    *all = MPL_malloc(sizeof(int) * (size_t) (*total + 1), MPL_MEM_COMM);
    MPIR_ERR_CHKANDJUMP(!*all, mpi_errno, MPI_ERR_OTHER, "**nomem");
    mpi_errno = MPIR_Allgatherv_impl(mine, n, MPI_INT, *all, counts, *starts, MPI_INT, comm,
                                     &errflag);
    MPIR_ERR_CHECK(mpi_errno);
    MPIR_ERR_CHKANDJUMP(errflag, mpi_errno, MPI_ERR_OTHER, "**coll_fail");
  fn_exit:
    MPL_free(counts);
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* Places the graph of m edges (pairs[2e] -> pairs[2e + 1], ranks of comm) like an
 * MPI_Graph_create graph and splits comm so that the rank placed at graph node j gets rank j.
 * *newcomm stays NULL when an edge names a rank outside comm (MPICH then reports it): every
 * rank sees the same edges, so all decide alike. perm_out (optional): new rank of every old. */
static int place_edges(MPIR_Comm * comm, const int *pairs, int m, MPIR_Comm ** newcomm,
                       int **perm_out)
{
    int mpi_errno = MPI_SUCCESS;
    const int size = comm->local_size;
    int *index = NULL, *edges = NULL, *fill = NULL, *rank_of_pos = NULL, *perm = NULL;
    uint32_t *tasks = NULL;

    for (int k = 0; k < 2 * m; k++)
        if (pairs[k] < 0 || pairs[k] >= size)
            goto fn_exit;
    index = MPL_calloc((size_t) size, sizeof(int), MPL_MEM_COMM);
    fill = MPL_calloc((size_t) size + 1, sizeof(int), MPL_MEM_COMM);
    edges = MPL_malloc(sizeof(int) * (size_t) (m + 1), MPL_MEM_COMM);
    rank_of_pos = MPL_malloc(sizeof(int) * (size_t) size, MPL_MEM_COMM);
    perm = MPL_malloc(sizeof(int) * (size_t) size, MPL_MEM_COMM);
    MPIR_ERR_CHKANDJUMP(!index || !fill || !edges || !rank_of_pos || !perm, mpi_errno,
                        MPI_ERR_OTHER, "**nomem");
    for (int e = 0; e < m; e++)
        fill[pairs[2 * e] + 1]++;
    for (int r = 0; r < size; r++) {
        fill[r + 1] += fill[r];
        index[r] = fill[r + 1];
    }
    for (int e = 0; e < m; e++)
        edges[fill[pairs[2 * e]]++] = pairs[2 * e + 1];

    mpi_errno = comm_tasks(comm, &tasks);
    MPIR_ERR_CHECK(mpi_errno);
    MPIR_ERR_CHKANDJUMP1(bgl_nm_topo_graph_map(MPIDI_BGL_global.session, size, tasks, size, index,
                                               edges, rank_of_pos) != 0,
                         mpi_errno, MPI_ERR_OTHER, "**fail", "**fail %s", bgl_nm_topo_error());
    for (int p = 0; p < size; p++)
        perm[rank_of_pos[p]] = p;
    mpi_errno = MPIR_Comm_split_impl(comm, 0, perm[comm->rank], newcomm);
    MPIR_ERR_CHECK(mpi_errno);
    if (perm_out) {
        *perm_out = perm;
        perm = NULL;
    }

  fn_exit:
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

static int dist_graph_enabled(const MPIR_Comm * comm)
{
    return topo_enabled && dist_graph_enabled_by_user &&
        comm->comm_kind == MPIR_COMM_KIND__INTRACOMM && MPIDI_BGL_global.session != NULL;
}

/* Gathers every rank's edge pairs (old ranks of comm) and places them (place_edges). */
static int place_gathered(MPIR_Comm * comm, const int *pairs, int npairs, MPIR_Comm ** newcomm,
                          int **perm)
{
    int mpi_errno = MPI_SUCCESS, *all = NULL;
    MPI_Aint *starts = NULL, total = 0;

    mpi_errno = allgather_ints(comm, pairs, 2 * npairs, &all, &starts, &total);
    MPIR_ERR_CHECK(mpi_errno);
    mpi_errno = place_edges(comm, all, (int) (total / 2), newcomm, perm);
    MPIR_ERR_CHECK(mpi_errno);

  fn_exit:
    MPL_free(all);
    MPL_free(starts);
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* MPI_Dist_graph_create with reorder (mpich_patches/0004): every edge any rank declared is
 * gathered and the graph placed like an MPI_Graph_create graph. Reordering only renames the
 * processes: MPICH's edge exchange still runs on comm, so every process keeps the edges that
 * name it, and translates their ranks through *perm (new rank of every rank of comm) at the
 * end. *newcomm stays NULL (MPICH's identity placement) when the device's topologies are off
 * or an edge names a rank outside comm. */
int MPIDI_BGL_dist_graph_reorder(MPIR_Comm * comm, int n, const int sources[],
                                 const int degrees[], const int destinations[],
                                 MPIR_Comm ** newcomm, int **perm);
int MPIDI_BGL_dist_graph_reorder(MPIR_Comm * comm, int n, const int sources[],
                                 const int degrees[], const int destinations[],
                                 MPIR_Comm ** newcomm, int **perm)
{
    int mpi_errno = MPI_SUCCESS, nedges = 0, *pairs = NULL;

    *newcomm = NULL;
    *perm = NULL;
    if (!dist_graph_enabled(comm))
        return MPI_SUCCESS;
    for (int i = 0; i < n; i++)
        nedges += degrees[i];
    pairs = MPL_malloc(sizeof(int) * (size_t) (2 * nedges + 1), MPL_MEM_COMM);
    MPIR_ERR_CHKANDJUMP(!pairs, mpi_errno, MPI_ERR_OTHER, "**nomem");
    for (int i = 0, e = 0; i < n; i++)
        for (int j = 0; j < degrees[i]; j++, e++) {
            pairs[2 * e] = sources[i];
            pairs[2 * e + 1] = destinations[e];
        }
    mpi_errno = place_gathered(comm, pairs, nedges, newcomm, perm);
    MPIR_ERR_CHECK(mpi_errno);

  fn_exit:
    MPL_free(pairs);
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* MPI_Dist_graph_create_adjacent with reorder: every rank's in- and out-edges (source -> this
 * rank, this rank -> destination; a consistent graph thus counts each edge twice, which does not
 * change the placement, and one that declares only one side is still placed) are gathered and
 * placed. The process keeps its own lists and weights; MPICH translates their ranks through
 * *perm. *newcomm stays NULL as above. */
int MPIDI_BGL_dist_graph_adjacent_reorder(MPIR_Comm * comm, int indegree, const int sources[],
                                          int outdegree, const int destinations[],
                                          MPIR_Comm ** newcomm, int **perm);
int MPIDI_BGL_dist_graph_adjacent_reorder(MPIR_Comm * comm, int indegree, const int sources[],
                                          int outdegree, const int destinations[],
                                          MPIR_Comm ** newcomm, int **perm)
{
    int mpi_errno = MPI_SUCCESS, *pairs = NULL;
    const int nedges = indegree + outdegree;

    *newcomm = NULL;
    *perm = NULL;
    if (!dist_graph_enabled(comm))
        return MPI_SUCCESS;
    pairs = MPL_malloc(sizeof(int) * (size_t) (2 * nedges + 1), MPL_MEM_COMM);
    MPIR_ERR_CHKANDJUMP(!pairs, mpi_errno, MPI_ERR_OTHER, "**nomem");
    for (int i = 0; i < indegree; i++) {
        pairs[2 * i] = sources[i];
        pairs[2 * i + 1] = comm->rank;
    }
    for (int i = 0; i < outdegree; i++) {
        pairs[2 * (indegree + i)] = comm->rank;
        pairs[2 * (indegree + i) + 1] = destinations[i];
    }
    mpi_errno = place_gathered(comm, pairs, nedges, newcomm, perm);
    MPIR_ERR_CHECK(mpi_errno);

  fn_exit:
    MPL_free(pairs);
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

    if (nnodes != MPIR_Process.size || ndims <= 0 || MPIDI_BGL_global.session == NULL)
        return mpich_dims_create(nnodes, ndims, dims);
    mine = MPL_malloc(sizeof(int) * (size_t) ndims, MPL_MEM_COMM);
    tasks = MPL_malloc(sizeof(uint32_t) * (size_t) nnodes, MPL_MEM_COMM);
    MPIR_ERR_CHKANDJUMP(mine == NULL || tasks == NULL, mpi_errno, MPI_ERR_OTHER, "**nomem");
    memcpy(mine, dims, sizeof(int) * (size_t) ndims);
    mpi_errno = mpich_dims_create(nnodes, ndims, dims); /* checks the arguments */
    MPIR_ERR_CHECK(mpi_errno);
    for (int i = 0; i < nnodes; i++)
        tasks[i] = (uint32_t) i;
    if (bgl_nm_topo_dims_create(MPIDI_BGL_global.session, nnodes, tasks, ndims, mine) == 1)
        memcpy(dims, mine, sizeof(int) * (size_t) ndims);

  fn_exit:
    MPL_free(mine);
    MPL_free(tasks);
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

/* A switch in MPICH's spellings (1/0, yes/no, true/false, on/off; unset or empty keeps *value).
 * A value that is none of them stops MPI_Init with its name rather than silently meaning "off". */
static int env_switch(const char *name, int *value)
{
    int mpi_errno = MPI_SUCCESS;
    static char msg[256];
    const char *v = getenv(name);
    if (v != NULL && *v != '\0' && MPL_env2bool(name, value) < 0) {
        snprintf(msg, sizeof(msg), "%s=%s: expected 0 or 1 (or yes/no, true/false, on/off)",
                 name, getenv(name));
        MPIR_ERR_SETANDJUMP1(mpi_errno, MPI_ERR_OTHER, "**fail", "**fail %s", msg);
    }
  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

int MPIDI_BGL_topo_init(void)
{
    int mpi_errno = MPI_SUCCESS;
    topo_enabled = 1;
    dist_graph_enabled_by_user = 0;
    mpi_errno = env_switch("BGL_NM_TOPO", &topo_enabled);
    MPIR_ERR_CHECK(mpi_errno);
    mpi_errno = env_switch("BGL_NM_TOPO_DIST_GRAPH", &dist_graph_enabled_by_user);
    MPIR_ERR_CHECK(mpi_errno);
    if (topo_enabled)
        MPIR_Process.dimsCreate = dims_create;
  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

void MPIDI_BGL_topo_comm_init(MPIR_Comm * comm)
{
    if (topo_enabled && comm->comm_kind == MPIR_COMM_KIND__INTRACOMM)
        comm->topo_fns = &topo_ops;
}
