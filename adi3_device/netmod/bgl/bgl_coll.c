/*
 * The bgl netmod: collective hooks (see bgl_coll.h and libbglml's bgl_coll_hooks.h).
 *
 * Every rank of a communicator must take the same decision (library or MPICH) for the same
 * call, so the decision depends only on what MPI makes all ranks agree on: the communicator, the
 * root, the number of bytes (type signatures match), the predefined operation and element type.
 * A non-contiguous buffer is therefore not a reason to fall back: it is packed into a contiguous
 * temporary buffer (and unpacked after), so one rank's vector type and another's contiguous type
 * for the same data still meet in the same algorithm. Reductions need a predefined element type
 * and operation (a derived type or user operation goes to MPICH on every rank, as MPI requires
 * the same datatype and operation on all of them).
 */

#include "bgl_impl.h"
#include "bgl_coll.h"
#include <bgl_coll_hooks.h>

static int hooks_enabled;

#define MPIDI_BGL_COMM(comm) ((comm)->dev.ch4.netmod.bgl)

static int coll_progress(void *context, int wait)
{
    /* the library waits through the device's progress: it runs MPICH's active messages that
     * arrive meanwhile, and waits as a blocking MPI call does when asked to */
    int made;
    int mpi_errno = MPIDI_BGL_progress_round(wait ? MPIDI_BGL_IDLE_WAIT : MPIDI_BGL_IDLE_NONE,
                                             &made);
    if (mpi_errno != MPI_SUCCESS)
        return BGL_MSG_ERR_INTERNAL;
    return made;
}

int MPIDI_BGL_coll_init(void)
{
    int mpi_errno = MPI_SUCCESS;
    hooks_enabled = 1;
    MPL_env2bool("BGL_NM_COLL_HOOKS", &hooks_enabled);
    if (!hooks_enabled)
        return MPI_SUCCESS;
    bgl_coll_env_t env = {
        .version = BGL_COLL_HOOKS_VERSION,
        .session = MPIDI_BGL_global.session,
        .progress = coll_progress,
        .progress_context = NULL,
    };
    if (bgl_coll_init(&env) != 0) {
        MPIR_ERR_SETANDJUMP1(mpi_errno, MPI_ERR_OTHER, "**fail", "**fail %s",
                             "the collectives library (bgl_coll_init) failed to initialise");
    }
  fn_exit:
    return mpi_errno;
  fn_fail:
    hooks_enabled = 0;
    goto fn_exit;
}

void MPIDI_BGL_coll_finalize(void)
{
    if (hooks_enabled)
        bgl_coll_finalize();
    hooks_enabled = 0;
}

void MPIDI_BGL_coll_comm_free(MPIR_Comm * comm)
{
    MPIDI_BGL_comm_t *c = &MPIDI_BGL_COMM(comm);
    if (c->coll_state == 1 && hooks_enabled)
        bgl_coll_comm_free((uint32_t) comm->context_id);
    MPL_free(c->world_ranks);
    c->world_ranks = NULL;
    c->coll_state = 0;
}

/* The communicator in the library's terms; 0 when the hooks cannot take it (intercommunicator,
 * ranks of another world). Built once per communicator. */
