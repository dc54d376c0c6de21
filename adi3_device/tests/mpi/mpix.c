/* The Blue Gene extensions (mpix.h) against the job's mapping, computed here independently from
 * the same description bglrun got:
 *   mpix SHAPE TASKS_PER_NODE MESH (order:ORDER | file:PATH)
 * e.g. mpix 4x2x2 2 - order:TXYZ, or mpix 2x2x2 1 z file:map.txt. */
#include <mpix.h>

#include "mpitest.h"

enum { MAX_TASKS = 1 << 16 };

static int X, Y, Z, T, torus[3];
static int expected[MAX_TASKS][4]; /* x y z t of every world rank */

static int parse_expected(const char* how, int ntasks) {
  if (strncmp(how, "order:", 6) == 0) {
    const char* order = how + 6;
    for (int r = 0; r < ntasks; r++) {
      int rest = r;
      for (const char* c = order; *c; c++) {
        const int d = *c == 'X' ? 0 : *c == 'Y' ? 1 : *c == 'Z' ? 2 : 3;
        const int extent = d == 0 ? X : d == 1 ? Y : d == 2 ? Z : T;
        expected[r][d] = rest % extent;
        rest /= extent;
      }
    }
    return 1;
  }
  if (strncmp(how, "file:", 5) != 0) return 0;
  FILE* f = fopen(how + 5, "r");
  if (!f) return 0;
  char line[256];
  int r = 0;
  while (r < ntasks && fgets(line, sizeof line, f)) {
    char* hash = strchr(line, '#');
    if (hash) *hash = 0;
    int c[4] = {0, 0, 0, 0};
    const int n = sscanf(line, "%d %d %d %d", &c[0], &c[1], &c[2], &c[3]);
    if (n < 3) continue;
    memcpy(expected[r++], c, sizeof c);
  }
  fclose(f);
  return r == ntasks;
}

static int hops(const int a[4], const int b[4]) {
  const int ext[3] = {X, Y, Z};
  int h = 0;
  for (int d = 0; d < 3; d++) {
    int delta = abs(a[d] - b[d]);
    if (torus[d] && ext[d] - delta < delta) delta = ext[d] - delta;
    h += delta;
  }
  return h;
}

static int world_rank_of(MPI_Comm comm, int crank) {
  MPI_Group g, w;
  int out;
  MPI_Comm_group(comm, &g);
  MPI_Comm_group(MPI_COMM_WORLD, &w);
  MPI_Group_translate_ranks(g, 1, &crank, w, &out);
  MPI_Group_free(&g);
  MPI_Group_free(&w);
  return out;
}

