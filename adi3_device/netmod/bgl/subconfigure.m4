[#] start of __file__
dnl MPICH_SUBCFG_AFTER=src/mpid/ch4

dnl The bgl netmod: CH4 active messages over the bglemu message layer (libbglml, a C ABI over
dnl the emulator's C++ libraries). --with-bgl=PREFIX names where bgl/message_layer/bgl_msg.h,
dnl libbglml's headers (bgl_coll_hooks.h, bgl_nm_topo.h, bgl_nm_trace.h) and libbglml.so are;
dnl tools/build_mpich.sh passes the MPICH prefix itself.

AC_DEFUN([PAC_SUBCFG_PREREQ_]PAC_SUBCFG_AUTO_SUFFIX,[
    AM_COND_IF([BUILD_CH4],[
        for net in $ch4_netmods ; do
            AS_CASE([$net],[bgl],[build_ch4_netmod_bgl=yes])
            if test $net = "bgl" ; then
                AC_DEFINE(HAVE_CH4_NETMOD_BGL,1,[bgl netmod is built])
                if test "$build_ch4_locality_info" != "yes" ; then
                    AC_DEFINE(MPIDI_BUILD_CH4_LOCALITY_INFO, 1, [CH4 should build locality info])
                    build_ch4_locality_info="yes"
                fi
            fi
        done
    ])
    AM_CONDITIONAL([BUILD_CH4_NETMOD_BGL],[test "X$build_ch4_netmod_bgl" = "Xyes"])
])dnl

AC_DEFUN([PAC_SUBCFG_BODY_]PAC_SUBCFG_AUTO_SUFFIX,[
AM_COND_IF([BUILD_CH4_NETMOD_BGL],[
    AC_MSG_NOTICE([RUNNING CONFIGURE FOR ch4:bgl])
    AC_ARG_WITH([bgl],
                AS_HELP_STRING([--with-bgl=PREFIX],[bglemu message layer (include/bgl/message_layer/bgl_msg.h, lib/libbglml.so)]),
                [],[with_bgl=no])
    if test "X$with_bgl" != "Xno" -a "X$with_bgl" != "Xyes" ; then
        PAC_APPEND_FLAG([-I${with_bgl}/include], [CPPFLAGS])
        PAC_APPEND_FLAG([-L${with_bgl}/lib], [LDFLAGS])
        PAC_APPEND_FLAG([-Wl,-rpath,${with_bgl}/lib], [LDFLAGS])
    fi
    AC_CHECK_HEADER([bgl/message_layer/bgl_msg.h],[],[AC_MSG_ERROR([bgl/message_layer/bgl_msg.h not found: pass --with-bgl=PREFIX])])
    AC_CHECK_LIB([bglml],[bgl_msg_init],[],[AC_MSG_ERROR([libbglml not found: pass --with-bgl=PREFIX])])
    PAC_LIBS_ADD([-lbglml])
])dnl end AM_COND_IF(BUILD_CH4_NETMOD_BGL,...)
])dnl end _BODY

[#] end of __file__
