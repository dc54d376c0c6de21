#pragma once
// Min3-Allgather (Gupta and Vadhiyar): the measured network between hosts. One value of
// bandwidth and latency per *ordered* host pair, because the paper's links are directional.
#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace bgl::collectives::wide_area {

class HostNetwork {
 public:
  // bandwidth in bytes per second and latency in seconds, row-major [from * hosts + to]; the
  // diagonal is ignored. Throws ConfigError for a size mismatch or a non-positive bandwidth /
  // negative latency off the diagonal (naming the pair).
  HostNetwork(int hosts, std::vector<double> bandwidth, std::vector<double> latency,
              std::vector<std::string> host_names = {});

  // Every pair has the same bandwidth and latency (a homogeneous LAN).
  static HostNetwork uniform(int hosts, double bandwidth, double latency);

  // The text format (docs/COLLECTIVES.md, "Grid allgather input"):
  //   hosts <n>                        first directive
  //   bandwidth-unit <u>               B/s KB/s MB/s GB/s bit/s Kbit/s Mbit/s Gbit/s (default MB/s)
  //   latency-unit <u>                 s ms us ns (default us)
  //   site <name> <hosts>              names a group: "0-7", "3", "0-3,8"
  //   link <from> <to> <bw> <latency>  sets every ordered pair (s != r) from group to group;
  //                                    a group is a site name, a host index or a range; later
  //                                    lines override earlier ones
  // '#' starts a comment. Every ordered pair must be set. Errors are ConfigError
  // "<source>:<line>: <problem>" (or "<source>: <problem>" for a missing pair).
  static HostNetwork parse(std::string_view text, std::string_view source_name);
  static HostNetwork from_file(const std::filesystem::path& path);

  // A text that parse() reads back to the same network (one link line per pair).
  std::string to_text() const;

  int hosts() const { return hosts_; }
  double bandwidth(int from, int to) const { return bandwidth_[index(from, to)]; }
  double latency(int from, int to) const { return latency_[index(from, to)]; }
  const std::string& host_name(int h) const { return names_[static_cast<std::size_t>(h)]; }

  // The sub-network of the given hosts (renumbered 0..n-1 in the given order).
  HostNetwork subset(const std::vector<int>& hosts) const;

 private:
  std::size_t index(int from, int to) const {
    return static_cast<std::size_t>(from) * static_cast<std::size_t>(hosts_) +
           static_cast<std::size_t>(to);
  }
  int hosts_;
  std::vector<double> bandwidth_;
  std::vector<double> latency_;
  std::vector<std::string> names_;
};

// The three-site grid of the paper's Tables 1 and 2 (UT 8 hosts, UK 4, NL 8 = 20 hosts) in the
// text format; `sites` selects the paper's setups: "UT,UK,NL" (setup 1), "UK,NL" (setup 2),
// "NL" (setup 3).
std::string paper_grid_text(std::string_view sites = "UT,UK,NL");

}  // namespace bgl::collectives::wide_area
