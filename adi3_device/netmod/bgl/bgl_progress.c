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
 * A non-blocking call (MPI_Test*, MPI_Iprobe, MPI_Improbe, MPI_Request_get_status, the test of
 * a non-blocking collective, MPICH's internal polls) that finds nothing returns at once: an
 * application that polls must pay a poll, not a nap, per call (a million MPI_Test calls while a
 * synchronous send waits for its match must take a fraction of a second). When this host's ranks
 * outnumber its cores it first gives the core away with one sched_yield(), never more, so that
 * the rank it polls for gets to run.
 *
 * A blocking call that finds nothing to do counts as idle, and a run of idle blocking calls that
 * follow each other closely (less than BGL_NM_GAP_US apart: one wait, not two waits with
 * computation between them) goes through three phases:
 *
 *   spin   for BGL_NM_SPIN_US (default 20 us; 1 us when the host's ranks outnumber its cores):
 *          return at once, so that a reply arriving within microseconds is seen immediately
 *          (spinning on the FIFOs inside the call instead, between MPICH's ~500-instruction
 *          progress rounds, was measured and made the ping-pong no faster);
 *   yield  for BGL_NM_YIELD_US more (default 200 us; 10 us oversubscribed): sched_yield() in
 *          every call, so that a runnable rank on this core gets it;
 *   sleep  on the task's doorbell (a futex in the job's segment that senders ring when they
 *          deliver a packet to a sleeping task), at most BGL_NM_SLEEP_US (starts at 125 us or
 *          less and doubles while nothing comes; default 20000 us): the core is free, and the
 *          rank wakes as soon as a packet arrives. Each sleep costs the sleeper a memory barrier
 *          on every core (the packet layer's doorbell), so a rank that waits long must sleep
 *          long: 64 ranks re-sleeping every millisecond took all of two cores. The timeout bounds how late the rank notices
 *          anything that does not ring: nobody rings a sender whose packets wait for room in a
 *          full reception FIFO, so while any of our sends is in flight the sleep is capped at
 *          BGL_NM_BUSY_SLEEP_US (default 50 us).
 *
 * Any progress ends the idle run. The clock (CLOCK_MONOTONIC, vDSO) is read only on idle
 * blocking calls.
 */

#include "bgl_impl.h"
#include <sched.h>
#include <time.h>

/* Without the patch every call would look non-blocking, and waiting ranks would never sleep. */
#ifndef MPIDI_CH4_PROGRESS_TELLS_BLOCKING
#error "MPICH's ch4 does not pass blocking waits to the netmod: build it with tools/build_mpich.sh"
#endif

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t) ts.tv_sec * 1000000000ull + (uint64_t) ts.tv_nsec;
}

static uint64_t env_us(const char *name, uint64_t dflt)
{
    int value;
    if (MPL_env2int(name, &value) && value >= 0)
        return (uint64_t) value;
    return dflt;
}

void MPIDI_BGL_progress_config(void)
{
    MPIDI_BGL_global_t *g = &MPIDI_BGL_global;
    int cores = bgl_nm_online_cores();
    int local = MPIR_Process.local_size > 0 ? MPIR_Process.local_size : MPIR_Process.size;

    g->oversubscribed = local > cores;
    MPL_env2bool("BGL_NM_OVERSUBSCRIBED", &g->oversubscribed);
    g->spin_ns = 1000 * env_us("BGL_NM_SPIN_US", g->oversubscribed ? 1 : 20);
    g->yield_ns = 1000 * env_us("BGL_NM_YIELD_US", g->oversubscribed ? 10 : 200);
    g->gap_ns = 1000 * env_us("BGL_NM_GAP_US", 5);
    g->sleep_max_us = (uint32_t) MPL_MAX(1, env_us("BGL_NM_SLEEP_US", 20000));
    g->sleep_min_us = MPL_MIN(125, g->sleep_max_us);
    g->busy_sleep_us = (uint32_t) MPL_MAX(1, env_us("BGL_NM_BUSY_SLEEP_US", 50));
    g->max_iov = (MPI_Aint) env_us("BGL_NM_MAX_IOV", 64);
    g->inject = 1;
    MPL_env2bool("BGL_NM_INJECT", &g->inject);
    g->inject_max = (MPI_Aint) bgl_msg_max_one_packet(sizeof(MPIDI_BGL_compact_hdr_t));
}

/* A non-blocking call found nothing: it returns now. */
static void poll_idle(MPIDI_BGL_global_t * g)
{
    if (g->oversubscribed) {
        sched_yield();
        g->n_poll_yields++;
    }
}

/* A blocking call found nothing: the next step of the idle run. */
static void wait_idle(MPIDI_BGL_global_t * g)
{
    uint64_t now = now_ns();
    if (!g->idling || now - g->last_exit > g->gap_ns) {
        g->idling = 1;
        g->idle_since = now;
        g->sleep_us = g->sleep_min_us;
    }
    uint64_t idle = now - g->idle_since;
    if (idle < g->spin_ns) {
        /* poll again */
    } else if (idle < g->spin_ns + g->yield_ns) {
        sched_yield();
        g->n_yields++;
    } else {
        g->n_sleeps++;
        uint32_t us = g->sends_in_flight > 0 ? MPL_MIN(g->sleep_us, g->busy_sleep_us) : g->sleep_us;
        if (!bgl_nm_idle_wait(g->idle, us))
            g->sleep_us = MPL_MIN(2 * g->sleep_us, g->sleep_max_us);
    }
    g->last_exit = now_ns();
}

int MPIDI_BGL_progress_impl(int vci, int blocking)
{
    int mpi_errno = MPI_SUCCESS;
    MPIDI_BGL_global_t *g = &MPIDI_BGL_global;

    if (g->in_advance)
        return MPI_SUCCESS;     /* called from one of our callbacks */

    g->in_advance = 1;
    int made = bgl_msg_advance(g->session);
    g->in_advance = 0;
    if (g->n_deferred) {
        made = 1;
        mpi_errno = MPIDI_BGL_accept_deferred();
        MPIR_ERR_CHECK(mpi_errno);
    }
    if (made)
        g->idling = 0;
    else if (blocking)
        wait_idle(g);
    else
        poll_idle(g);

  fn_exit:
    return mpi_errno;
  fn_fail:
    goto fn_exit;
}
