/* Torus-aware process topologies: MPI_Dims_create, MPI_Cart_create/MPI_Cart_map and
 * MPI_Graph_create/MPI_Graph_map with and without reorder (distributed graphs: distgraph.c). Prints
 * the torus hops between topology neighbours (measured with MPIX_Rank2torus) for bglrun's test
 * driver to judge, and checks that every communicator is a correct one: members, coordinates and
 * ranks agree, and messages to the neighbours arrive. */
#include <mpix.h>

#include "mpitest.h"

static int world_of(MPI_Comm comm, int crank) {
  MPI_Group g, w;
  int out;
  MPI_Comm_group(comm, &g);
  MPI_Comm_group(MPI_COMM_WORLD, &w);
  MPI_Group_translate_ranks(g, 1, &crank, w, &out);
  MPI_Group_free(&g);
  MPI_Group_free(&w);
  return out;
}

/* Torus hops between two ranks of comm. */
static int hops(MPI_Comm comm, int a, int b) {
  return mt_torus_hops(world_of(comm, a), world_of(comm, b));
}

/* Max and sum of hops to the +1 neighbour in every dimension, over all members; checks that a
 * message sent to the +1 neighbour comes from the -1 one. */
static void cart_report(MPI_Comm cart, const char* label) {
  int local_max = 0, local_sum = 0, ndims = 0, me = -1;
  if (cart != MPI_COMM_NULL) {
    MPI_Comm_rank(cart, &me);
    MPI_Cartdim_get(cart, &ndims);
    for (int d = 0; d < ndims; d++) {
      int src, dst, got = -2;
      MPI_Cart_shift(cart, d, 1, &src, &dst);
      MPI_Sendrecv(&me, 1, MPI_INT, dst, d, &got, 1, MPI_INT, src, d, cart, MPI_STATUS_IGNORE);
      MT_CHECK(src == MPI_PROC_NULL ? got == -2 : got == src, "%s: dimension %d got %d from %d",
               label, d, got, src);
      if (dst == MPI_PROC_NULL) continue;
      const int h = hops(cart, me, dst);
      local_sum += h;
      if (h > local_max) local_max = h;
    }
    int coords[16], back = -1;
    MPI_Cart_coords(cart, me, ndims, coords);
    MPI_Cart_rank(cart, coords, &back);
    MT_CHECK(back == me, "%s: Cart_rank(Cart_coords(%d)) = %d", label, me, back);
  }
  int max = 0, sum = 0, members = 0, one = cart != MPI_COMM_NULL;
  MPI_Allreduce(&local_max, &max, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Allreduce(&local_sum, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(&one, &members, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (mt_rank == 0)
    printf("%s: %d members, max hops %d, total hops %d\n", label, members, max, sum);
}

static void cart(int ndims, const int* dims_in, int periodic, const char* name) {
  int dims[8], periods[8], size = 1;
  for (int d = 0; d < ndims; d++) {
    dims[d] = dims_in[d];
    periods[d] = periodic;
    size *= dims[d];
  }
  char label[96];
  for (int reorder = 0; reorder <= 1; reorder++) {
    MPI_Comm c;
    MT_CHECK(MPI_Cart_create(MPI_COMM_WORLD, ndims, dims, periods, reorder, &c) == MPI_SUCCESS,
             "Cart_create");
    int newrank = -3, crank = MPI_UNDEFINED;
    MPI_Cart_map(MPI_COMM_WORLD, ndims, dims, periods, &newrank);
    if (c != MPI_COMM_NULL) MPI_Comm_rank(c, &crank);
    if (reorder) {
      MT_CHECK(newrank == crank, "%s: Cart_map %d, Cart_create rank %d", name, newrank, crank);
    } else {
      MT_CHECK(crank == (mt_rank < size ? mt_rank : MPI_UNDEFINED), "%s reorder=0: rank %d", name,
               crank);
    }
    snprintf(label, sizeof label, "%s reorder=%d", name, reorder);
    cart_report(c, label);
    if (c != MPI_COMM_NULL) MPI_Comm_free(&c);
  }
}

static void graph_ring(void) {
  /* A ring over all ranks, every edge listed on both ends. */
  int* index = malloc(sizeof(int) * (size_t)mt_size);
  int* edges = malloc(sizeof(int) * 2 * (size_t)mt_size);
  for (int i = 0; i < mt_size; i++) {
    edges[2 * i] = (i + mt_size - 1) % mt_size;
    edges[2 * i + 1] = (i + 1) % mt_size;
    index[i] = 2 * (i + 1);
  }
  for (int reorder = 0; reorder <= 1; reorder++) {
    MPI_Comm g;
    MPI_Graph_create(MPI_COMM_WORLD, mt_size, index, edges, reorder, &g);
    int me, newrank = -3;
    MPI_Comm_rank(g, &me);
    if (reorder) {
      MPI_Graph_map(MPI_COMM_WORLD, mt_size, index, edges, &newrank);
      MT_CHECK(newrank == me, "Graph_map %d, Graph_create rank %d", newrank, me);
    }
    int nb[2], n;
    MPI_Graph_neighbors_count(g, me, &n);
    MPI_Graph_neighbors(g, me, 2, nb);
    const int next = nb[1], prev = nb[0];
    int got = -1;
    MPI_Sendrecv(&me, 1, MPI_INT, next, 0, &got, 1, MPI_INT, prev, 0, g, MPI_STATUS_IGNORE);
    MT_CHECK(got == prev, "graph: got %d from %d", got, prev);
    int h = hops(g, me, next), max = 0, sum = 0;
    MPI_Allreduce(&h, &max, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(&h, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (mt_rank == 0)
      printf("ring graph reorder=%d: max hops %d, total hops %d\n", reorder, max, sum);
    MPI_Comm_free(&g);
  }
  free(index);
  free(edges);
}

int main(int argc, char** argv) {
  mt_init(&argc, &argv);
  int dims[3] = {0, 0, 0}, periods[3] = {1, 1, 1};
  MT_CHECK(MPI_Dims_create(mt_size, 3, dims) == MPI_SUCCESS, "Dims_create");
  if (mt_rank == 0) printf("dims %d %d %d\n", dims[0], dims[1], dims[2]);
  (void)periods;
  cart(3, dims, 1, "cart3d");
  /* Shapes that do not match the partition: fewer ranks than the job, odd extents, a mesh. */
  if (mt_size >= 8) {
    const int odd[2] = {3, (mt_size - 1) / 3};
    cart(2, odd, 1, "cart3x");
    const int line[1] = {mt_size - 1};
    cart(1, line, 0, "line");
  }
  graph_ring();
  return mt_finish("topo");
}
