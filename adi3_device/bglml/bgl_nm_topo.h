/* The job's partition and rank mapping for the MPICH device: what the Blue Gene MPIX_* calls
 * report, and the torus-aware placement behind MPI_Cart_create/MPI_Cart_map and
 * MPI_Graph_create/MPI_Graph_map with reorder, and MPI_Dims_create (see topo_map.hpp).
 *
 * All calls take the task's message-layer session (bgl_msg_init) and return 0 on success or a
 * negative bgl_msg_status (bgl_nm_topo_error() explains). */
#ifndef BGL_NM_TOPO_H
#define BGL_NM_TOPO_H

#include <stdint.h>

#include <stddef.h>

#include "bgl/message_layer/bgl_msg.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct bgl_nm_partition {
  int extent[3];      /* X, Y, Z */
  int torus[3];       /* 1: wrap-around links in that dimension, 0: a mesh */
  int tasks_per_node; /* 2 in virtual-node mode, else 1 */
  int ntasks;         /* tasks in the job (may be fewer than nodes * tasks_per_node) */
  int mode;           /* 0 heater, 1 coprocessor, 2 virtual node */
} bgl_nm_partition_t;

const char* bgl_nm_topo_error(void);

int bgl_nm_topo_partition(bgl_msg_session_t* session, bgl_nm_partition_t* out);

/* x, y, z, t of a task (world rank). */
int bgl_nm_topo_location(bgl_msg_session_t* session, uint32_t task, int loc[4]);

/* The task at x, y, z, t, or -1 when no task runs there; BGL_MSG_ERR_ARG for coordinates
 * outside the partition. */
int bgl_nm_topo_task_at(bgl_msg_session_t* session, const int loc[4], int* task);

/* Which communicator rank runs each Cartesian position (row-major, last dimension fastest):
 * rank_of_pos[p] for p < prod(dims) <= n. tasks[i] is the task of communicator rank i. */
int bgl_nm_topo_cart_map(bgl_msg_session_t* session, int n, const uint32_t tasks[], int ndims,
                         const int dims[], const int periods[], int rank_of_pos[]);

/* The same for an MPI graph of nnodes <= n nodes (index/edges as MPI_Graph_create takes them). */
int bgl_nm_topo_graph_map(bgl_msg_session_t* session, int n, const uint32_t tasks[], int nnodes,
                          const int index[], const int edges[], int rank_of_pos[]);

/* MPI_Dims_create for the n tasks given: fills the zero entries of dims with a choice that folds
 * onto the box those tasks fill on the torus and returns 1, or returns 0 (dims unchanged) when
 * there is none. */
int bgl_nm_topo_dims_create(bgl_msg_session_t* session, int n, const uint32_t tasks[], int ndims,
                            int dims[]);

/* "BGL <x,y,z,t> in XxYxZ torus, <mode> mode" for MPI_Get_processor_name. */
int bgl_nm_processor_name(bgl_msg_session_t* session, char* name, size_t bytes);

#ifdef __cplusplus
}
#endif

#endif /* BGL_NM_TOPO_H */
