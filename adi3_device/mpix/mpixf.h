! mpixf.h: constants of the Blue Gene extensions for Fortran (mpif.h or
! "use mpi" programs) with bglemu's MPICH; see mpix.h for the semantics.
! The subroutines (all end with an INTEGER ierr):
!   MPIX_HARDWARE(hw, ierr)         INTEGER hw(MPIX_HARDWARE_SIZE)
!   MPIX_TORUS_NDIMS(ndims, ierr)
!   MPIX_RANK2TORUS(rank, coords, ierr)    INTEGER coords(4): x y z t
!   MPIX_TORUS2RANK(coords, rank, ierr)
!   MPIX_COMM_RANK2GLOBAL(comm, crank, grank, ierr)
!   MPIX_CART_COMM_CREATE(cart_comm, ierr)
! hw(MPIX_HW_...) holds the fields of C's MPIX_Hardware_t; the
! per-dimension ones start at hw(MPIX_HW_SIZE), hw(MPIX_HW_COORDS) and
! hw(MPIX_HW_ISTORUS), MPIX_TORUS_MAX_DIMS entries each.
      INTEGER MPIX_TORUS_MAX_DIMS, MPIX_HARDWARE_SIZE
      PARAMETER (MPIX_TORUS_MAX_DIMS = 5, MPIX_HARDWARE_SIZE = 25)
      INTEGER MPIX_HW_PRANK, MPIX_HW_PSIZE, MPIX_HW_PPN
      INTEGER MPIX_HW_COREID, MPIX_HW_CLOCKMHZ, MPIX_HW_MEMSIZE
      INTEGER MPIX_HW_TORUS_DIMENSION, MPIX_HW_SIZE, MPIX_HW_COORDS
      INTEGER MPIX_HW_ISTORUS, MPIX_HW_RANKINPSET, MPIX_HW_SIZEOFPSET
      INTEGER MPIX_HW_IDOFPSET
      PARAMETER (MPIX_HW_PRANK = 1, MPIX_HW_PSIZE = 2, MPIX_HW_PPN = 3)
      PARAMETER (MPIX_HW_COREID = 4, MPIX_HW_CLOCKMHZ = 5)
      PARAMETER (MPIX_HW_MEMSIZE = 6, MPIX_HW_TORUS_DIMENSION = 7)
      PARAMETER (MPIX_HW_SIZE = 8, MPIX_HW_COORDS = 13)
      PARAMETER (MPIX_HW_ISTORUS = 18, MPIX_HW_RANKINPSET = 23)
      PARAMETER (MPIX_HW_SIZEOFPSET = 24, MPIX_HW_IDOFPSET = 25)