static void check_world(void) {
  int nd = 0;
  MT_CHECK(MPIX_Torus_ndims(&nd) == MPI_SUCCESS && nd == 3, "ndims %d", nd);
  for (int r = 0; r < mt_size; r++) {
    int c[4] = {-1, -1, -1, -1}, back = -1;
    MT_CHECK(MPIX_Rank2torus(r, c) == MPI_SUCCESS, "Rank2torus(%d)", r);
    MT_CHECK(memcmp(c, expected[r], sizeof c) == 0,
             "rank %d at <%d,%d,%d,%d>, expected <%d,%d,%d,%d>", r, c[0], c[1], c[2], c[3],
             expected[r][0], expected[r][1], expected[r][2], expected[r][3]);
    MT_CHECK(MPIX_Torus2rank(expected[r], &back) == MPI_SUCCESS && back == r,
             "Torus2rank of rank %d's place gave %d", r, back);
    unsigned x, y, z, t;
    MPIX_rank2torus((unsigned)r, &x, &y, &z, &t);
    MT_CHECK((int)x == expected[r][0] && (int)y == expected[r][1] && (int)z == expected[r][2] &&
                 (int)t == expected[r][3],
             "rank2torus(%d)", r);
    MT_CHECK(MPIX_torus2rank(x, y, z, t) == (unsigned)r, "torus2rank of rank %d", r);
  }
  /* Places without a task, and bad arguments. */
  int free_places = X * Y * Z * T - mt_size, seen_free = 0;
  for (int t = 0; t < T; t++)
    for (int z = 0; z < Z; z++)
      for (int y = 0; y < Y; y++)
        for (int x = 0; x < X; x++) {
          int c[4] = {x, y, z, t}, r = -5;
          MT_CHECK(MPIX_Torus2rank(c, &r) == MPI_SUCCESS, "Torus2rank <%d,%d,%d,%d>", x, y, z, t);
          seen_free += r == MPI_UNDEFINED;
        }
  MT_CHECK(seen_free == free_places, "%d places without a task, expected %d", seen_free,
           free_places);
  int bad[4] = {X, 0, 0, 0}, r, c[4];
  MT_CHECK(MPIX_Torus2rank(bad, &r) == MPI_ERR_ARG, "coordinates outside the partition");
  bad[0] = 0;
  bad[3] = T;
  MT_CHECK(MPIX_Torus2rank(bad, &r) == MPI_ERR_ARG, "t outside the node");
  MT_CHECK(MPIX_Rank2torus(mt_size, c) == MPI_ERR_RANK, "rank out of range");
  MT_CHECK(MPIX_Rank2torus(-1, c) == MPI_ERR_RANK, "negative rank");
  MT_CHECK(MPIX_torus2rank((unsigned)X, 0, 0, 0) == (unsigned)-1, "BG/P torus2rank outside");
  MT_CHECK(MPIX_Hardware(NULL) == MPI_ERR_ARG, "Hardware(NULL)");
}

static void check_hardware(void) {
  MPIX_Hardware_t hw;
  const int* me = expected[mt_rank];
  MT_CHECK(MPIX_Hardware(&hw) == MPI_SUCCESS, "Hardware");
  MT_CHECK(hw.torus_dimension == 3, "torus_dimension %u", hw.torus_dimension);
  MT_CHECK(hw.Size[0] == (unsigned)X && hw.Size[1] == (unsigned)Y && hw.Size[2] == (unsigned)Z &&
               hw.Size[3] == 1 && hw.Size[4] == 1,
           "Size %u %u %u", hw.Size[0], hw.Size[1], hw.Size[2]);
  for (int d = 0; d < 3; d++) {
    MT_CHECK(hw.Coords[d] == (unsigned)me[d], "Coords[%d] %u, expected %d", d, hw.Coords[d], me[d]);
    MT_CHECK(hw.isTorus[d] == (unsigned)torus[d], "isTorus[%d] %u", d, hw.isTorus[d]);
  }
  MT_CHECK(hw.ppn == (unsigned)T && hw.coreID == (unsigned)me[3], "ppn %u coreID %u", hw.ppn,
           hw.coreID);
  MT_CHECK(hw.psize == (unsigned)(X * Y * Z * T), "psize %u", hw.psize);
  MT_CHECK(hw.prank == (unsigned)(me[0] + X * (me[1] + Y * (me[2] + Z * me[3]))), "prank %u",
           hw.prank);
  MT_CHECK(hw.clockMHz == 700 && hw.memSize == (unsigned)(512 / T), "clock %u memory %u",
           hw.clockMHz, hw.memSize);
  MT_CHECK(hw.sizeOfPset == (unsigned)(X * Y * Z) && hw.idOfPset == 0 &&
               hw.rankInPset == (unsigned)(me[0] + X * (me[1] + Y * me[2])),
           "pset %u %u %u", hw.rankInPset, hw.sizeOfPset, hw.idOfPset);
  char name[MPI_MAX_PROCESSOR_NAME], want[64];
  int len;
  MPI_Get_processor_name(name, &len);
  snprintf(want, sizeof want, "<%d,%d,%d,%d>", me[0], me[1], me[2], me[3]);
  MT_CHECK(strstr(name, want) != NULL, "processor name %s, expected %s", name, want);
}