static int comm_view(MPIR_Comm * comm, bgl_coll_comm_t * v)
{
    MPIDI_BGL_comm_t *c = &MPIDI_BGL_COMM(comm);
    if (!hooks_enabled)
        return 0;
    if (c->coll_state == 0) {
        c->coll_state = -1;
        if (comm->comm_kind != MPIR_COMM_KIND__INTRACOMM)
            return 0;
        uint32_t *ranks = MPL_malloc(comm->local_size * sizeof(uint32_t), MPL_MEM_COMM);
        if (ranks == NULL)
            return 0;
        int identity = 1;
        for (int i = 0; i < comm->local_size; i++) {
            int lpid, avtid;
            MPIDIU_comm_rank_to_pid(comm, i, &lpid, &avtid);
            if (avtid != 0) {
                MPL_free(ranks);
                return 0;
            }
            ranks[i] = (uint32_t) lpid;
            identity &= lpid == i;
        }
        if (identity) {
            MPL_free(ranks);
            ranks = NULL;
        }
        c->world_ranks = ranks;
        c->whole_job = comm->local_size == MPIR_Process.size;
        c->coll_state = 1;
    }
    if (c->coll_state != 1)
        return 0;
    v->id = (uint32_t) comm->context_id;
    v->size = (uint32_t) comm->local_size;
    v->rank = (uint32_t) comm->rank;
    v->world_ranks = c->world_ranks;
    v->whole_job = c->whole_job;
    return 1;
}

static int map_op(MPI_Op op, bgl_coll_op_t * out)
{
    static const struct {
        MPI_Op op;
        bgl_coll_op_t bgl;
    } ops[] = {
        {MPI_SUM, BGL_COLL_SUM}, {MPI_PROD, BGL_COLL_PROD}, {MPI_MAX, BGL_COLL_MAX},
        {MPI_MIN, BGL_COLL_MIN}, {MPI_LAND, BGL_COLL_LAND}, {MPI_LOR, BGL_COLL_LOR},
        {MPI_LXOR, BGL_COLL_LXOR}, {MPI_BAND, BGL_COLL_BAND}, {MPI_BOR, BGL_COLL_BOR},
        {MPI_BXOR, BGL_COLL_BXOR},
    };
    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
        if (ops[i].op == op) {
            *out = ops[i].bgl;
            return 1;
        }
    }
    return 0;
}

/* Predefined integer and floating types by kind and size; the element type and the operation
 * must also fit each other (no bitwise operation on floating point, only bitwise on MPI_BYTE). */
static int map_dtype(MPI_Datatype dt, bgl_coll_op_t op, bgl_coll_dtype_t * out)
{
    static const MPI_Datatype signed_types[] = {
        MPI_SIGNED_CHAR, MPI_SHORT, MPI_INT, MPI_LONG, MPI_LONG_LONG_INT, MPI_LONG_LONG,
        MPI_INT8_T, MPI_INT16_T, MPI_INT32_T, MPI_INT64_T, MPI_AINT, MPI_OFFSET, MPI_COUNT,
        MPI_INTEGER, MPI_INTEGER1, MPI_INTEGER2, MPI_INTEGER4, MPI_INTEGER8,
    };
    static const MPI_Datatype unsigned_types[] = {
        MPI_UNSIGNED_CHAR, MPI_UNSIGNED_SHORT, MPI_UNSIGNED, MPI_UNSIGNED_LONG,
        MPI_UNSIGNED_LONG_LONG, MPI_UINT8_T, MPI_UINT16_T, MPI_UINT32_T, MPI_UINT64_T, MPI_BYTE,
    };
    static const MPI_Datatype float_types[] = {
        MPI_FLOAT, MPI_DOUBLE, MPI_REAL, MPI_DOUBLE_PRECISION, MPI_REAL4, MPI_REAL8,
    };
    int bitwise = op == BGL_COLL_BAND || op == BGL_COLL_BOR || op == BGL_COLL_BXOR;
    MPI_Aint size;

    if (dt == MPI_DATATYPE_NULL || !HANDLE_IS_BUILTIN(dt))
        return 0;
    MPIR_Datatype_get_size_macro(dt, size);
    if (dt == MPI_BYTE && !bitwise)
        return 0;
    for (size_t i = 0; i < sizeof(float_types) / sizeof(float_types[0]); i++) {
        if (float_types[i] == dt) {
            if (bitwise || op == BGL_COLL_LAND || op == BGL_COLL_LOR || op == BGL_COLL_LXOR)
                return 0;
            if (size != 4 && size != 8)
                return 0;
            *out = size == 4 ? BGL_COLL_F32 : BGL_COLL_F64;
            return 1;
        }
    }
    int is_signed = -1;
    for (size_t i = 0; i < sizeof(signed_types) / sizeof(signed_types[0]); i++)
        if (signed_types[i] == dt)
            is_signed = 1;
    for (size_t i = 0; i < sizeof(unsigned_types) / sizeof(unsigned_types[0]); i++)
        if (unsigned_types[i] == dt)
            is_signed = 0;
    if (is_signed < 0)
        return 0;
    switch (size) {
        case 1:
            *out = is_signed ? BGL_COLL_I8 : BGL_COLL_U8;
            return 1;
        case 2:
            *out = is_signed ? BGL_COLL_I16 : BGL_COLL_U16;
            return 1;
        case 4:
            *out = is_signed ? BGL_COLL_I32 : BGL_COLL_U32;
            return 1;
        case 8:
            *out = is_signed ? BGL_COLL_I64 : BGL_COLL_U64;
            return 1;
        default:
            return 0;
    }
}

