#pragma once
// Statistics files made by hand in bglrun's format, for testing the report without running a job:
// any shape and mode, with or without virtual time and its per-protocol latency list.
#include <nlohmann/json.hpp>

#include <string>

namespace bgl::report::test {

struct Synthetic {
  int x = 2, y = 2, z = 2;
  bool vn = false;  // two tasks per node
  bool virtual_time = true;
  bool latency = true;  // virtual_time/protocols
  std::string mapping = "order XYZT";
  std::string protocol = "eager";  // the name of the busiest protocol
  bool collective_sites = true;    // collective_sites, as bglrun --stats writes it
  std::string site = "main (halo.c:42)";
  std::string rule = "< 12 KiB: binomial";
  int sites = 3;  // rows of collective_sites
};

inline nlohmann::json synthetic_stats(const Synthetic& s) {
  using nlohmann::json;
  const int nodes = s.x * s.y * s.z, per_node = s.vn ? 2 : 1, ntasks = nodes * per_node;
  const auto coord = [&](int n) { return json::array({n % s.x, n / s.x % s.y, n / (s.x * s.y)}); };
  json tasks = json::array();
  for (int r = 0; r < ntasks; ++r) {
    const int node = r % nodes, t = r / nodes;
    json protocols = {{s.protocol,
                       {{"messages_sent", 10 + r % 7},
                        {"packets_sent", 40 + r % 5},
                        {"bytes_sent", 9000 + r},
                        {"messages_received", 10},
                        {"packets_received", 40},
                        {"bytes_received", 9000}}},
                      {"rendezvous",
                       {{"messages_sent", 2},
                        {"packets_sent", 200},
                        {"bytes_sent", 48000},
                        {"messages_received", 2},
                        {"packets_received", 200},
                        {"bytes_received", 48000}}}};
    json task = {{"rank", r},
                 {"node", coord(node)},
                 {"t", t},
                 {"published", true},
                 {"counters",
                  {{"packets_injected", 240 + r % 5},
                   {"bytes_injected", 61440 + r},
                   {"packets_received", 240},
                   {"payload_bytes_received", 57000},
                   {"delivery_stalls", r % 3},
                   {"injection_full", 0},
                   {"malformed", 0}}},
                 {"message_layer",
                  {{"protocols", protocols},
                   {"unexpected_messages", r % 4},
                   {"unexpected_depth_max", r % 2}}}};
    if (s.virtual_time)
      task["virtual_clock"] = {{"cycles", 700000 + 100 * r},
                               {"seconds", (700000.0 + 100 * r) / 700e6},
                               {"software_cycles", 200000 + 10 * r},
                               {"waiting_cycles", 400000 + 90 * r},
                               {"computing_cycles", 100000}};
    tasks.push_back(task);
  }
  json links = json::array(), vt_links = json::array(), fifos = json::array();
  const char* dirs[] = {"+x", "-x", "+y", "-y", "+z", "-z"};
  for (int n = 0; n < nodes; ++n) {
    for (int d = 0; d < 6; ++d) {
      if ((d / 2 == 0 && s.x == 1) || (d / 2 == 1 && s.y == 1) || (d / 2 == 2 && s.z == 1))
        continue;
      const int packets = 10 + (n * 7 + d * 13) % 97;
      links.push_back(
          {{"node", coord(n)}, {"dir", dirs[d]}, {"packets", packets}, {"bytes", packets * 256}});
      if (s.virtual_time)
        vt_links.push_back({{"node", coord(n)},
                            {"dir", dirs[d]},
                            {"packets", packets},
                            {"busy_cycles", packets * 1088},
                            {"utilisation", packets * 1088 / 800000.0}});
    }
    for (int g = 0; g < per_node; ++g)
      fifos.push_back({{"node", coord(n)},
                       {"group", g},
                       {"fifo", "+x"},
                       {"received", 100 + n},
                       {"high_water", 1 + n % 64},
                       {"full_events", n % 5}});
  }
  json stats = {
      {"job",
       {{"shape", std::to_string(s.x) + "x" + std::to_string(s.y) + "x" + std::to_string(s.z)},
        {"mode", s.vn ? "vn" : "heater"},
        {"tasks", ntasks},
        {"mapping", s.mapping},
        {"fifo_packets", 64},
        {"seed", 1},
        {"host_seconds", 1.5}}},
      {"tasks", tasks},
      {"links", links},
      {"fifos", fifos}};
  if (s.virtual_time) {
    json vt = {{"parameters_source", "built-in defaults"},
               {"parameters",
                {{"cpu_hz", {{"value", 700e6}, {"unit", "Hz"}, {"source", "hardware"}}},
                 {"hop_cycles", {{"value", 63}, {"unit", "cycles"}, {"source", "measured"}}}}},
               {"predicted_cycles", 700000 + 100 * (ntasks - 1)},
               {"predicted_seconds", (700000.0 + 100 * (ntasks - 1)) / 700e6},
               {"slowest_rank", ntasks - 1},
               {"links", vt_links}};
    if (s.latency) {
      json histogram = json::array();
      for (int b = 0; b < 8; ++b)
        histogram.push_back({{"upper_ns", 1000.0 * (b + 1)}, {"count", 3 + b * (7 - b)}});
      vt["protocols"] = json::array(
          {{{"protocol", s.protocol},
            {"messages", 12},
            {"bytes", 3456},
            {"latency_ns",
             {{"min", 1.0}, {"mean", 2.0}, {"p50", 2.0}, {"p90", 3.0}, {"p99", 4.0}, {"max", 5.0}}},
            {"histogram", histogram}},
           {{"protocol", "rendezvous"},
            {"messages", 4},
            {"bytes", 96000},
            {"latency_ns",
             {{"min", 9000.0},
              {"mean", 12000.0},
              {"p50", 11000.0},
              {"p90", 15000.0},
              {"p99", 16000.0},
              {"max", 16500.0}}},
            {"histogram", json::array({{{"upper_ns", 10000.0}, {"count", 1}},
                                       {{"upper_ns", 20000.0}, {"count", 3}}})}}});
    }
    stats["virtual_time"] = vt;
  }
  if (s.collective_sites) {
    json rows = json::array();
    for (int i = 0; i < s.sites; ++i) {
      json row = {{"site", i == 0 ? s.site : "solve (solver.c:" + std::to_string(100 + i) + ")"},
                  {"function", i == 0 ? s.site : "solve"},
                  {"file", "/src/solver.c"},
                  {"line", 100 + i},
                  {"module", "/bin/prog"},
                  {"offset", "0x" + std::to_string(1000 + i)},
                  {"op", i % 2 ? "allreduce" : "bcast"},
                  {"algorithm", i % 2 ? "tree" : "binomial"},
                  {"rule", i == 0 ? s.rule : "whole partition: collective network"},
                  {"comm_size", ntasks},
                  {"bytes", 8 << (i % 12)},
                  {"tasks", ntasks},
                  {"calls", ntasks * (10 + i)},
                  {"host_seconds", 0.5 / (i + 1)},
                  {"host_seconds_slowest_task", 0.5 / (i + 1) / ntasks * 1.5},
                  {"host_call_seconds_min", 1e-6},
                  {"host_call_seconds_max", 1e-3}};
      if (i % 2 == 0) row["root"] = 0;
      if (s.virtual_time) {
        row["cycles"] = 70000 * (i + 1);
        row["virtual_seconds"] = 70000.0 * (i + 1) / 700e6;
        row["virtual_seconds_slowest_task"] = 70000.0 * (i + 1) / 700e6 / ntasks;
      }
      rows.push_back(row);
    }
    stats["collective_sites"] = {{"capacity", 256},
                                 {"tasks_reporting", ntasks},
                                 {"virtual_time", s.virtual_time},
                                 {"sites", rows},
                                 {"rows_left_out", 0},
                                 {"overflow", {{"tasks", 1}, {"calls", 5}, {"host_seconds", 0.01}}},
                                 {"other_threads_calls", 0}};
  }
  return stats;
}

}  // namespace bgl::report::test
