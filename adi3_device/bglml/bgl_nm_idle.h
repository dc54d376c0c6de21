/* Helpers of the MPICH device (adi3_device) next to the message layer's C ABI: an idle wait that
 * sleeps on the task's doorbell until a packet arrives or a timeout passes, and the task's place
 * in the partition. They attach the job's segment (BGL_SEGMENT) a second time, read-only in
 * spirit: they look at the reception FIFOs' heads and sleep on the doorbell, and record the
 * task's pid early so that the launcher can name a task that dies.
 *
 * All calls return 0 on success or a negative bgl_msg_status (bgl_msg_last_error() is not set;
 * bgl_nm_idle_error() explains). */
#ifndef BGL_NM_IDLE_H
#define BGL_NM_IDLE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct bgl_nm_idle bgl_nm_idle_t;

int bgl_nm_idle_open(uint32_t rank, bgl_nm_idle_t** idle);
void bgl_nm_idle_close(bgl_nm_idle_t* idle);
const char* bgl_nm_idle_error(void);

/* 1 when a packet waits in one of the task's reception FIFOs. */
int bgl_nm_idle_ready(const bgl_nm_idle_t* idle);
/* Sleeps on the task's doorbell unless a packet waits, at most timeout_us microseconds. Returns 1
 * when a packet is ready afterwards (or the sleep was skipped inside a collective wait that idles
 * itself), 0 otherwise: the caller lengthens its next sleep only on 0. */
int bgl_nm_idle_wait(bgl_nm_idle_t* idle, uint32_t timeout_us);

/* "BGL <x,y,z,t> in XxYxZ torus, <mode> mode" for MPI_Get_processor_name. */
int bgl_nm_processor_name(const bgl_nm_idle_t* idle, char* name, size_t bytes);
/* Online cores of this host (sched affinity). */
int bgl_nm_online_cores(void);

#ifdef __cplusplus
}
#endif

#endif /* BGL_NM_IDLE_H */
