/* What a rank inherits from bglrun: the launcher's own descriptor table (its main thread's, the one
 * fork() copies into each rank it starts) holds no socket per rank, so a rank started late does not
 * inherit, and close at exec, every earlier rank's PMI socket. Each rank counts the entries of
 * /proc/<parent>/fd; rank 0 prints the most any rank saw. */
#include <dirent.h>
#include <unistd.h>

#include "mpitest.h"

static int count_entries(const char* dir) {
  DIR* d = opendir(dir);
  if (!d) return -1;
  int n = 0;
  for (const struct dirent* e; (e = readdir(d)) != NULL;)
    n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

int main(int argc, char** argv) {
  mt_init(&argc, &argv);
  char dir[64];
  snprintf(dir, sizeof dir, "/proc/%d/fd", (int)getppid());
  const int mine = count_entries(dir);
  MT_CHECK(mine >= 0, "cannot read %s", dir);
  int most = 0;
  MPI_Reduce(&mine, &most, 1, MPI_INT, MPI_MAX, 0, MPI_COMM_WORLD);
  if (mt_rank == 0) {
    printf("launcher_fds: launcher descriptors %d with %d ranks\n", most, mt_size);
    printf("launcher_fds: %s\n", mt_errors ? "FAILED" : "OK");
  }
  MPI_Finalize();
  return mt_errors != 0;
}
