#include "bgl/virtual_time/params.hpp"

#include <charconv>
#include <cmath>
#include <sstream>

#include "bgl/torus_emu/error.hpp"
#include "bgl/torus_emu/input_file.hpp"
#include "bgl/torus_emu/user_text.hpp"

namespace bgl::virtual_time {
namespace {

using S = Source;
constexpr ParamInfo kTable[] = {
    {"cpu_hz", &Params::cpu_hz, "Hz", S::hardware, "processor clock"},
    {"link_bytes_per_cycle", &Params::link_bytes_per_cycle, "B/cycle", S::hardware,
     "torus link rate per direction (2 bits per cycle)"},
    {"wire_overhead_bytes", &Params::wire_overhead_bytes, "B", S::hardware,
     "bytes on the wire per packet beyond the packet itself"},
    {"hop_cycles", &Params::hop_cycles, "cycles", S::measured,
     "per-hop latency of a packet's head (90 ns per hop)"},
    {"packet_write_cycles", &Params::packet_write_cycles, "cycles", S::measured,
     "processor writes a packet into an injection FIFO (50-100)"},
    {"packet_read_cycles", &Params::packet_read_cycles, "cycles", S::measured,
     "processor reads a packet from a reception FIFO"},
    {"copy_bytes_per_cycle", &Params::copy_bytes_per_cycle, "B/cycle", S::measured,
     "streaming memory copy"},
    {"local_packet_cycles", &Params::local_packet_cycles, "cycles", S::assumed,
     "a node's packet to itself, which uses no link"},
    {"vn_packet_cycles", &Params::vn_packet_cycles, "cycles", S::assumed,
     "a packet through the virtual FIFO between the two tasks of a node"},
    {"injection_fifo_packets", &Params::injection_fifo_packets, "packets", S::assumed,
     "packets an injection FIFO holds; a task that has filled it waits for the link (1..64)"},
    {"tree_bytes_per_cycle", &Params::tree_bytes_per_cycle, "B/cycle", S::hardware,
     "collective network link rate"},
    {"tree_packet_bytes", &Params::tree_packet_bytes, "B", S::hardware,
     "collective network packet payload"},
    {"tree_overhead_bytes", &Params::tree_overhead_bytes, "B", S::hardware,
     "collective network bytes per packet beyond the payload"},
    {"tree_latency_cycles", &Params::tree_latency_cycles, "cycles", S::measured,
     "one way through the 65,536-node collective network (2.5 us)"},
    {"tree_reference_depth", &Params::tree_reference_depth, "levels", S::assumed,
     "depth of the tree that tree_latency_cycles was measured on"},
    {"gi_barrier_cycles", &Params::gi_barrier_cycles, "cycles", S::measured,
     "global-interrupt barrier after the last arrival (1.5 us)"},
    {"one_packet_send_cycles", &Params::one_packet_send_cycles, "cycles", S::fitted,
     "one-packet protocol, sender"},
    {"one_packet_recv_cycles", &Params::one_packet_recv_cycles, "cycles", S::fitted,
     "one-packet protocol, receiver"},
    {"eager_send_cycles", &Params::eager_send_cycles, "cycles", S::fitted,
     "eager protocol, sender, first packet"},
    {"eager_recv_cycles", &Params::eager_recv_cycles, "cycles", S::fitted,
     "eager protocol, receiver, first packet (match)"},
    {"eager_data_cycles", &Params::eager_data_cycles, "cycles", S::assumed,
     "eager protocol, each further packet, either side"},
    {"adaptive_send_cycles", &Params::adaptive_send_cycles, "cycles", S::fitted,
     "adaptive eager, sender, first packet"},
    {"adaptive_recv_cycles", &Params::adaptive_recv_cycles, "cycles", S::fitted,
     "adaptive eager, receiver, first packet (match, token)"},
    {"adaptive_data_cycles", &Params::adaptive_data_cycles, "cycles", S::assumed,
     "adaptive eager, each further packet, either side (placement by offset)"},
    {"token_cycles", &Params::token_cycles, "cycles", S::assumed,
     "adaptive eager token, sender and receiver each"},
    {"rzv_send_cycles", &Params::rzv_send_cycles, "cycles", S::fitted, "rendezvous scout, sender"},
    {"rzv_match_cycles", &Params::rzv_match_cycles, "cycles", S::fitted,
     "rendezvous, receiver matches the scout and answers"},
    {"rzv_ack_cycles", &Params::rzv_ack_cycles, "cycles", S::fitted,
     "rendezvous, sender takes the answer and starts the data"},
    {"rzv_data_cycles", &Params::rzv_data_cycles, "cycles", S::assumed,
     "rendezvous, each data packet, either side"},
    {"rzv_complete_cycles", &Params::rzv_complete_cycles, "cycles", S::fitted,
     "rendezvous, receiver completes the message"},
    {"vn_send_cycles", &Params::vn_send_cycles, "cycles", S::assumed,
     "virtual-node protocol, sender"},
    {"vn_recv_cycles", &Params::vn_recv_cycles, "cycles", S::assumed,
     "virtual-node protocol, receiver (before the copy)"},
    {"coprocessor_unit_cycles", &Params::coprocessor_unit_cycles, "cycles", S::assumed,
     "a work unit run by the communication coprocessor"},
    {"mpi_send_cycles", &Params::mpi_send_cycles, "cycles", S::fitted, "MPI send call"},
    {"mpi_recv_cycles", &Params::mpi_recv_cycles, "cycles", S::fitted, "MPI receive completion"},
    {"cpu_factor", &Params::cpu_factor, "BG/L s per host s", S::assumed,
     "host CPU time in the program itself, as BG/L time (0: communication only)"},
};

std::string_view trim(std::string_view s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string_view::npos) return {};
  const auto e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

const ParamInfo* find(std::string_view name) {
  for (const auto& p : kTable)
    if (p.name == name) return &p;
  return nullptr;
}

double parse_value(std::string_view text, const std::string& where) {
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || end != text.data() + text.size() || !std::isfinite(v))
    throw ConfigError(where + ": '" + printable(text, 40) + "' is not a number");
  if (v < 0) throw ConfigError(where + ": " + std::string(text) + " is negative");
  return v;
}

}  // namespace

