/* The host topology bglrun discovers once for all ranks: every rank finds the same hwloc XML file
 * through HWLOC_XMLFILE (unless the user chose hwloc's discovery), MPICH's MPI_Init loads it, and
 * a split by shared memory still puts every rank of the host together. Rank 0 prints what the
 * ranks saw; the test checks it and that the file is gone once the job has ended. */
#include "mpitest.h"

/* 1 if `path` is a readable hwloc topology. */
static int is_topology(const char* path) {
  char text[4096] = {0};
  FILE* f = fopen(path, "r");
  if (!f) return 0;
  const size_t n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  return n > 0 && strstr(text, "<topology") != NULL;
}

int main(int argc, char** argv) {
  mt_init(&argc, &argv);
  const char* xml = getenv("HWLOC_XMLFILE");
  int mine[2] = {xml != NULL, xml != NULL && is_topology(xml)}, all[2];
  MPI_Allreduce(mine, all, 2, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Comm shared;
  int shared_size = 0;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shared);
  MT_CHECK(shared != MPI_COMM_NULL, "no shared-memory communicator");
  if (shared != MPI_COMM_NULL) {
    MPI_Comm_size(shared, &shared_size);
    MPI_Comm_free(&shared);
  }
  MT_CHECK(shared_size == mt_size, "shared-memory communicator of %d ranks", shared_size);
  if (mt_rank == 0) {
    if (all[0])
      printf("hwtopo: file %s every rank %s\n", xml, all[1] ? "topology" : "unreadable");
    else
      printf("hwtopo: no file\n");
    printf("hwtopo: %s\n", mt_errors ? "FAILED" : "OK");
  }
  MPI_Finalize();
  return mt_errors != 0;
}
