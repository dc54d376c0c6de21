! BOZ constants in PARAMETER statements, as the NAS Parallel Benchmarks' randi8.f has them
! (CG, EP, MG, FT): gfortran 10 and later reject them unless the wrapper passes
! -fallow-invalid-boz, as Debian's mpif90.mpich does.
      program boz
      implicit none
      include 'mpif.h'
      integer*8 i246m1
      parameter(i246m1=Z'00003FFFFFFFFFFF')
      integer ierr, rank, nprocs, total
      call MPI_INIT(ierr)
      call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
      call MPI_COMM_SIZE(MPI_COMM_WORLD, nprocs, ierr)
      call MPI_ALLREDUCE(rank, total, 1, MPI_INTEGER, MPI_SUM,
     &                   MPI_COMM_WORLD, ierr)
      if (rank .eq. 0 .and. i246m1 .eq. 70368744177663_8 .and.
     &    total .eq. nprocs * (nprocs - 1) / 2) print '(a)', 'boz: OK'
      call MPI_FINALIZE(ierr)
      end
