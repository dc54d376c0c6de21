/*
 * The bgl netmod: collective hooks. MPICH's AM fallbacks implement every collective entry point
 * with MPICH's own algorithms (MPIR_<Coll>_impl over our active messages). For the blocking
 * collectives BG/L accelerated (barrier, broadcast, reduce, allreduce, allgather, alltoall) the
 * netmod's entry points first offer the operation to bglemu's collectives library through the C
 * hooks of libbglml (bgl_coll_hooks.h): translated to job ranks, contiguous bytes and predefined
 * element types and operations. A hook that has an algorithm runs it; one that answers
 * BGL_COLL_NOT_HANDLED (and every case the translation cannot express) runs MPICH's algorithm.
 */

#ifndef BGL_COLL_H_INCLUDED
#define BGL_COLL_H_INCLUDED

int MPIDI_BGL_coll_init(void);
void MPIDI_BGL_coll_finalize(void);
void MPIDI_BGL_coll_comm_free(MPIR_Comm * comm);

int MPIDI_BGL_barrier_hook(MPIR_Comm * comm, MPIR_Errflag_t * errflag);
int MPIDI_BGL_bcast_hook(void *buffer, MPI_Aint count, MPI_Datatype datatype, int root,
                         MPIR_Comm * comm, MPIR_Errflag_t * errflag);
int MPIDI_BGL_reduce_hook(const void *sendbuf, void *recvbuf, MPI_Aint count,
                          MPI_Datatype datatype, MPI_Op op, int root, MPIR_Comm * comm,
                          MPIR_Errflag_t * errflag);
int MPIDI_BGL_allreduce_hook(const void *sendbuf, void *recvbuf, MPI_Aint count,
                             MPI_Datatype datatype, MPI_Op op, MPIR_Comm * comm,
                             MPIR_Errflag_t * errflag);
int MPIDI_BGL_allgather_hook(const void *sendbuf, MPI_Aint sendcount, MPI_Datatype sendtype,
                             void *recvbuf, MPI_Aint recvcount, MPI_Datatype recvtype,
                             MPIR_Comm * comm, MPIR_Errflag_t * errflag);
int MPIDI_BGL_alltoall_hook(const void *sendbuf, MPI_Aint sendcount, MPI_Datatype sendtype,
                            void *recvbuf, MPI_Aint recvcount, MPI_Datatype recvtype,
                            MPIR_Comm * comm, MPIR_Errflag_t * errflag);

#endif /* BGL_COLL_H_INCLUDED */
