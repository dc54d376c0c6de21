/* Distributed graphs with reorder keep every process's own edges. Every process declares a ring
 * and a periodic 3D stencil (MPI_Dims_create's dimensions, row-major ranks) with a weight per
 * edge that names its two ends, in each of MPI_Dist_graph_create_adjacent's and
 * MPI_Dist_graph_create's ways (for the latter also with every edge declared by another process
 * than its ends), with and without reorder. Checks, on the new communicator: degrees and
 * weightedness as declared; the neighbours are the declared ones translated to the new ranks,
 * with their weights (in the declared order for the adjacent form; as a multiset for the other,
 * whose order MPICH's edge exchange decides); MPI_Neighbor_allgather brings every in-neighbour's
 * new rank. Prints the torus hops of every out-edge (MPIX_Rank2torus) and how many processes
 * reorder renamed, for the test driver. */
#include <mpix.h>

#include "mpitest.h"

enum { kMaxDegree = 6 };

/* The weight of edge a -> b (world ranks): both ends readable back. */
static int weight(int a, int b) {
  return a * 4096 + b + 1;
}

struct graph {
  const char* name;
  int degree;
  int in[kMaxDegree], out[kMaxDegree]; /* world ranks, this process's neighbours */
};

static struct graph ring_of(int r) {
  struct graph g = {"ring", 1, {(r + mt_size - 1) % mt_size}, {(r + 1) % mt_size}};
  return g;
}

static int dims[3];

/* Row-major periodic 3D stencil over dims: -1 and +1 in each dimension. */
static struct graph stencil_of(int r) {
  struct graph g = {"stencil", 6, {0}, {0}};
  int c[3] = {r / (dims[1] * dims[2]), (r / dims[2]) % dims[1], r % dims[2]};
  for (int d = 0, k = 0; d < 3; d++)
    for (int s = -1; s <= 1; s += 2, k++) {
      int n[3] = {c[0], c[1], c[2]};
      n[d] = (n[d] + s + dims[d]) % dims[d];
      g.out[k] = (n[0] * dims[1] + n[1]) * dims[2] + n[2];
      g.in[k] = g.out[k];
    }
  return g;
}

static int cmp_pair(const void* a, const void* b) {
  const int* x = a;
  const int* y = b;
  return x[0] != y[0] ? (x[0] > y[0]) - (x[0] < y[0]) : (x[1] > y[1]) - (x[1] < y[1]);
}

/* Do (ranks, weights) equal (want, want_w), in order or as multisets? */
static int same_lists(const int* ranks, const int* weights, const int* want, const int* want_w,
                      int n, int ordered) {
  int a[2 * kMaxDegree], b[2 * kMaxDegree];
  for (int i = 0; i < n; i++) {
    a[2 * i] = ranks[i];
    a[2 * i + 1] = weights[i];
    b[2 * i] = want[i];
    b[2 * i + 1] = want_w[i];
  }
  if (!ordered) {
    qsort(a, (size_t)n, 2 * sizeof(int), cmp_pair);
    qsort(b, (size_t)n, 2 * sizeof(int), cmp_pair);
  }
  return memcmp(a, b, sizeof(int) * 2 * (size_t)n) == 0;
}

enum how { kAdjacent, kCreateOwn, kCreateForeign };
static const char* const how_name[] = {"adjacent", "create", "create-foreign"};

static MPI_Comm create(struct graph (*of)(int), enum how how, int reorder) {
  const struct graph g = of(mt_rank);
  int inw[kMaxDegree], outw[kMaxDegree];
  for (int i = 0; i < g.degree; i++) {
    inw[i] = weight(g.in[i], mt_rank);
    outw[i] = weight(mt_rank, g.out[i]);
  }
  MPI_Comm c = MPI_COMM_NULL;
  if (how == kAdjacent) {
    MT_CHECK(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, g.degree, g.in, inw, g.degree, g.out,
                                            outw, MPI_INFO_NULL, reorder, &c) == MPI_SUCCESS,
             "Dist_graph_create_adjacent");
    return c;
  }
  /* kCreateForeign: this process declares the out-edges of the next rank, not its own */
  const int source = how == kCreateOwn ? mt_rank : (mt_rank + 1) % mt_size;
  const struct graph s = of(source);
  int w[kMaxDegree];
  for (int i = 0; i < s.degree; i++)
    w[i] = weight(source, s.out[i]);
  MT_CHECK(MPI_Dist_graph_create(MPI_COMM_WORLD, 1, &source, &s.degree, s.out, w, MPI_INFO_NULL,
                                 reorder, &c) == MPI_SUCCESS,
           "Dist_graph_create");
  return c;
}