std::string_view to_string(Sync s) {
  return s == Sync::conservative ? "conservative" : "host order";
}

std::string_view to_string(Source s) {
  switch (s) {
    case Source::hardware:
      return "hardware";
    case Source::measured:
      return "measured";
    case Source::fitted:
      return "fitted";
    case Source::assumed:
      return "assumed";
  }
  return "?";
}

std::span<const ParamInfo> parameter_table() {
  return kTable;
}

std::uint64_t Params::link_cycles(std::uint32_t packet_bytes) const {
  return static_cast<std::uint64_t>(
      std::ceil((packet_bytes + wire_overhead_bytes) / link_bytes_per_cycle));
}

Params Params::from_text(std::string_view text, std::string_view origin) {
  Params p;
  int line_no = 0;
  while (!text.empty()) {
    const auto nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    ++line_no;
    const std::string where = std::string(origin) + ":" + std::to_string(line_no);
    line = trim(line.substr(0, line.find('#')));
    if (line.empty()) continue;
    const auto eq = line.find('=');
    if (eq == std::string_view::npos) throw ConfigError(where + ": expected 'name = value'");
    const auto name = trim(line.substr(0, eq));
    const ParamInfo* info = find(name);
    if (!info)
      throw ConfigError(where + ": unknown parameter '" + printable(name, 40) +
                        "' (bglrun --vt-params-list shows them)");
    const double v = parse_value(trim(line.substr(eq + 1)), where);
    if (v == 0 && info->name != "cpu_factor" && info->unit != "cycles")
      throw ConfigError(where + ": " + std::string(name) + " must be positive");
    if (info->member == &Params::injection_fifo_packets && (v < 1 || v > 64 || v != std::floor(v)))
      throw ConfigError(where + ": injection_fifo_packets must be a whole number in 1..64");
    p.*(info->member) = v;
  }
  return p;
}

Params Params::from_file(const std::string& path) {
  // A parameters file is a few dozen lines: 1 MiB is far beyond any real one.
  return from_text(read_input_file(path, "virtual-time parameters file", std::size_t{1} << 20),
                   printable(path, 256));
}

std::string Params::to_json() const {
  std::ostringstream out;
  out << '{';
  bool first = true;
  for (const auto& p : kTable) {
    if (!first) out << ',';
    first = false;
    out << '"' << p.name << "\":{\"value\":" << this->*(p.member) << ",\"unit\":\"" << p.unit
        << "\",\"source\":\"" << to_string(p.source) << "\"}";
  }
  out << '}';
  return out.str();
}

}  // namespace bgl::virtual_time
