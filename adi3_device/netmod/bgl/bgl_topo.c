#include "bgl_impl.h"
#include "bgl_topo.h"
int MPIDI_BGL_topo_init(void)
{
    return MPI_SUCCESS;
}
