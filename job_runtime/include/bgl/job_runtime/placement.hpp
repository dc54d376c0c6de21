#pragma once
// Which emulated nodes live on which host, and how packets between hosts travel. A partition that
// outgrows one machine is split over hosts: each host keeps the FIFOs of its own nodes in its own
// shared-memory segment, and packets for nodes on another host go through the libfabric backend
// (docs/PACKETS.md, "Several hosts").
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bgl/torus_emu/shape.hpp"

namespace bgl::job_runtime {

// shm: every node on this host, packets move through shared memory only.
// ofi: packets for other nodes go through the host's libfabric agent (automatic with several
//      hosts; forced with BGL_TRANSPORT=ofi on one host, where the agent talks to itself).
enum class Transport : std::uint8_t { shm, ofi };
std::string_view to_string(Transport t);

struct HostEntry {
  std::string name;
  std::string address;  // what libfabric binds to and peers reach (default: the name)
  int nodes = 0;        // nodes placed on the host (0 in a host file: an equal share)
  std::string netns;    // emulated host: the network namespace its bglrun enters (netns=NAME)
};

struct Placement {
  static constexpr int kMaxHosts = 4096;

  std::vector<HostEntry> hosts;
  std::vector<std::uint16_t> node_host;  // per node: index into hosts
  int this_host = 0;
  Transport transport = Transport::shm;
  std::string source;  // "one host", "--hosts 2", "file hosts.txt"

  int host_count() const { return static_cast<int>(hosts.size()); }
  bool local(torus_emu::NodeId node) const { return node_host[node] == this_host; }
  int local_nodes() const;
  // Every host lives on this machine (loopback addresses or network namespaces): tests, benchmarks.
  bool emulated() const;
  // One line per host: its nodes (range of node ids and coordinate box) and address.
  std::string report(const torus_emu::Shape& shape) const;

  // One host holding every node.
  static Placement single(const torus_emu::Shape& shape);
  // `hostfile` (lines "name [address] [nodes=N] [netns=NAME]", '#' comments) or `hosts` hosts on
  // 127.0.0.1; nodes in contiguous blocks of node ids (slabs of the torus along z, then y) unless
  // the file gives counts. `transport` is "shm", "ofi" or "auto" (ofi when there are several
  // hosts). Throws ConfigError naming the file and line, or the option.
  static Placement resolve(const torus_emu::Shape& shape,
                           const std::optional<std::string>& hostfile, std::optional<int> hosts,
                           const std::optional<std::string>& transport, int this_host);
  static std::vector<HostEntry> parse_hostfile(std::string_view text, std::string_view source);
};

}  // namespace bgl::job_runtime
