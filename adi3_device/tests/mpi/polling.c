/* Non-blocking calls return at once. Rank 0 sends tag 1 synchronously (MPI_Ssend, MPI_Issend +
 * MPI_Wait, or MPI_Ssend_init + MPI_Start + MPI_Wait) and then tag 2 with MPI_Send; rank 1 posts
 * MPI_Irecv for tag 2 and polls it `calls` times (default one million) with a non-blocking call
 * before it receives tag 1. Tag 2 cannot arrive while rank 0 waits for tag 1's match, so every
 * poll must find nothing; and each poll must cost microseconds, not the sleep of a blocking wait:
 * a million polls that napped even 50 us each would take 50 s. The test fails when a round's
 * polls take longer than `limit` seconds (default 30) or when one of them finds tag 2.
 *
 *   polling [calls] [limit]
 *
 * Rounds: MPI_Test with each of the three synchronous sends, then MPI_Testany, MPI_Testsome,
 * MPI_Testall, MPI_Iprobe, MPI_Improbe and MPI_Request_get_status. Ranks other than 0 and 1 only
 * wait in the rounds' barriers (blocking waits, which may sleep). */
#include "mpitest.h"

enum send_kind { SSEND, ISSEND, SSEND_INIT };
enum poll_kind { TEST, TESTANY, TESTSOME, TESTALL, IPROBE, IMPROBE, GET_STATUS };

static const char* send_names[] = {"MPI_Ssend", "MPI_Issend", "MPI_Ssend_init"};
static const char* poll_names[] = {
    "MPI_Test",   "MPI_Testany", "MPI_Testsome",          "MPI_Testall",
    "MPI_Iprobe", "MPI_Improbe", "MPI_Request_get_status"};

static void sender(enum send_kind kind, int round) {
  int one = round, two = -round;
  MPI_Request r;
  switch (kind) {
    case SSEND:
      MPI_Ssend(&one, 1, MPI_INT, 1, 1, MPI_COMM_WORLD);
      break;
    case ISSEND:
      MPI_Issend(&one, 1, MPI_INT, 1, 1, MPI_COMM_WORLD, &r);
      MPI_Wait(&r, MPI_STATUS_IGNORE);
      break;
    case SSEND_INIT:
      MPI_Ssend_init(&one, 1, MPI_INT, 1, 1, MPI_COMM_WORLD, &r);
      MPI_Start(&r);
      MPI_Wait(&r, MPI_STATUS_IGNORE);
      MPI_Request_free(&r);
      break;
  }
  MPI_Send(&two, 1, MPI_INT, 1, 2, MPI_COMM_WORLD);
}

/* One non-blocking call on `req` (tag 2 from rank 0); returns whether it found tag 2. */
static int poll_once(enum poll_kind kind, MPI_Request* req) {
  int flag = 0, index = -1, count = 0, indices[1];
  MPI_Status statuses[1];
  MPI_Message msg;
  switch (kind) {
    case TEST:
      MPI_Test(req, &flag, MPI_STATUS_IGNORE);
      return flag;
    case TESTANY:
      MPI_Testany(1, req, &index, &flag, MPI_STATUS_IGNORE);
      return index != MPI_UNDEFINED;
    case TESTSOME:
      MPI_Testsome(1, req, &count, indices, statuses);
      return count > 0;
    case TESTALL:
      MPI_Testall(1, req, &flag, statuses);
      return flag;
    case IPROBE:
      MPI_Iprobe(0, 2, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
      return flag;
    case IMPROBE:
      MPI_Improbe(0, 2, MPI_COMM_WORLD, &flag, &msg, MPI_STATUS_IGNORE);
      return flag;
    case GET_STATUS:
      MPI_Request_get_status(*req, &flag, MPI_STATUS_IGNORE);
      return flag;
  }
  return 0;
}

static void poller(enum send_kind send, enum poll_kind poll, int round, long calls, double limit) {
  int one = 0, two = 0;
  MPI_Request req;
  /* the probes look for tag 2 itself, so it must not be matched by a posted receive yet */
  int probing = poll == IPROBE || poll == IMPROBE;
  if (!probing) MPI_Irecv(&two, 1, MPI_INT, 0, 2, MPI_COMM_WORLD, &req);
  long early = 0;
  double t0 = MPI_Wtime();
  for (long i = 0; i < calls; i++)
    early += poll_once(poll, &req);
  double seconds = MPI_Wtime() - t0;
  MPI_Recv(&one, 1, MPI_INT, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  if (probing)
    MPI_Recv(&two, 1, MPI_INT, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  else
    MPI_Wait(&req, MPI_STATUS_IGNORE);
  printf("polling: %s x %ld while rank 0 is in %s: %.3f s, %.3f us per call\n", poll_names[poll],
         calls, send_names[send], seconds, seconds / calls * 1e6);
  fflush(stdout);
  MT_CHECK(early == 0, "%s found tag 2 %ld times before tag 1 was received (%s)", poll_names[poll],
           early, send_names[send]);
  MT_CHECK(seconds <= limit, "%ld calls of %s took %.1f s, more than %.1f s", calls,
           poll_names[poll], seconds, limit);
  MT_CHECK(one == round && two == -round, "received %d and %d in round %d", one, two, round);
}

int main(int argc, char** argv) {
  mt_init(&argc, &argv);
  long calls = argc > 1 ? atol(argv[1]) : 1000000;
  double limit = argc > 2 ? atof(argv[2]) : 30.0;
  if (mt_size < 2) {
    fprintf(stderr, "polling: needs 2 ranks or more\n");
    return 2;
  }
  struct {
    enum send_kind send;
    enum poll_kind poll;
  } rounds[] = {{SSEND, TEST},    {ISSEND, TEST},     {SSEND_INIT, TEST},
                {SSEND, TESTANY}, {ISSEND, TESTSOME}, {SSEND_INIT, TESTALL},
                {SSEND, IPROBE},  {ISSEND, IMPROBE},  {SSEND_INIT, GET_STATUS}};
  for (int r = 0; r < (int)(sizeof rounds / sizeof rounds[0]); r++) {
    if (mt_rank == 0)
      sender(rounds[r].send, r + 1);
    else if (mt_rank == 1)
      poller(rounds[r].send, rounds[r].poll, r + 1, calls, limit);
    MPI_Barrier(MPI_COMM_WORLD);
  }
  return mt_finish("polling");
}