/* A buffer as contiguous bytes: the buffer itself when its type is contiguous, else a packed
 * temporary copy (pack = 1: filled from the buffer) that unstage() unpacks and frees. */
typedef struct {
    void *bytes;
    MPI_Aint size;
    void *tmp;
    void *buf;
    MPI_Aint count;
    MPI_Datatype dt;
} staged_t;

static int stage(void *buf, MPI_Aint count, MPI_Datatype dt, int pack, staged_t * s)
{
    int dt_contig;
    MPI_Aint data_sz, true_lb;
    MPIR_Datatype *dt_ptr;
    MPIDI_Datatype_get_info(count, dt, dt_contig, data_sz, dt_ptr, true_lb);
    (void) dt_ptr;
    s->size = data_sz;
    s->tmp = NULL;
    s->buf = buf;
    s->count = count;
    s->dt = dt;
    if (dt_contig) {
        s->bytes = MPIR_get_contig_ptr(buf, true_lb);
        return MPI_SUCCESS;
    }
    s->tmp = MPL_malloc(MPL_MAX(data_sz, 1), MPL_MEM_COLL);
    if (s->tmp == NULL)
        return MPI_ERR_NO_MEM;
    s->bytes = s->tmp;
    if (pack) {
        MPI_Aint actual;
        int mpi_errno = MPIR_Typerep_pack(buf, count, dt, 0, s->tmp, data_sz, &actual);
        if (mpi_errno != MPI_SUCCESS)
            return mpi_errno;
    }
    return MPI_SUCCESS;
}

static int unstage(staged_t * s, int unpack)
{
    int mpi_errno = MPI_SUCCESS;
    if (s->tmp) {
        if (unpack) {
            MPI_Aint actual;
            mpi_errno = MPIR_Typerep_unpack(s->tmp, s->size, s->buf, s->count, s->dt, 0, &actual);
        }
        MPL_free(s->tmp);
        s->tmp = NULL;
    }
    return mpi_errno;
}

/* The library's answer as MPI's: done (0), not handled (1: run MPICH's), or an error. An error
 * stops the job at once: the other ranks are inside the same collective and would wait for this
 * one forever (an error returned to MPICH's own collective algorithms, which call the hooks on
 * sub-communicators, is noted and the algorithm goes on), and what fails there (a protocol forced
 * by BGL_ML_PROTOCOL that cannot carry a step's message) is the job's configuration, not
 * something the program handles. */
static int hook_result(int rc, int *handled)
{
    int mpi_errno = MPI_SUCCESS;
    *handled = rc == BGL_COLL_DONE;
    if (rc < 0) {
        char what[MPI_MAX_ERROR_STRING];
        snprintf(what, sizeof(what), "the collectives library failed: %s", bgl_msg_last_error());
        *handled = 1;
        MPID_Abort(MPIR_Process.comm_world, MPI_SUCCESS, 1, what);
        MPIR_ERR_SETFATAL1(mpi_errno, MPI_ERR_OTHER, "**fail", "**fail %s", what);
    }
    return mpi_errno;
}

