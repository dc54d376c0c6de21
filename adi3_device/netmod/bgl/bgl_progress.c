/*
 * The bgl netmod: progress, and what a rank does when there is nothing to do.
 *
 * MPICH calls the netmod's progress in a tight loop while a blocking call waits, and once per
 * MPI_Test/MPI_Iprobe. Stock MPICH only polls: with more ranks than cores, a waiting rank burns
 * its whole time slice while the rank that would send it something cannot run. Here the two
 * callers are told apart exactly: MPICH's loops that wait (MPID_Progress_wait, which MPI_Wait,
 * MPI_Waitall, MPI_Recv, blocking sends and MPICH's own blocking collectives use; MPI_Probe,
 * MPI_Mprobe, MPI_Waitany, MPI_Waitsome, the RMA synchronisations) pass blocking = 1, patched
 * so by tools/build_mpich.sh (adi3_device/mpich_patches); the collectives library's waits say
 * so too (bgl_coll.c); everything else passes 0.
 *
 * How to wait is the message layer's business, not the netmod's: a round that finds nothing
 * ends in one of the layer's two waits (bgl_msg.h), with the job's waiting policy (BGL_SPIN,
 * BGL_YIELD, BGL_SLEEP_US and their defaults by tasks per core):
 *
 *   blocking      bgl_msg_wait: spin, yield, then sleep on the task's doorbell, which arriving
 *                 packets ring; the sleep is short while the task's own packets wait for room
 *                 in a peer's reception FIFO (nothing rings for that). MPICH's loop then calls
 *                 progress again, which advances.
 *   non-blocking  bgl_msg_poll_yield: returns at once (an application that polls must pay a
 *                 poll, not a nap, per MPI_Test), giving the core away once first when this
 *                 host's tasks outnumber its cores, so that the rank it polls for gets to run.
 *
 * A blocking round does not wait when MPICH finished requests of its own since the last round:
 * its progress hooks run the non-blocking collectives' schedules and complete their requests
 * without a packet, and a rank whose only partner is itself gets none at all. The request its
 * caller waits for may be one of them, so the round returns to MPICH's loop, which looks.
 *
 * Inside a tree or global-interrupt wait the collectives library runs rounds that must not
 * wait at all (that wait sleeps on the wire and on the task's doorbell at once): MPIDI_BGL_IDLE_NONE.
 */

#include "bgl_impl.h"

/* Without the patch every call would look non-blocking, and waiting ranks would never sleep. */
#ifndef MPIDI_CH4_PROGRESS_TELLS_BLOCKING
#error "MPICH's ch4 does not pass blocking waits to the netmod: build it with tools/build_mpich.sh"
#endif

static uint64_t env_count(const char *name, uint64_t dflt)
{
    int value;
    if (MPL_env2int(name, &value) && value >= 0)
        return (uint64_t) value;
    return dflt;
}

/* The netmod's waiting variables before it waited through the message layer: a user who still
 * sets one learns that it has no effect, and what replaced it. */
static void warn_retired_variables(void)
{
    static const char *const retired[] = {
        "BGL_NM_SPIN_US", "BGL_NM_YIELD_US", "BGL_NM_SLEEP_US",
        "BGL_NM_BUSY_SLEEP_US", "BGL_NM_GAP_US", "BGL_NM_OVERSUBSCRIBED"
    };
    if (MPIR_Process.rank != 0)
        return;
    for (size_t i = 0; i < sizeof(retired) / sizeof(retired[0]); i++)
        if (getenv(retired[i]))
            fprintf(stderr, "bgl netmod: %s is no longer read: MPI ranks wait with the job's "
                    "waiting policy (BGL_SPIN, BGL_YIELD, BGL_SLEEP_US)\n", retired[i]);
}

void MPIDI_BGL_progress_config(void)
{
    MPIDI_BGL_global_t *g = &MPIDI_BGL_global;
    warn_retired_variables();
    g->max_iov = (MPI_Aint) env_count("BGL_NM_MAX_IOV", 64);
    g->inject = 1;
    MPL_env2bool("BGL_NM_INJECT", &g->inject);
}

/* Requests MPICH has freed (ch4 counts them per VCI as the progress it waits for). */
static int mpich_completions(void)
{
    int n = 0;
    for (int vci = 0; vci < MPIDI_global.n_vcis; vci++)
        n += MPL_atomic_relaxed_load_int(&MPIDI_VCI(vci).progress_count);
    return n;
}

int MPIDI_BGL_progress_round(MPIDI_BGL_idle_t idle, int *made)
{
    int mpi_errno = MPI_SUCCESS;
    MPIDI_BGL_global_t *g = &MPIDI_BGL_global;
    int completions, mpich_worked;

    *made = 0;
    if (g->in_advance)
        return MPI_SUCCESS;     /* called from one of our callbacks */

    g->in_advance = 1;
    *made = bgl_msg_advance(g->session);
    g->in_advance = 0;
    if (g->n_deferred) {
        *made = 1;
        mpi_errno = MPIDI_BGL_accept_deferred();
        MPIR_ERR_CHECK(mpi_errno);
    }
    /* Waiting sleeps, polling yields: neither frees a request, so one look per round is enough. */
    completions = mpich_completions();
    mpich_worked = completions != g->completions_seen;
    g->completions_seen = completions;
    if (*made)
        goto fn_exit;
    if (idle == MPIDI_BGL_IDLE_WAIT && !mpich_worked)
        bgl_msg_wait(g->session);
    else if (idle == MPIDI_BGL_IDLE_POLL)
        bgl_msg_poll_yield(g->session);

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}

int MPIDI_BGL_progress_impl(int vci, int blocking)
{
    int made;
    return MPIDI_BGL_progress_round(blocking ? MPIDI_BGL_IDLE_WAIT : MPIDI_BGL_IDLE_POLL, &made);
}
