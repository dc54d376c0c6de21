! The Blue Gene extensions from Fortran (mpif.h style, as BG-era codes used them):
! mpix_hardware, mpix_torus_ndims, mpix_rank2torus, mpix_torus2rank,
! mpix_comm_rank2global and mpix_cart_comm_create, against the mapping
! given as argument 1 (an order such as XYZT or TXYZ, x fastest).
program fmpix
  implicit none
  include 'mpif.h'
  include 'mpixf.h'
  integer :: ierr, rank, size, nd, r, back, d, errors, total, extent, rest
  integer :: hw(MPIX_HARDWARE_SIZE), c(4), want(4), ext(4), cart, crank
  integer :: half, hrank, grank, cdims(4), cper(4), ccoords(4)
  character(len=8) :: order

  call mpi_init(ierr)
  call mpi_comm_rank(MPI_COMM_WORLD, rank, ierr)
  call mpi_comm_size(MPI_COMM_WORLD, size, ierr)
  call get_command_argument(1, order)
  errors = 0

  call mpix_hardware(hw, ierr)
  call check(ierr == MPI_SUCCESS, 'mpix_hardware')
  call check(hw(MPIX_HW_TORUS_DIMENSION) == 3, 'torus_dimension')
  call check(hw(MPIX_HW_CLOCKMHZ) == 700, 'clockMHz')
  ext(1:3) = hw(MPIX_HW_SIZE:MPIX_HW_SIZE + 2)
  ext(4) = hw(MPIX_HW_PPN)
  call check(hw(MPIX_HW_PSIZE) == ext(1) * ext(2) * ext(3) * ext(4), 'psize')
  call mpix_torus_ndims(nd, ierr)
  call check(ierr == MPI_SUCCESS .and. nd == 3, 'mpix_torus_ndims')

  do r = 0, size - 1
    rest = r
    do d = 1, len_trim(order)
      select case (order(d:d))
      case ('X'); extent = ext(1); want(1) = mod(rest, extent)
      case ('Y'); extent = ext(2); want(2) = mod(rest, extent)
      case ('Z'); extent = ext(3); want(3) = mod(rest, extent)
      case default; extent = ext(4); want(4) = mod(rest, extent)
      end select
      rest = rest / extent
    end do
    if (index(order, 'T') == 0) want(4) = 0
    call mpix_rank2torus(r, c, ierr)
    call check(ierr == MPI_SUCCESS .and. all(c == want), 'mpix_rank2torus')
    call mpix_torus2rank(want, back, ierr)
    call check(ierr == MPI_SUCCESS .and. back == r, 'mpix_torus2rank')
    if (r == rank) then
      call check(all(hw(MPIX_HW_COORDS:MPIX_HW_COORDS + 2) == want(1:3)), 'Coords')
      call check(hw(MPIX_HW_COREID) == want(4), 'coreID')
    end if
  end do
  call mpix_rank2torus(size, c, ierr)
  call check(ierr == MPI_ERR_RANK, 'rank out of range')

  ! rank 0 of the reversed communicator is the last world rank
  call mpi_comm_split(MPI_COMM_WORLD, 0, -rank, half, ierr)
  call mpix_comm_rank2global(half, 0, grank, ierr)
  call check(ierr == MPI_SUCCESS .and. grank == size - 1, 'mpix_comm_rank2global')
  call mpi_comm_free(half, ierr)

  call mpix_cart_comm_create(cart, ierr)
  if (size == hw(MPIX_HW_PSIZE)) then
    call check(ierr == MPI_SUCCESS, 'mpix_cart_comm_create')
    call mpi_cart_get(cart, 4, cdims, cper, ccoords, ierr)
    call mpi_comm_rank(cart, crank, ierr)
    call mpix_rank2torus(rank, c, ierr)
    call check(all(ccoords == (/ c(4), c(3), c(2), c(1) /)), 'cart coordinates')
    call check(all(cdims == (/ ext(4), ext(3), ext(2), ext(1) /)), 'cart dims')
    call mpi_comm_free(cart, ierr)
  else
    call check(ierr == MPI_ERR_TOPOLOGY, 'partial partition')
  end if

  call mpi_allreduce(errors, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    if (total == 0) then
      print '(a,i0,a)', 'fmpix: OK (', size, ' ranks)'
    else
      print '(a,i0,a)', 'fmpix: FAILED (', total, ' errors)'
    end if
  end if
  call mpi_finalize(ierr)
  if (total /= 0) stop 1

contains

  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    if (.not. ok) then
      errors = errors + 1
      if (errors < 20) print '(a,i0,a,a)', 'rank ', rank, ': check failed: ', what
    end if
  end subroutine check

end program fmpix
