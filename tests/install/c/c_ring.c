/* Messages on the emulated torus through the message layer's C ABI (bgl/message_layer/bgl_msg.h,
 * libbglml): every task sends a short and a long message to the next rank, receives the previous
 * rank's, checks every byte and prints one line. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bgl/message_layer/bgl_msg.h"

enum { kHandler = 5, kMessages = 2 };
static const size_t kSizes[kMessages] = {100, 300000};

struct inbox {
  unsigned char* data[kMessages];
  size_t bytes[kMessages];
  uint32_t from[kMessages];
  int received;
  int sends_pending;
};

static unsigned char pattern(uint32_t from, size_t message, size_t i) {
  return (unsigned char)(from * 17u + message * 5u + i * 11u + (i >> 10));
}

static void recv_done(void* context, uint32_t handle_id, size_t bytes) {
  (void)handle_id;
  (void)bytes;
  ++((struct inbox*)context)->received;
}

static bgl_msg_recv_target_t arrival(void* context, const bgl_msg_arrival_t* a) {
  struct inbox* in = context;
  const unsigned m = a->header_bytes > 0 ? *(const unsigned char*)a->header % kMessages : 0;
  bgl_msg_recv_target_t t;
  memset(&t, 0, sizeof t);
  in->data[m] = malloc(a->bytes > 0 ? a->bytes : 1);
  in->bytes[m] = a->bytes;
  in->from[m] = a->source;
  t.kind = BGL_MSG_TARGET_BUFFER;
  t.buffer = in->data[m];
  t.bytes = a->bytes;
  t.done = recv_done;
  t.context = in;
  return t;
}

static void send_done(bgl_msg_send_t* send) {
  --((struct inbox*)send->context)->sends_pending;
}

int main(void) {
  bgl_msg_session_t* s = NULL;
  if (bgl_msg_init(NULL, &s) != 0) {
    fprintf(stderr, "c_ring: bgl_msg_init: %s\n", bgl_msg_last_error());
    return 2;
  }
  const uint32_t me = bgl_msg_rank(s), size = bgl_msg_size(s);
  const uint32_t next = (me + 1) % size, previous = (me + size - 1) % size;
  struct inbox in;
  memset(&in, 0, sizeof in);
  if (bgl_msg_register(s, kHandler, arrival, &in) != 0 || bgl_msg_barrier(s) != 0) {
    fprintf(stderr, "c_ring: %s\n", bgl_msg_last_error());
    return 2;
  }
  static bgl_msg_send_t sends[kMessages];
  unsigned char* out[kMessages];
  unsigned char headers[kMessages];
  in.sends_pending = kMessages;
  for (unsigned m = 0; m < kMessages; ++m) {
    out[m] = malloc(kSizes[m]);
    for (size_t i = 0; i < kSizes[m]; ++i)
      out[m][i] = pattern(me, m, i);
    headers[m] = (unsigned char)m;
    memset(&sends[m], 0, sizeof sends[m]);
    sends[m].dest = next;
    sends[m].handler = kHandler;
    sends[m].protocol = BGL_MSG_AUTO;
    sends[m].header = &headers[m];
    sends[m].header_bytes = 1;
    sends[m].data = out[m];
    sends[m].bytes = kSizes[m];
    sends[m].done = send_done;
    sends[m].context = &in;
    if (bgl_msg_post(s, &sends[m]) < 0) {
      fprintf(stderr, "c_ring: bgl_msg_post: %s\n", bgl_msg_last_error());
      return 2;
    }
  }
  while (in.received < kMessages || in.sends_pending > 0)
    if (!bgl_msg_advance(s)) bgl_msg_wait(s);
  bgl_msg_barrier(s);

  size_t wrong = 0, bytes = 0;
  for (unsigned m = 0; m < kMessages; ++m) {
    if (in.bytes[m] != kSizes[m] || in.from[m] != previous) ++wrong;
    for (size_t i = 0; i < in.bytes[m]; ++i)
      wrong += in.data[m][i] != pattern(previous, m, i);
    bytes += in.bytes[m];
    free(in.data[m]);
    free(out[m]);
  }
  printf("c_ring rank %u: %s, %d messages, %zu bytes from rank %u\n", me,
         wrong == 0 ? "ok" : "FAILED", kMessages, bytes, previous);
  bgl_msg_finalize(s);
  return wrong == 0 ? 0 : 1;
}