int MPIDI_BGL_barrier_hook(MPIR_Comm * comm, MPIR_Errflag_t * errflag)
{
    bgl_coll_comm_t v;
    int handled = 0;
    if (unlikely(MPIDI_BGL_global.tracing))
        MPIDI_BGL_trace_note(BGL_NM_TRACE_BARRIER, -1, 0, MPI_DATATYPE_NULL, comm);
    if (comm_view(comm, &v)) {
        int mpi_errno = hook_result(bgl_coll_barrier(&v), &handled);
        if (handled)
            return mpi_errno;
    }
    return MPIR_Barrier_impl(comm, errflag);
}

int MPIDI_BGL_bcast_hook(void *buffer, MPI_Aint count, MPI_Datatype datatype, int root,
                         MPIR_Comm * comm, MPIR_Errflag_t * errflag)
{
    bgl_coll_comm_t v;
    int handled = 0;
    if (unlikely(MPIDI_BGL_global.tracing))
        MPIDI_BGL_trace_note(BGL_NM_TRACE_BCAST, root, count, datatype, comm);
    if (count > 0 && comm_view(comm, &v)) {
        staged_t s;
        int mpi_errno = stage(buffer, count, datatype, comm->rank == root, &s);
        if (mpi_errno == MPI_SUCCESS) {
            mpi_errno = hook_result(bgl_coll_bcast(&v, s.bytes, (size_t) s.size,
                                                   (uint32_t) root), &handled);
        }
        int unpack_errno = unstage(&s, handled && comm->rank != root);
        if (mpi_errno == MPI_SUCCESS)
            mpi_errno = unpack_errno;
        if (handled || mpi_errno != MPI_SUCCESS)
            return mpi_errno;
    }
    return MPIR_Bcast_impl(buffer, count, datatype, root, comm, errflag);
}

int MPIDI_BGL_reduce_hook(const void *sendbuf, void *recvbuf, MPI_Aint count,
                          MPI_Datatype datatype, MPI_Op op, int root, MPIR_Comm * comm,
                          MPIR_Errflag_t * errflag)
{
    bgl_coll_comm_t v;
    bgl_coll_op_t bop;
    bgl_coll_dtype_t bdt;
    int handled = 0;
    if (unlikely(MPIDI_BGL_global.tracing))
        MPIDI_BGL_trace_note(BGL_NM_TRACE_REDUCE, root, count, datatype, comm);
    if (count > 0 && map_op(op, &bop) && map_dtype(datatype, bop, &bdt) && comm_view(comm, &v)) {
        const void *send = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
        int mpi_errno = hook_result(bgl_coll_reduce(&v, send, recvbuf, (size_t) count, bdt, bop,
                                                    (uint32_t) root), &handled);
        if (handled)
            return mpi_errno;
    }
    return MPIR_Reduce_impl(sendbuf, recvbuf, count, datatype, op, root, comm, errflag);
}

int MPIDI_BGL_allreduce_hook(const void *sendbuf, void *recvbuf, MPI_Aint count,
                             MPI_Datatype datatype, MPI_Op op, MPIR_Comm * comm,
                             MPIR_Errflag_t * errflag)
{
    bgl_coll_comm_t v;
    bgl_coll_op_t bop;
    bgl_coll_dtype_t bdt;
    int handled = 0;
    if (unlikely(MPIDI_BGL_global.tracing))
        MPIDI_BGL_trace_note(BGL_NM_TRACE_ALLREDUCE, -1, count, datatype, comm);
    if (count > 0 && map_op(op, &bop) && map_dtype(datatype, bop, &bdt) && comm_view(comm, &v)) {
        const void *send = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
        int mpi_errno = hook_result(bgl_coll_allreduce(&v, send, recvbuf, (size_t) count, bdt,
                                                       bop), &handled);
        if (handled)
            return mpi_errno;
    }
    return MPIR_Allreduce_impl(sendbuf, recvbuf, count, datatype, op, comm, errflag);
}

