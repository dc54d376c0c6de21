#pragma once
// The constants of the Blue Gene/L timing model, in one table. Every prediction names the set it
// came from (the built-in defaults or a file given with --vt-params). Units are BG/L processor
// cycles (700 MHz) unless a name says otherwise.
//
// The struct is trivially copyable: the launcher writes the resolved set into the job's segment
// and every task reads the same values from there.
#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

namespace bgl::virtual_time {

// Where a parameter's value comes from.
enum class Source : std::uint8_t {
  hardware,  // a fact of the machine stated by the BG/L paper
  measured,  // a figure the paper measured, used as a constant
  fitted,    // chosen so that the model reproduces one of the paper's measurements
  assumed    // the paper says nothing; an engineering estimate
};
std::string_view to_string(Source s);

// How the tasks' clocks are kept in step (the launcher's choice, not a model constant): in host
// order a task takes its packets in virtual order among those that are there; conservatively it
// takes one only when no other task can still send it an earlier one (horizon.hpp).
enum class Sync : std::uint8_t { host_order, conservative };
std::string_view to_string(Sync s);

struct Params {
  // Machine.
  double cpu_hz = 700e6;
  double link_bytes_per_cycle = 0.25;  // torus link, per direction
  double wire_overhead_bytes = 14;     // CRC, link-level acknowledgement, per packet
  double hop_cycles = 63;              // cut-through: the head's advance per router
  double packet_write_cycles = 75;     // processor writes a packet into an injection FIFO
  double packet_read_cycles = 204;     // processor reads a packet from a reception FIFO
  double copy_bytes_per_cycle = 4.3;   // streaming memory copy
  double local_packet_cycles = 100;    // a node's packet to itself (no link)
  double vn_packet_cycles = 150;       // virtual FIFO between the two tasks of a node (scratchpad)
  double injection_fifo_packets = 8;   // packets an injection FIFO holds before the CPU must wait
  double tree_bytes_per_cycle = 0.5;   // collective network
  double tree_packet_bytes = 256;      // collective network packet, all payload
  double tree_overhead_bytes = 10;     // per collective network packet
  double tree_latency_cycles = 1750;   // 2.5 us one way across the 65,536-node tree
  double tree_reference_depth = 64;    // depth of that tree (hops root to deepest leaf)
  double gi_barrier_cycles = 1050;     // 1.5 us after the last arrival
  // Message-layer software, per protocol action.
  double one_packet_send_cycles = 450;
  double one_packet_recv_cycles = 624;
  double eager_send_cycles = 1000;
  double eager_recv_cycles = 1174;
  double eager_data_cycles = 60;  // each further data packet, sender and receiver each
  double adaptive_send_cycles = 1250;
  double adaptive_recv_cycles = 1299;
  double adaptive_data_cycles = 120;     // reordering by offset: a copy per packet
  double token_cycles = 150;             // adaptive eager: the token, either side
  double rzv_send_cycles = 2000;         // scout
  double rzv_match_cycles = 3000;        // receiver: match the scout, answer with the ack
  double rzv_ack_cycles = 2000;          // sender: take the ack, start the data
  double rzv_data_cycles = 60;           // per data packet, either side
  double rzv_complete_cycles = 3227;     // receiver: the last data packet completes the message
  double vn_send_cycles = 800;           // virtual-node protocol: descriptor
  double vn_recv_cycles = 800;           // match, then copy at copy_bytes_per_cycle
  double coprocessor_unit_cycles = 400;  // a work unit taken by the communication coprocessor
  // MPI (the device), per call.
  double mpi_send_cycles = 311;
  double mpi_recv_cycles = 311;
  // Host CPU time spent in the program itself, converted to BG/L time (0: communication only).
  double cpu_factor = 0;
  Sync sync = Sync::host_order;

  // Ticks (whole cycles) of a duration given in cycles.
  static std::uint64_t ticks(double cycles) { return static_cast<std::uint64_t>(cycles + 0.5); }
  std::uint64_t link_cycles(std::uint32_t packet_bytes) const;
  double seconds(std::uint64_t cycles) const { return static_cast<double>(cycles) / cpu_hz; }

  // Reads "name = value" lines ('#' comments, blank lines) over the defaults; ConfigError names the
  // file, the line and the problem (unknown name, malformed or out-of-range value).
  static Params from_file(const std::string& path);
  static Params from_text(std::string_view text, std::string_view origin);
  // The whole table as a JSON object: name -> {value, unit, source}.
  std::string to_json() const;
};
static_assert(std::is_trivially_copyable_v<Params>);

// One row of the parameter table: for files, documentation and reports.
struct ParamInfo {
  std::string_view name;
  double Params::*member;
  std::string_view unit;
  Source source;
  std::string_view meaning;
};
std::span<const ParamInfo> parameter_table();

}  // namespace bgl::virtual_time
