##
## The bgl netmod (bglemu): included from src/mpid/ch4/netmod/Makefile.mk by tools/build_mpich.sh.
##

if BUILD_CH4_NETMOD_BGL

noinst_HEADERS     += src/mpid/ch4/netmod/bgl/bgl_pre.h \
                      src/mpid/ch4/netmod/bgl/bgl_impl.h \
                      src/mpid/ch4/netmod/bgl/bgl_am.h \
                      src/mpid/ch4/netmod/bgl/bgl_pt2pt.h \
                      src/mpid/ch4/netmod/bgl/bgl_proc.h \
                      src/mpid/ch4/netmod/bgl/bgl_coll.h \
                      src/mpid/ch4/netmod/bgl/bgl_noinline.h \
                      src/mpid/ch4/netmod/bgl/netmod_inline.h \
                      src/mpid/ch4/netmod/bgl/bgl_topo.h

mpi_core_sources   += src/mpid/ch4/netmod/bgl/func_table.c \
                      src/mpid/ch4/netmod/bgl/bgl_init.c \
                      src/mpid/ch4/netmod/bgl/bgl_send.c \
                      src/mpid/ch4/netmod/bgl/bgl_recv.c \
                      src/mpid/ch4/netmod/bgl/bgl_pt2pt.c \
                      src/mpid/ch4/netmod/bgl/bgl_progress.c \
                      src/mpid/ch4/netmod/bgl/bgl_coll.c \
                      src/mpid/ch4/netmod/bgl/bgl_noinline.c \
                      src/mpid/ch4/netmod/bgl/bgl_topo.c \
                      src/mpid/ch4/netmod/bgl/bgl_mpix.c

endif
