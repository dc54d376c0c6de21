#pragma once
// Torus cost model (docs/COLLECTIVES.md, "Cost model"): replays the transfers of a verified
// schedule on the partition's links and estimates its time from BG/L's constants.
#include <cstdint>
#include <string>

#include "bgl/collectives/params.hpp"
#include "bgl/collectives/schedule.hpp"
#include "bgl/collectives/verifier.hpp"
#include "bgl/torus_emu/route.hpp"

namespace bgl::collectives {

// BG/L's figures (700 MHz cycles) and the emulator's packet model.
struct CostConstants {
  double cpu_hz = 700e6;
  double link_bytes_per_cycle = 0.25;  // torus, per direction (175 MB/s raw)
  std::uint32_t packet_payload = 240;  // full packet: 256 B = 16 B header + 240 B payload
  std::uint32_t packet_header = 16;
  std::uint32_t packet_wire_overhead = 14;  // CRC etc. per packet
  double hop_cycles = 63;                   // ≈ 90 ns per hop
  double message_cycles = 1600;       // fixed software cost per message (one-packet ML half RTT)
  double packet_write_cycles = 75;    // 50-100: FIFO injection per packet
  double packet_read_cycles = 204;    // FIFO reception per packet
  double copy_bytes_per_cycle = 4.3;  // streaming memory copy (local copy/reduce steps)
  double tree_bytes_per_cycle = 0.5;  // collective network (350 MB/s)
  std::uint32_t tree_packet = 256;    // all payload
  std::uint32_t tree_overhead = 10;
  double tree_hop_ns = 2500.0 / 64;  // 2.5 µs over the 64-hop depth of the 65,536-node tree
  double gi_barrier_ns = 1500;       // global interrupt barrier
};

struct CostReport {
  int rounds = 0;                        // communication levels of the verifier's lock-step run
  std::uint64_t messages = 0;            // point-to-point and line transfers
  std::uint64_t max_link_bytes = 0;      // payload bytes on the busiest directed torus link
  torus_emu::Link busiest{};             // that link
  std::uint64_t hop_bytes = 0;           // sum over transfers of payload bytes x links crossed
  std::uint64_t max_rank_bytes_out = 0;  // payload injected by the busiest rank
  std::uint64_t tree_bytes = 0;          // payload over the collective network
  double time_us = 0;                    // estimated completion time
  std::string to_json() const;
};

// `trace` is verify()'s result for the same schedule and parameters (it must be ok).
// params.topology.mapping is required. Point-to-point transfers follow deterministic X->Y->Z
// routes; line sends follow their deposit-bit line (every receiver must lie on it, in order).
// Throws std::invalid_argument naming the problem (no mapping, a receiver off its line).
CostReport estimate_cost(const Schedule& schedule, const Params& params, const VerifyResult& trace,
                         const CostConstants& constants = {});

// BG/L's alltoall cross-section bound: the time to move the data that
// must cross the bisection of the partition's largest dimension, in microseconds, for P ranks
// exchanging `block` bytes per pair at payload rate `eta * link rate`.
double alltoall_bisection_bound_us(const torus_emu::Shape& shape, int ranks, std::uint64_t block,
                                   const CostConstants& constants = {});

}  // namespace bgl::collectives
