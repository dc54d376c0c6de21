#include "bgl_impl.h"
int MPIDI_BGL_mpix_placeholder(void);
int MPIDI_BGL_mpix_placeholder(void)
{
    return 0;
}
