#include "bgl/job_runtime/placement.hpp"

#include <algorithm>
#include <sstream>

#include "bgl/job_runtime/env.hpp"
#include "bgl/torus_emu/error.hpp"
#include "bgl/torus_emu/input_file.hpp"
#include "bgl/torus_emu/user_text.hpp"

namespace bgl::job_runtime {

std::string_view to_string(Transport t) {
  return t == Transport::ofi ? "ofi" : "shm";
}

int Placement::local_nodes() const {
  return static_cast<int>(std::count(node_host.begin(), node_host.end(), this_host));
}

bool Placement::emulated() const {
  return std::all_of(hosts.begin(), hosts.end(), [](const HostEntry& h) {
    return h.address.starts_with("127.") || !h.netns.empty();
  });
}

Placement Placement::single(const torus_emu::Shape& shape) {
  Placement p;
  p.hosts.push_back({"localhost", "127.0.0.1", shape.node_count()});
  p.node_host.assign(static_cast<std::size_t>(shape.node_count()), 0);
  p.source = "one host";
  return p;
}

namespace {
constexpr std::size_t kMaxHostWord = 255;  // a DNS name has at most 253 characters
}  // namespace

std::vector<HostEntry> Placement::parse_hostfile(std::string_view text, std::string_view source) {
  std::vector<HostEntry> hosts;
  std::istringstream in{std::string(text)};
  int line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    const auto where = std::string(source) + ":" + std::to_string(line_no) + ": ";
    if (const auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream fields(line);
    std::vector<std::string> words;
    for (std::string w; fields >> w;)
      words.push_back(w);
    if (words.empty()) continue;
    // Names, addresses and namespaces are printed in reports and passed to Hydra and ip netns.
    for (const auto& w : words) {
      if (w.size() > kMaxHostWord)
        throw ConfigError(where + "'" + printable(w) + "' is longer than " +
                          std::to_string(kMaxHostWord) + " characters");
      if (!std::all_of(w.begin(), w.end(), [](char c) { return c > ' ' && c < 0x7f; }))
        throw ConfigError(where + "'" + printable(w) + "' holds a control or non-ASCII character");
    }
    HostEntry h;
    h.name = words[0];
    for (std::size_t i = 1; i < words.size(); ++i) {
      if (words[i].starts_with("nodes=")) {
        if (h.nodes) throw ConfigError(where + "nodes= given twice");
        h.nodes = static_cast<int>(job_runtime::env::parse_int(std::string_view(words[i]).substr(6),
                                                               where + "nodes", 1, 1 << 20));
      } else if (words[i].starts_with("netns=") && words[i].size() > 6) {
        h.netns = words[i].substr(6);
      } else if (h.address.empty() && words[i].find('=') == std::string::npos) {
        h.address = words[i];
      } else {
        throw ConfigError(where + "unexpected '" + printable(words[i]) +
                          "' (expected: name [address] [nodes=N] [netns=NAME])");
      }
    }
    if (h.address.empty()) h.address = h.name;
    hosts.push_back(std::move(h));
    if (hosts.size() > static_cast<std::size_t>(kMaxHosts))
      throw ConfigError(where + "more than " + std::to_string(kMaxHosts) + " hosts");
  }
  if (hosts.empty()) throw ConfigError(std::string(source) + ": no hosts");
  const bool any = std::any_of(hosts.begin(), hosts.end(), [](auto& h) { return h.nodes != 0; });
  const bool all = std::all_of(hosts.begin(), hosts.end(), [](auto& h) { return h.nodes != 0; });
  if (any && !all)
    throw ConfigError(std::string(source) + ": give nodes=N for every host or for none");
  return hosts;
}

Placement Placement::resolve(const torus_emu::Shape& shape,
                             const std::optional<std::string>& hostfile,
                             std::optional<int> host_count,
                             const std::optional<std::string>& transport, int this_host) {
  Placement p;
  const int nodes = shape.node_count();
  if (hostfile) {
    p.hosts = parse_hostfile(read_input_file(*hostfile, "host file"), printable(*hostfile, 256));
    p.source = "file " + printable(*hostfile, 256);
    if (host_count && *host_count != p.host_count())
      throw ConfigError("--hosts " + std::to_string(*host_count) + " but host file '" +
                        printable(*hostfile, 256) + "' lists " + std::to_string(p.host_count()) +
                        " hosts");
  } else {
    const int n = host_count.value_or(1);
    if (n < 1 || n > kMaxHosts)
      throw ConfigError("--hosts " + std::to_string(n) + ": expected 1.." +
                        std::to_string(kMaxHosts));
    for (int i = 0; i < n; ++i)
      p.hosts.push_back({"host" + std::to_string(i), "127.0.0.1", 0});
    p.source = n == 1 ? "one host" : "--hosts " + std::to_string(n) + " on 127.0.0.1";
  }
  const int hosts = p.host_count();
  if (hosts > nodes)
    throw ConfigError(std::to_string(hosts) + " hosts for " + std::to_string(nodes) +
                      " nodes: every host needs at least one node");
  if (p.hosts[0].nodes == 0) {
    // Equal contiguous blocks of node ids: with node id x + X*(y + Y*z), a block whose size is a
    // multiple of X*Y is a slab of whole z planes, so most traffic of a stencil stays on its host.
    for (int h = 0; h < hosts; ++h)
      p.hosts[static_cast<std::size_t>(h)].nodes = nodes / hosts + (h < nodes % hosts ? 1 : 0);
  } else {
    int sum = 0;
    for (const auto& h : p.hosts)
      sum += h.nodes;
    if (sum != nodes)
      throw ConfigError(p.source + ": nodes= add up to " + std::to_string(sum) + ", but shape " +
                        shape.to_string() + " has " + std::to_string(nodes) + " nodes");
  }
  p.node_host.reserve(static_cast<std::size_t>(nodes));
  for (int h = 0; h < hosts; ++h)
    p.node_host.insert(p.node_host.end(), static_cast<std::size_t>(p.hosts[h].nodes),
                       static_cast<std::uint16_t>(h));
  if (this_host < 0 || this_host >= hosts)
    throw ConfigError("this is host " + std::to_string(this_host) + " of a " +
                      std::to_string(hosts) + "-host placement");
  p.this_host = this_host;

  const std::string how = transport.value_or("auto");
  if (how == "auto") {
    p.transport = hosts > 1 ? Transport::ofi : Transport::shm;
  } else if (how == "ofi") {
    p.transport = Transport::ofi;
  } else if (how == "shm") {
    if (hosts > 1)
      throw ConfigError("BGL_TRANSPORT=shm, but the placement (" + p.source + ") spans " +
                        std::to_string(hosts) + " hosts; shared memory cannot reach them");
    p.transport = Transport::shm;
  } else {
    throw ConfigError("transport '" + printable(how) + "': expected shm, ofi or auto");
  }
  return p;
}

std::string Placement::report(const torus_emu::Shape& shape) const {
  std::string out;
  torus_emu::NodeId first = 0;
  for (int h = 0; h < host_count(); ++h) {
    const auto& e = hosts[static_cast<std::size_t>(h)];
    const torus_emu::NodeId last = first + static_cast<torus_emu::NodeId>(e.nodes) - 1;
    out += "host " + std::to_string(h) + " " + e.name + " (" + e.address +
           "): " + std::to_string(e.nodes) + " nodes, ids " + std::to_string(first) + ".." +
           std::to_string(last) + " = " + torus_emu::to_string(shape.coord(first)) + ".." +
           torus_emu::to_string(shape.coord(last)) + (e.netns.empty() ? "" : ", netns " + e.netns) +
           (h == this_host ? "  <- this host" : "") + "\n";
    first = last + 1;
  }
  return out;
}

}  // namespace bgl::job_runtime
