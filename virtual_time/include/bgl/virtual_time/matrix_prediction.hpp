#pragma once
// The BG/L time of a communication matrix under a mapping, estimated from the timing model's
// parameters without running anything: what bglmap --optimize and --rate report beside
// hop-bytes and the busiest link (docs/VIRTUAL_TIME.md, "Predicting a mapping's time").
//
// Every pair's bytes are cut into messages (the recorded count; unknown: messages of the eager
// limit) and each message into the message layer's packets for its protocol (one packet, eager or
// rendezvous by size; virtual-node protocol between the two tasks of a node). Then
//   link time  = the busiest directed link's wire time: every packet crossing it (deterministic
//                X->Y->Z routes; rendezvous acknowledgements back the other way), in 32-byte
//                chunks plus the per-packet wire overhead, at link_bytes_per_cycle;
//   task time  = the busiest task's message-layer software: per message its protocol's send or
//                receive cycles, per packet packet_write_cycles or packet_read_cycles and the
//                protocol's per-data-packet cycles (a virtual-node copy at copy_bytes_per_cycle);
//   latency    = per round the longest route's hop_cycles plus one full packet's wire time, the
//                rounds being the most messages any one pair exchanged (a pair's messages are
//                taken to follow each other, each round waiting for the previous one);
//   predicted  = max(link time, task time) + latency.
// It assumes that all traffic may overlap (no other dependencies, no computation), so it is an
// estimate, not a bound: programs that wait between phases take longer. docs/VIRTUAL_TIME.md
// compares it with bglrun --virtual-time runs.
#include <cstdint>

#include "bgl/torus_emu/comm_matrix.hpp"
#include "bgl/torus_emu/mapping.hpp"
#include "bgl/torus_emu/route.hpp"
#include "bgl/virtual_time/params.hpp"

namespace bgl::virtual_time {

struct PredictOptions {
  std::uint64_t eager_limit = 16 * 1024;  // BGL_ML_EAGER_LIMIT: larger messages use rendezvous
  std::uint32_t user_header_bytes = 16;   // the MPI device's header in every first packet
};

struct Prediction {
  double link_cycles = 0;  // the busiest directed link's wire time
  torus_emu::Link busiest_link{};
  double task_cycles = 0;  // the busiest task's software time
  std::uint32_t busiest_task = 0;
  double latency_cycles = 0;  // rounds x (longest route + one packet)
  std::uint64_t rounds = 0;
  std::uint64_t messages = 0;  // all pairs' messages (estimated where unknown)
  std::uint64_t packets = 0;   // all torus and virtual-FIFO packets
  double cycles() const {
    return (link_cycles > task_cycles ? link_cycles : task_cycles) + latency_cycles;
  }
  // "links" or "tasks": which of the two limits the prediction.
  const char* limit() const { return link_cycles > task_cycles ? "links" : "tasks"; }
};

// Throws ConfigError when the matrix and the mapping disagree on the number of tasks.
Prediction predict_time(const torus_emu::CommMatrix& matrix, const torus_emu::Mapping& mapping,
                        const Params& params, const PredictOptions& options = {});

}  // namespace bgl::virtual_time