static void check(struct graph (*of)(int), enum how how, int reorder) {
  const struct graph g = of(mt_rank);
  MPI_Comm c = create(of, how, reorder);
  const char* label = how_name[how];
  int me = -1, indeg = -1, outdeg = -1, weighted = -1;
  MPI_Comm_rank(c, &me);
  if (!reorder) MT_CHECK(me == mt_rank, "%s %s reorder=0: rank %d", g.name, label, me);
  MPI_Dist_graph_neighbors_count(c, &indeg, &outdeg, &weighted);
  MT_CHECK(indeg == g.degree && outdeg == g.degree && weighted, "%s %s: degrees %d %d weighted %d",
           g.name, label, indeg, outdeg, weighted);
  if (indeg != g.degree || outdeg != g.degree) {
    MPI_Comm_free(&c);
    return;
  }

  /* the declared lists in the new numbering */
  MPI_Group world, group;
  MPI_Comm_group(MPI_COMM_WORLD, &world);
  MPI_Comm_group(c, &group);
  int want_in[kMaxDegree], want_out[kMaxDegree], inw[kMaxDegree], outw[kMaxDegree];
  MPI_Group_translate_ranks(world, g.degree, g.in, group, want_in);
  MPI_Group_translate_ranks(world, g.degree, g.out, group, want_out);
  for (int i = 0; i < g.degree; i++) {
    inw[i] = weight(g.in[i], mt_rank);
    outw[i] = weight(mt_rank, g.out[i]);
  }
  int in[kMaxDegree], out[kMaxDegree], iw[kMaxDegree], ow[kMaxDegree];
  MPI_Dist_graph_neighbors(c, indeg, in, iw, outdeg, out, ow);
  const int ordered = how == kAdjacent;
  MT_CHECK(same_lists(in, iw, want_in, inw, indeg, ordered),
           "%s %s reorder=%d: world rank %d (new %d): in-neighbours %d.. (weight %d) want %d.. "
           "(weight %d)",
           g.name, label, reorder, mt_rank, me, in[0], iw[0], want_in[0], inw[0]);
  MT_CHECK(same_lists(out, ow, want_out, outw, outdeg, ordered),
           "%s %s reorder=%d: world rank %d (new %d): out-neighbours %d.. (weight %d) want %d.. "
           "(weight %d)",
           g.name, label, reorder, mt_rank, me, out[0], ow[0], want_out[0], outw[0]);

  /* traffic along the edges: every in-neighbour's new rank arrives from it */
  int got[kMaxDegree];
  MPI_Neighbor_allgather(&me, 1, MPI_INT, got, 1, MPI_INT, c);
  for (int i = 0; i < indeg; i++)
    MT_CHECK(got[i] == in[i], "%s %s: neighbour %d sent %d", g.name, label, in[i], got[i]);

  /* torus hops of this process's out-edges (world ranks: the process is the same) */
  int max = 0, sum = 0, total_max = 0, total_sum = 0;
  for (int i = 0; i < g.degree; i++) {
    const int h = mt_torus_hops(mt_rank, g.out[i]);
    sum += h;
    if (h > max) max = h;
  }
  MPI_Allreduce(&max, &total_max, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Allreduce(&sum, &total_sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  /* hops between the processes now holding the new ranks of a row-major graph: what a program
   * that numbers its grid by the new ranks gets */
  int nmax = 0, nsum = 0, tnmax = 0, tnsum = 0;
  {
    const struct graph ng = of(me); /* the graph node this process now plays */
    int worlds[kMaxDegree];
    MPI_Group_translate_ranks(group, ng.degree, ng.out, world, worlds);
    for (int i = 0; i < ng.degree; i++) {
      const int h = mt_torus_hops(mt_rank, worlds[i]);
      nsum += h;
      if (h > nmax) nmax = h;
    }
  }
  MPI_Allreduce(&nmax, &tnmax, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Allreduce(&nsum, &tnsum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  /* processes whose rank reorder changed */
  int renamed = me != mt_rank, total_renamed = 0;
  MPI_Allreduce(&renamed, &total_renamed, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (mt_rank == 0)
    printf(
        "distgraph %s %s reorder=%d: max hops %d, total hops %d; by new rank: max hops %d, "
        "total hops %d; renamed %d\n",
        g.name, label, reorder, total_max, total_sum, tnmax, tnsum, total_renamed);
  MPI_Group_free(&group);
  MPI_Group_free(&world);
  MPI_Comm_free(&c);
}

int main(int argc, char** argv) {
  mt_init(&argc, &argv);
  MT_CHECK(MPI_Dims_create(mt_size, 3, dims) == MPI_SUCCESS, "Dims_create");
  if (mt_rank == 0) printf("dims %d %d %d\n", dims[0], dims[1], dims[2]);
  for (int how = kAdjacent; how <= kCreateForeign; how++)
    for (int reorder = 0; reorder <= 1; reorder++) {
      check(ring_of, (enum how)how, reorder);
      check(stencil_of, (enum how)how, reorder);
    }
  return mt_finish("distgraph");
}
