#pragma once
// Tiny helpers for programs that run as tasks under bglrun in the multi-process tests: a failed
// check prints where and why, and the task exits non-zero so that bglrun stops the job.
#include <cstdio>
#include <cstdlib>
#include <span>

#include "bgl/packet_layer/endpoint.hpp"

namespace bgl::test {

[[noreturn]] inline void fail(const char* file, int line, const char* what, int rank) {
  std::fprintf(stderr, "CHECK FAILED rank %d %s:%d: %s\n", rank, file, line, what);
  std::fflush(stderr);
  std::exit(1);
}

// Injects, moving the network and draining arrivals into `on_packet` while the injection FIFO is
// full, so that two tasks flooding each other cannot deadlock.
template <class OnPacket>
void inject_draining(packet_layer::Endpoint& ep, int fifo, const packet_layer::PacketSpec& spec,
                     std::span<const std::byte> payload, OnPacket&& on_packet) {
  while (ep.inject(fifo, spec, payload) == packet_layer::InjectStatus::full) {
    bool any = false;
    while (auto f = ep.poll()) {
      on_packet(*f);
      any = true;
    }
    if (!any) ep.wait();
  }
}

}  // namespace bgl::test

#define BGL_CHECK(cond, rank)                                          \
  do {                                                                 \
    if (!(cond)) ::bgl::test::fail(__FILE__, __LINE__, #cond, (rank)); \
  } while (0)
