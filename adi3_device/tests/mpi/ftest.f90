! Fortran over the bgl device: a ring of messages, Allreduce, Bcast, a derived datatype.
program ftest
  use mpi
  implicit none
  integer :: ierr, rank, size, next, prev, i, errors, total, vec
  integer :: status(MPI_STATUS_SIZE)
  double precision :: sendbuf(5000), recvbuf(5000), s, r
  integer :: strided(100), packed(50)
  character(len=MPI_MAX_PROCESSOR_NAME) :: name
  integer :: namelen

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, size, ierr)
  errors = 0
  next = mod(rank + 1, size)
  prev = mod(rank + size - 1, size)

  call MPI_Get_processor_name(name, namelen, ierr)
  if (name(1:5) /= 'BGL <') errors = errors + 1

  do i = 1, 5000
    sendbuf(i) = rank * 10000 + i
  end do
  call MPI_Sendrecv(sendbuf, 5000, MPI_DOUBLE_PRECISION, next, 1, &
                    recvbuf, 5000, MPI_DOUBLE_PRECISION, prev, 1, MPI_COMM_WORLD, status, ierr)
  do i = 1, 5000
    if (recvbuf(i) /= prev * 10000 + i) errors = errors + 1
  end do

  s = rank + 1
  call MPI_Allreduce(s, r, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (r /= size * (size + 1) / 2) errors = errors + 1

  if (rank == 0) sendbuf = 42.0d0
  call MPI_Bcast(sendbuf, 5000, MPI_DOUBLE_PRECISION, 0, MPI_COMM_WORLD, ierr)
  if (any(sendbuf /= 42.0d0)) errors = errors + 1

  ! every other integer of `strided` from rank 0 to rank 1, received contiguously
  call MPI_Type_vector(50, 1, 2, MPI_INTEGER, vec, ierr)
  call MPI_Type_commit(vec, ierr)
  if (size > 1) then
    if (rank == 0) then
      strided = (/ (i, i = 1, 100) /)
      call MPI_Send(strided, 1, vec, 1, 2, MPI_COMM_WORLD, ierr)
    else if (rank == 1) then
      call MPI_Recv(packed, 50, MPI_INTEGER, 0, 2, MPI_COMM_WORLD, status, ierr)
      do i = 1, 50
        if (packed(i) /= 2 * i - 1) errors = errors + 1
      end do
    end if
  end if
  call MPI_Type_free(vec, ierr)

  call MPI_Allreduce(errors, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    if (total == 0) then
      print '(a,i0,a)', 'ftest: OK (', size, ' ranks, 0 errors)'
    else
      print '(a,i0,a)', 'ftest: FAILED (', total, ' errors)'
    end if
  end if
  call MPI_Finalize(ierr)
  if (total /= 0) stop 1
end program ftest
