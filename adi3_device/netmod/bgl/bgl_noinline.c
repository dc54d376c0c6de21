/*
 * The bgl netmod: the non-inline entry points that need nothing of their own. Windows,
 * partitioned communication and memory allocation are MPIDIG's (over our active messages);
 * hooks have nothing to do; dynamic processes are not supported (as in UCX 4.0.2).
 */

#include "bgl_impl.h"
#include "bgl_noinline.h"
#include "bgl_coll.h"
#include "bgl_topo.h"

int MPIDI_BGL_comm_set_hints(MPIR_Comm * comm_ptr, MPIR_Info * info)
{
    return MPI_SUCCESS;
}

int MPIDI_BGL_get_local_upids(MPIR_Comm * comm, int **local_upid_size, char **local_upids)
{
    int mpi_errno = MPI_SUCCESS;
    MPIR_ERR_SET1(mpi_errno, MPI_ERR_OTHER, "**notimpl", "**notimpl %s", __func__);
    return mpi_errno;
}

int MPIDI_BGL_upids_to_gpids(int size, int *remote_upid_size, char *remote_upids,
                             uint64_t * remote_gpids)
{
    int mpi_errno = MPI_SUCCESS;
    MPIR_ERR_SET1(mpi_errno, MPI_ERR_OTHER, "**notimpl", "**notimpl %s", __func__);
    return mpi_errno;
}

int MPIDI_BGL_dynamic_send(uint64_t remote_gpid, int tag, const void *buf, int size, int timeout)
{
    int mpi_errno = MPI_SUCCESS;
    MPIR_ERR_SET1(mpi_errno, MPI_ERR_OTHER, "**notimpl", "**notimpl %s", __func__);
    return mpi_errno;
}

int MPIDI_BGL_dynamic_recv(int tag, void *buf, int size, int timeout)
{
    int mpi_errno = MPI_SUCCESS;
    MPIR_ERR_SET1(mpi_errno, MPI_ERR_OTHER, "**notimpl", "**notimpl %s", __func__);
    return mpi_errno;
}

int MPIDI_BGL_mpi_comm_commit_pre_hook(MPIR_Comm * comm)
{
    /* the collective hooks' view of the communicator is built on its first collective */
    comm->dev.ch4.netmod.bgl.coll_state = 0;
    comm->dev.ch4.netmod.bgl.world_ranks = NULL;
    comm->dev.ch4.netmod.bgl.whole_job = 0;
    MPIDI_BGL_topo_comm_init(comm);
    return MPI_SUCCESS;
}

int MPIDI_BGL_mpi_comm_commit_post_hook(MPIR_Comm * comm)
{
    return MPI_SUCCESS;
}

int MPIDI_BGL_mpi_comm_free_hook(MPIR_Comm * comm)
{
    MPIDI_BGL_coll_comm_free(comm);
    return MPI_SUCCESS;
}

int MPIDI_BGL_mpi_win_create_hook(MPIR_Win * win)
{
    return MPI_SUCCESS;
}

int MPIDI_BGL_mpi_win_allocate_hook(MPIR_Win * win)
{
    return MPI_SUCCESS;
}

int MPIDI_BGL_mpi_win_allocate_shared_hook(MPIR_Win * win)
{
    return MPI_SUCCESS;
}

int MPIDI_BGL_mpi_win_create_dynamic_hook(MPIR_Win * win)
{
    return MPI_SUCCESS;
}

int MPIDI_BGL_mpi_win_attach_hook(MPIR_Win * win, void *base, MPI_Aint size)
{
    return MPI_SUCCESS;
}

int MPIDI_BGL_mpi_win_detach_hook(MPIR_Win * win, const void *base)
{
    return MPI_SUCCESS;
}

int MPIDI_BGL_mpi_win_free_hook(MPIR_Win * win)
{
    return MPI_SUCCESS;
}

int MPIDI_BGL_mpi_psend_init(const void *buf, int partitions, MPI_Aint count,
                             MPI_Datatype datatype, int rank, int tag, MPIR_Comm * comm,
                             MPIR_Info * info, MPIDI_av_entry_t * av, MPIR_Request ** req_p)
{
    return MPIDIG_mpi_psend_init(buf, partitions, count, datatype, rank, tag, comm, info, req_p);
}

int MPIDI_BGL_mpi_precv_init(void *buf, int partitions, MPI_Aint count, MPI_Datatype datatype,
                             int rank, int tag, MPIR_Comm * comm, MPIR_Info * info,
                             MPIDI_av_entry_t * av, MPIR_Request ** req_p)
{
    return MPIDIG_mpi_precv_init(buf, partitions, count, datatype, rank, tag, comm, info, req_p);
}

void *MPIDI_BGL_mpi_alloc_mem(MPI_Aint size, MPIR_Info * info)
{
    return MPIDIG_mpi_alloc_mem(size, info);
}

int MPIDI_BGL_mpi_free_mem(void *ptr)
{
    return MPIDIG_mpi_free_mem(ptr);
}

int MPIDI_BGL_mpi_win_set_info(MPIR_Win * win, MPIR_Info * info)
{
    return MPIDIG_mpi_win_set_info(win, info);
}

int MPIDI_BGL_mpi_win_get_info(MPIR_Win * win, MPIR_Info ** info_p)
{
    return MPIDIG_mpi_win_get_info(win, info_p);
}

int MPIDI_BGL_mpi_win_free(MPIR_Win ** win_p)
{
    return MPIDIG_mpi_win_free(win_p);
}

int MPIDI_BGL_mpi_win_create(void *base, MPI_Aint length, int disp_unit, MPIR_Info * info,
                             MPIR_Comm * comm_ptr, MPIR_Win ** win_p)
{
    return MPIDIG_mpi_win_create(base, length, disp_unit, info, comm_ptr, win_p);
}

int MPIDI_BGL_mpi_win_attach(MPIR_Win * win, void *base, MPI_Aint size)
{
    return MPIDIG_mpi_win_attach(win, base, size);
}

int MPIDI_BGL_mpi_win_allocate_shared(MPI_Aint size, int disp_unit, MPIR_Info * info,
                                      MPIR_Comm * comm_ptr, void **baseptr_p, MPIR_Win ** win_p)
{
    return MPIDIG_mpi_win_allocate_shared(size, disp_unit, info, comm_ptr, baseptr_p, win_p);
}

int MPIDI_BGL_mpi_win_detach(MPIR_Win * win, const void *base)
{
    return MPIDIG_mpi_win_detach(win, base);
}

int MPIDI_BGL_mpi_win_allocate(MPI_Aint size, int disp_unit, MPIR_Info * info, MPIR_Comm * comm,
                               void *baseptr, MPIR_Win ** win_p)
{
    return MPIDIG_mpi_win_allocate(size, disp_unit, info, comm, baseptr, win_p);
}

int MPIDI_BGL_mpi_win_create_dynamic(MPIR_Info * info, MPIR_Comm * comm, MPIR_Win ** win_p)
{
    return MPIDIG_mpi_win_create_dynamic(info, comm, win_p);
}

int MPIDI_BGL_mpi_type_commit_hook(MPIR_Datatype * datatype_p)
{
    return MPI_SUCCESS;
}

int MPIDI_BGL_mpi_type_free_hook(MPIR_Datatype * datatype_p)
{
    return MPI_SUCCESS;
}

int MPIDI_BGL_mpi_op_commit_hook(MPIR_Op * op_p)
{
    return MPI_SUCCESS;
}

int MPIDI_BGL_mpi_op_free_hook(MPIR_Op * op_p)
{
    return MPI_SUCCESS;
}