static void check_comm(void) {
  /* Odd and even ranks, each half in reverse order. */
  MPI_Comm half;
  MPI_Comm_split(MPI_COMM_WORLD, mt_rank % 2, -mt_rank, &half);
  int n;
  MPI_Comm_size(half, &n);
  for (int cr = 0; cr < n; cr++) {
    const int w = world_rank_of(half, cr);
    int g = -1;
    MT_CHECK(MPIX_Comm_rank2global(half, cr, &g) == MPI_SUCCESS && g == w,
             "rank2global %d -> %d, expected %d", cr, g, w);
    unsigned x, y, z, t;
    MPIX_Comm_rank2torus(half, (unsigned)cr, &x, &y, &z, &t);
    MT_CHECK((int)x == expected[w][0] && (int)y == expected[w][1] && (int)z == expected[w][2] &&
                 (int)t == expected[w][3],
             "Comm_rank2torus(%d)", cr);
    MT_CHECK(MPIX_Comm_torus2rank(half, x, y, z, t) == (unsigned)cr, "Comm_torus2rank of %d", cr);
  }
  if (mt_size > 1) {
    const int other = (mt_rank + 1) % mt_size; /* the other half */
    const int* o = expected[other];
    MT_CHECK(MPIX_Comm_torus2rank(half, o[0], o[1], o[2], o[3]) == (unsigned)MPI_UNDEFINED,
             "a task of the other half");
  }
  int g;
  MT_CHECK(MPIX_Comm_rank2global(half, n, &g) == MPI_ERR_RANK, "rank2global out of range");
  MPI_Comm_free(&half);
}

static void check_cart(void) {
  MPI_Comm cart;
  const int rc = MPIX_Cart_comm_create(&cart);
  if (mt_size != X * Y * Z * T) {
    MT_CHECK(rc == MPI_ERR_TOPOLOGY && cart == MPI_COMM_NULL, "partial partition: rc %d", rc);
    return;
  }
  MT_CHECK(rc == MPI_SUCCESS, "Cart_comm_create %d", rc);
  if (rc != MPI_SUCCESS) return;
  int dims[4], periods[4], coords[4], crank;
  MPI_Cart_get(cart, 4, dims, periods, coords);
  MPI_Comm_rank(cart, &crank);
  const int* me = expected[mt_rank];
  MT_CHECK(dims[0] == T && dims[1] == Z && dims[2] == Y && dims[3] == X, "dims %d %d %d %d",
           dims[0], dims[1], dims[2], dims[3]);
  MT_CHECK(
      periods[0] == 1 && periods[1] == torus[2] && periods[2] == torus[1] && periods[3] == torus[0],
      "periods");
  MT_CHECK(coords[0] == me[3] && coords[1] == me[2] && coords[2] == me[1] && coords[3] == me[0],
           "coords %d %d %d %d", coords[0], coords[1], coords[2], coords[3]);
  MT_CHECK(crank == me[0] + X * (me[1] + Y * (me[2] + Z * me[3])), "cart rank %d", crank);
  for (int d = 1; d < 4; d++) {
    int src, dst;
    MPI_Cart_shift(cart, d, 1, &src, &dst);
    if (dst == MPI_PROC_NULL) continue;
    const int w = world_rank_of(cart, dst);
    MT_CHECK(hops(me, expected[w]) == 1, "cart neighbour in dimension %d is %d hops away", d,
             hops(me, expected[w]));
  }
  MPI_Comm_free(&cart);
}

int main(int argc, char** argv) {
  mt_init(&argc, &argv);
  if (argc != 5 || sscanf(argv[1], "%dx%dx%d", &X, &Y, &Z) != 3 || (T = atoi(argv[2])) < 1 ||
      mt_size > MAX_TASKS) {
    if (mt_rank == 0) fprintf(stderr, "usage: mpix SHAPE TASKS_PER_NODE MESH order:O|file:F\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  for (int d = 0; d < 3; d++)
    torus[d] = strchr(argv[3], "xyz"[d]) == NULL;
  if (!parse_expected(argv[4], mt_size)) {
    fprintf(stderr, "mpix: cannot read the expected mapping %s\n", argv[4]);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  check_world();
  check_hardware();
  check_comm();
  check_cart();
  return mt_finish("mpix");
}
