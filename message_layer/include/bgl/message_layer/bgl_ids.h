/* Every id range of the emulated machine's software in one place: the message layer's handler ids
 * and the packet dispatch ids of a task that runs the message layer, with the parts the layers
 * above it (the collectives library, the MPICH device) own. A new user of ids takes a range here,
 * so that two layers can never pick the same number. C and C++ (the device is C). */
#ifndef BGL_IDS_H
#define BGL_IDS_H

enum bgl_handler_ids {
  /* Message handler ids (a message's `handler`, MessageLayer::register_handler), 0..63. */
  BGL_MSG_MAX_HANDLERS = 64,
  /* 0 .. BGL_HANDLER_DEVICE_FIRST-1: a program's own. Under MPI these are MPICH's MPIDIG active
   * messages (the device checks that MPIDIG_HANDLER_STATIC_MAX fits below). */
  BGL_HANDLER_DEVICE_FIRST = 46,
  BGL_HANDLER_DEVICE_SYNC_ACK = 46, /* the MPICH device: a receive matched a synchronous send */
  BGL_HANDLER_DEVICE_SEND = 47,     /* the MPICH device: an MPI point-to-point message */
  /* BGL_HANDLER_COLL_FIRST .. BGL_MSG_MAX_HANDLERS-1: the collectives library's. */
  BGL_HANDLER_COLL_FIRST = 48,
  BGL_HANDLER_COLL_EXECUTOR = 62 /* its executor's messages (collectives/executor.hpp) */
};

enum bgl_dispatch_ids {
  /* Packet dispatch ids (the packet header's `dispatch`) on a task that runs the message layer;
   * a program that drives the packet layer alone owns all 256. */
  BGL_DISPATCH_ML_FIRST = 1, /* the message layer's protocols (message_layer/src/wire.hpp) */
  BGL_DISPATCH_ML_LAST = 15,
  /* Other layers' own packets, delivered by MessageLayer::register_packet_handler. */
  BGL_DISPATCH_FOREIGN_FIRST = 16,
  BGL_DISPATCH_COLL_LINE = 16, /* the collectives' deposit-bit line packets */
  BGL_DISPATCH_FOREIGN_LAST = 31
};

#endif
