/*
 * The bgl netmod: initialisation through MPICH's PMI (our host bootstrap), the address table,
 * the processor name and finalisation.
 *
 * bglrun created and formatted the job's segment (BGL_SEGMENT) with the partition's shape, node
 * mode and rank mapping, then started the ranks and serves their PMI (or started them through
 * Hydra's mpiexec); each rank's MPI rank is its PMI rank and its task number in the emulated job.
 * The message layer checks through the bootstrap's broadcast that every rank attached the same job
 * with the same size.
 */

#include "bgl_impl.h"
#include "bgl_noinline.h"
#include "bgl_coll.h"
#include "bgl_topo.h"
#include <bgl_nm_topo.h>

MPIDI_BGL_global_t MPIDI_BGL_global;

/* Called by every MPI function's entry and exit when set (mpich_patches/0005: mpir_func.h). */
MPIR_BGL_call_hook_fn MPIR_BGL_call_hook;

static int pmi_barrier(void *context)
{
    return MPIR_pmi_barrier() == MPI_SUCCESS ? 0 : -1;
}

static int pmi_broadcast(void *context, void *data, size_t bytes)
{
    if (bytes > (size_t) MPIR_pmi_max_val_size() / 2)   /* values travel hex-encoded */
        return -1;
    return MPIR_pmi_bcast(data, (int) bytes, MPIR_PMI_DOMAIN_ALL) == MPI_SUCCESS ? 0 : -1;
}

int MPIDI_BGL_init_local(int *tag_bits)
{
    int mpi_errno = MPI_SUCCESS;
    int rc;
    MPIR_FUNC_ENTER;

    memset(&MPIDI_BGL_global, 0, sizeof(MPIDI_BGL_global));

    bgl_msg_bootstrap_t bootstrap = {
        .context = NULL,
        .rank = (uint32_t) MPIR_Process.rank,
        .size = (uint32_t) MPIR_Process.size,
        .barrier = pmi_barrier,
        .broadcast = pmi_broadcast,
    };
    rc = bgl_msg_init(&bootstrap, &MPIDI_BGL_global.session);
    MPIR_ERR_CHKANDJUMP1(rc != 0, mpi_errno, MPI_ERR_OTHER, "**fail", "**fail %s",
                         bgl_msg_last_error());

    /* bglrun --trace: from here on every MPI call's entry and exit reaches the task's timeline,
     * which counts this MPI_Init (or MPI_Init_thread) as begun now. */
    MPIR_BGL_call_hook = bgl_nm_trace_open(MPIDI_BGL_global.session);
    MPIDI_BGL_global.tracing = MPIR_BGL_call_hook != NULL;

    double vt;
    if (bgl_msg_vtime(MPIDI_BGL_global.session, &vt) == 0) {
        MPIDI_BGL_global.virtual_time = 1;
        /* Every task's clock is on the same emulated machine's time base. */
        MPIR_Process.attrs.wtime_is_global = 1;
    }

    mpi_errno = MPIDI_BGL_register_handlers();
    MPIR_ERR_CHECK(mpi_errno);
    mpi_errno = MPIDI_BGL_pt2pt_register();
    MPIR_ERR_CHECK(mpi_errno);

    MPIDI_BGL_progress_config();

    mpi_errno = MPIDI_BGL_coll_init();
    MPIR_ERR_CHECK(mpi_errno);

    mpi_errno = MPIDI_BGL_topo_init();
    MPIR_ERR_CHECK(mpi_errno);

    /* MPI_Get_processor_name: the task's place in the partition, as on BG/L. */
    if (bgl_nm_processor_name(MPIDI_BGL_global.session, MPIDI_global.pname,
                              MPI_MAX_PROCESSOR_NAME) == 0) {
        MPIDI_global.pname_len = (int) strlen(MPIDI_global.pname);
        MPIDI_global.pname_set = 1;
    }

  fn_exit:
    MPIR_FUNC_EXIT;
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

int MPIDI_BGL_init_world(void)
{
    MPIR_FUNC_ENTER;
    for (int i = 0; i < MPIR_Process.size; i++) {
        MPIDI_BGL_AV(&MPIDIU_get_av(0, i)).dest = (uint32_t) i;
    }
    MPIR_FUNC_EXIT;
    return MPI_SUCCESS;
}

int MPIDI_BGL_post_init(void)
{
    return MPI_SUCCESS;
}

int MPIDI_BGL_mpi_finalize_hook(void)
{
    int mpi_errno = MPI_SUCCESS;
    MPIR_FUNC_ENTER;

    /* Every MPI operation has completed, but a message whose done() ran (its buffer may be
     * reused) can still have packets in this task's injection FIFOs, waiting for room in the
     * reception FIFO of a peer that is still receiving them (the last Bsends, the tail of a
     * rendezvous), and the layer may owe control packets (rendezvous fins, adaptive-eager
     * tokens). bgl_msg_barrier() advances until all of that has left the task, with the layer's
     * backoff, while the peers keep receiving, and then calls our bootstrap's barrier (PMI).
     * A fixed number of quiet advance() calls was not enough: advance() makes no progress while
     * the peer's FIFO is full, and the blocking PMI barrier then kept those packets from the
     * peer for good (MPICH's pt2pt/bsendalign lost rank 1's last 6 of 70 messages). */
    if (bgl_msg_barrier(MPIDI_BGL_global.session) != 0) {
        MPIR_ERR_SETANDJUMP1(mpi_errno, MPI_ERR_OTHER, "**fail", "**fail %s",
                             bgl_msg_last_error());
    }

    if (MPIR_CVAR_CH4_RUNTIME_CONF_DEBUG && MPIR_Process.rank == 0) {
        fprintf(stderr, "bgl netmod: rank 0: %llu sends completed at injection\n",
                (unsigned long long) MPIDI_BGL_global.n_injected);
    }

    /* The timeline ends with the runtime, inside this MPI_Finalize, which it records as ending
     * here; MPI calls after this point are not traced. */
    if (MPIDI_BGL_global.tracing) {
        MPIR_BGL_call_hook = NULL;
        MPIDI_BGL_global.tracing = 0;
        bgl_nm_trace_close();
    }
    MPIDI_BGL_coll_finalize();
    bgl_msg_finalize(MPIDI_BGL_global.session);
    MPIDI_BGL_global.session = NULL;
    MPIDI_BGL_global.virtual_time = 0;
    MPIDI_BGL_send_pool_free();
    MPIDI_BGL_pt2pt_free();
    MPL_free(MPIDI_BGL_global.deferred);
    MPIDI_BGL_global.deferred = NULL;

  fn_exit:
    MPIR_FUNC_EXIT;
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

int MPIDI_BGL_wtime(double *seconds)
{
    return MPIDI_BGL_global.virtual_time &&
        bgl_msg_vtime(MPIDI_BGL_global.session, seconds) == 0;
}

int MPIDI_BGL_wtick(double *seconds)
{
    double now;
    if (!MPIDI_BGL_wtime(&now))
        return 0;
    *seconds = 1.0 / 700e6;     /* one BG/L processor cycle */
    return 1;
}
