/*
 * The bgl netmod: collective hooks (see bgl_coll.h).
 */

#include "bgl_coll.h"
#include "bgl_impl.h"

MPIDI_BGL_coll_t MPIDI_BGL_coll;

int MPIDI_BGL_barrier_hook(MPIR_Comm* comm, MPIR_Errflag_t* errflag) {
  int handled = 0;
  if (MPIDI_BGL_coll.barrier) {
    int mpi_errno = MPIDI_BGL_coll.barrier(comm, errflag, &handled);
    if (handled) return mpi_errno;
  }
  return MPIR_Barrier_impl(comm, errflag);
}

int MPIDI_BGL_bcast_hook(void* buffer, MPI_Aint count, MPI_Datatype datatype, int root,
                         MPIR_Comm* comm, MPIR_Errflag_t* errflag) {
  int handled = 0;
  if (MPIDI_BGL_coll.bcast) {
    int mpi_errno = MPIDI_BGL_coll.bcast(buffer, count, datatype, root, comm, errflag, &handled);
    if (handled) return mpi_errno;
  }
  return MPIR_Bcast_impl(buffer, count, datatype, root, comm, errflag);
}

int MPIDI_BGL_reduce_hook(const void* sendbuf, void* recvbuf, MPI_Aint count, MPI_Datatype datatype,
                          MPI_Op op, int root, MPIR_Comm* comm, MPIR_Errflag_t* errflag) {
  int handled = 0;
  if (MPIDI_BGL_coll.reduce) {
    int mpi_errno =
        MPIDI_BGL_coll.reduce(sendbuf, recvbuf, count, datatype, op, root, comm, errflag, &handled);
    if (handled) return mpi_errno;
  }
  return MPIR_Reduce_impl(sendbuf, recvbuf, count, datatype, op, root, comm, errflag);
}

int MPIDI_BGL_allreduce_hook(const void* sendbuf, void* recvbuf, MPI_Aint count,
                             MPI_Datatype datatype, MPI_Op op, MPIR_Comm* comm,
                             MPIR_Errflag_t* errflag) {
  int handled = 0;
  if (MPIDI_BGL_coll.allreduce) {
    int mpi_errno =
        MPIDI_BGL_coll.allreduce(sendbuf, recvbuf, count, datatype, op, comm, errflag, &handled);
    if (handled) return mpi_errno;
  }
  return MPIR_Allreduce_impl(sendbuf, recvbuf, count, datatype, op, comm, errflag);
}

int MPIDI_BGL_allgather_hook(const void* sendbuf, MPI_Aint sendcount, MPI_Datatype sendtype,
                             void* recvbuf, MPI_Aint recvcount, MPI_Datatype recvtype,
                             MPIR_Comm* comm, MPIR_Errflag_t* errflag) {
  int handled = 0;
  if (MPIDI_BGL_coll.allgather) {
    int mpi_errno = MPIDI_BGL_coll.allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                             recvtype, comm, errflag, &handled);
    if (handled) return mpi_errno;
  }
  return MPIR_Allgather_impl(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                             errflag);
}

int MPIDI_BGL_alltoall_hook(const void* sendbuf, MPI_Aint sendcount, MPI_Datatype sendtype,
                            void* recvbuf, MPI_Aint recvcount, MPI_Datatype recvtype,
                            MPIR_Comm* comm, MPIR_Errflag_t* errflag) {
  int handled = 0;
  if (MPIDI_BGL_coll.alltoall) {
    int mpi_errno = MPIDI_BGL_coll.alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                            recvtype, comm, errflag, &handled);
    if (handled) return mpi_errno;
  }
  return MPIR_Alltoall_impl(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                            errflag);
}