/* allgather and alltoall: `blocks` blocks of recvcount x recvtype in recvbuf. */
static int blocks_hook(int is_alltoall, const void *sendbuf, MPI_Aint sendcount,
                       MPI_Datatype sendtype, void *recvbuf, MPI_Aint recvcount,
                       MPI_Datatype recvtype, MPIR_Comm * comm, int *handled)
{
    bgl_coll_comm_t v;
    MPI_Aint block, send_blocks = is_alltoall ? comm->local_size : 1;
    int mpi_errno = MPI_SUCCESS;
    int in_place = sendbuf == MPI_IN_PLACE;
    staged_t s = { 0 }, r;

    *handled = 0;
    MPIR_Datatype_get_size_macro(recvtype, block);
    block *= recvcount;
    if (block == 0 || !comm_view(comm, &v))
        return MPI_SUCCESS;
    if (!in_place) {
        mpi_errno = stage((void *) sendbuf, sendcount * send_blocks, sendtype, 1, &s);
        if (mpi_errno != MPI_SUCCESS)
            goto fn_exit;
    }
    /* in place, the blocks to send (alltoall) or this rank's block (allgather) are in recvbuf */
    mpi_errno = stage(recvbuf, recvcount * comm->local_size, recvtype, in_place, &r);
    if (mpi_errno == MPI_SUCCESS) {
        const void *send = in_place ? NULL : s.bytes;
        int rc = is_alltoall ? bgl_coll_alltoall(&v, send, r.bytes, (size_t) block)
            : bgl_coll_allgather(&v, send, r.bytes, (size_t) block);
        mpi_errno = hook_result(rc, handled);
    }
    int unpack_errno = unstage(&r, *handled);
    if (mpi_errno == MPI_SUCCESS)
        mpi_errno = unpack_errno;
  fn_exit:
    unstage(&s, 0);
    if (mpi_errno != MPI_SUCCESS)
        *handled = 1;
    return mpi_errno;
}

int MPIDI_BGL_allgather_hook(const void *sendbuf, MPI_Aint sendcount, MPI_Datatype sendtype,
                             void *recvbuf, MPI_Aint recvcount, MPI_Datatype recvtype,
                             MPIR_Comm * comm, MPIR_Errflag_t * errflag)
{
    int handled;
    if (unlikely(MPIDI_BGL_global.tracing))
        MPIDI_BGL_trace_note(BGL_NM_TRACE_ALLGATHER, -1,
                             sendbuf == MPI_IN_PLACE ? recvcount : sendcount,
                             sendbuf == MPI_IN_PLACE ? recvtype : sendtype, comm);
    int mpi_errno = blocks_hook(0, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                comm, &handled);
    if (handled)
        return mpi_errno;
    return MPIR_Allgather_impl(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                               errflag);
}

int MPIDI_BGL_alltoall_hook(const void *sendbuf, MPI_Aint sendcount, MPI_Datatype sendtype,
                            void *recvbuf, MPI_Aint recvcount, MPI_Datatype recvtype,
                            MPIR_Comm * comm, MPIR_Errflag_t * errflag)
{
    int handled;
    if (unlikely(MPIDI_BGL_global.tracing))
        MPIDI_BGL_trace_note(BGL_NM_TRACE_ALLTOALL, -1,
                             sendbuf == MPI_IN_PLACE ? recvcount : sendcount,
                             sendbuf == MPI_IN_PLACE ? recvtype : sendtype, comm);
    int mpi_errno = blocks_hook(1, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                comm, &handled);
    if (handled)
        return mpi_errno;
    return MPIR_Alltoall_impl(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                              errflag);
}
