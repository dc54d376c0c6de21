/*
 * The bgl netmod: collective hooks. MPICH's AM fallbacks implement every collective entry point
 * with MPICH's own algorithms (MPIR_<Coll>_impl over our active messages). For the blocking
 * collectives BG/L accelerated (barrier, broadcast, reduce, allreduce, allgather, alltoall) the
 * netmod's entry points first offer the operation to the collectives library through
 * MPIDI_BGL_coll (filled by that library when it initialises; all NULL until then): a hook
 * that has an algorithm for the communicator and arguments runs it and sets *handled;
 * otherwise MPICH's algorithm runs.
 */

#ifndef BGL_COLL_H_INCLUDED
#define BGL_COLL_H_INCLUDED

typedef struct {
  int (*barrier)(MPIR_Comm* comm, MPIR_Errflag_t* errflag, int* handled);
  int (*bcast)(void* buffer, MPI_Aint count, MPI_Datatype datatype, int root, MPIR_Comm* comm,
               MPIR_Errflag_t* errflag, int* handled);
  int (*reduce)(const void* sendbuf, void* recvbuf, MPI_Aint count, MPI_Datatype datatype,
                MPI_Op op, int root, MPIR_Comm* comm, MPIR_Errflag_t* errflag, int* handled);
  int (*allreduce)(const void* sendbuf, void* recvbuf, MPI_Aint count, MPI_Datatype datatype,
                   MPI_Op op, MPIR_Comm* comm, MPIR_Errflag_t* errflag, int* handled);
  int (*allgather)(const void* sendbuf, MPI_Aint sendcount, MPI_Datatype sendtype, void* recvbuf,
                   MPI_Aint recvcount, MPI_Datatype recvtype, MPIR_Comm* comm,
                   MPIR_Errflag_t* errflag, int* handled);
  int (*alltoall)(const void* sendbuf, MPI_Aint sendcount, MPI_Datatype sendtype, void* recvbuf,
                  MPI_Aint recvcount, MPI_Datatype recvtype, MPIR_Comm* comm,
                  MPIR_Errflag_t* errflag, int* handled);
} MPIDI_BGL_coll_t;

extern MPIDI_BGL_coll_t MPIDI_BGL_coll;

int MPIDI_BGL_barrier_hook(MPIR_Comm* comm, MPIR_Errflag_t* errflag);
int MPIDI_BGL_bcast_hook(void* buffer, MPI_Aint count, MPI_Datatype datatype, int root,
                         MPIR_Comm* comm, MPIR_Errflag_t* errflag);
int MPIDI_BGL_reduce_hook(const void* sendbuf, void* recvbuf, MPI_Aint count, MPI_Datatype datatype,
                          MPI_Op op, int root, MPIR_Comm* comm, MPIR_Errflag_t* errflag);
int MPIDI_BGL_allreduce_hook(const void* sendbuf, void* recvbuf, MPI_Aint count,
                             MPI_Datatype datatype, MPI_Op op, MPIR_Comm* comm,
                             MPIR_Errflag_t* errflag);
int MPIDI_BGL_allgather_hook(const void* sendbuf, MPI_Aint sendcount, MPI_Datatype sendtype,
                             void* recvbuf, MPI_Aint recvcount, MPI_Datatype recvtype,
                             MPIR_Comm* comm, MPIR_Errflag_t* errflag);
int MPIDI_BGL_alltoall_hook(const void* sendbuf, MPI_Aint sendcount, MPI_Datatype sendtype,
                            void* recvbuf, MPI_Aint recvcount, MPI_Datatype recvtype,
                            MPIR_Comm* comm, MPIR_Errflag_t* errflag);

#endif /* BGL_COLL_H_INCLUDED */
