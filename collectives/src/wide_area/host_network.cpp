#include "bgl/collectives/wide_area/host_network.hpp"

#include <charconv>
#include <cmath>
#include <map>
#include <optional>
#include <sstream>

#include "bgl/torus_emu/error.hpp"
#include "bgl/torus_emu/input_file.hpp"
#include "bgl/torus_emu/user_text.hpp"

namespace bgl::collectives::wide_area {

namespace {

std::string pair_name(int from, int to) {
  return "(" + std::to_string(from) + " -> " + std::to_string(to) + ")";
}

std::vector<std::string_view> split_fields(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r'))
      ++i;
    std::size_t j = i;
    while (j < line.size() && line[j] != ' ' && line[j] != '\t' && line[j] != '\r')
      ++j;
    if (j > i) out.push_back(line.substr(i, j - i));
    i = j;
  }
  return out;
}

std::optional<long> parse_int(std::string_view s) {
  long v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || p != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<double> parse_double(std::string_view s) {
  // std::from_chars for double is available in GCC 12's libstdc++.
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || p != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::optional<double> bandwidth_unit(std::string_view u) {
  static const std::map<std::string_view, double> units = {
      {"B/s", 1.0},         {"KB/s", 1e3},         {"MB/s", 1e6},         {"GB/s", 1e9},
      {"bit/s", 1.0 / 8.0}, {"Kbit/s", 1e3 / 8.0}, {"Mbit/s", 1e6 / 8.0}, {"Gbit/s", 1e9 / 8.0},
      {"Mbps", 1e6 / 8.0},  {"KiB/s", 1024.0},     {"MiB/s", 1048576.0},  {"GiB/s", 1073741824.0}};
  auto it = units.find(u);
  if (it == units.end()) return std::nullopt;
  return it->second;
}

std::optional<double> latency_unit(std::string_view u) {
  if (u == "s") return 1.0;
  if (u == "ms") return 1e-3;
  if (u == "us") return 1e-6;
  if (u == "ns") return 1e-9;
  return std::nullopt;
}

class Parser {
 public:
  Parser(std::string_view source) : source_(source) {}

  HostNetwork run(std::string_view text) {
    std::size_t pos = 0;
    while (pos <= text.size()) {
      std::size_t end = text.find('\n', pos);
      if (end == std::string_view::npos) end = text.size();
      ++line_no_;
      std::string_view line = text.substr(pos, end - pos);
      if (auto hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
      line_ = line;
      handle(split_fields(line));
      if (end == text.size()) break;
      pos = end + 1;
    }
    if (hosts_ == 0) fail_file("no 'hosts <n>' directive");
    for (int s = 0; s < hosts_; ++s) {
      for (int r = 0; r < hosts_; ++r) {
        if (s != r && !set_[at(s, r)]) {
          fail_file("pair " + pair_name(s, r) + " has no link line (every ordered pair of " +
                    std::to_string(hosts_) + " hosts needs a bandwidth and latency)");
        }
      }
    }
    for (auto& b : bw_)
      b = b > 0 ? b : 1.0;  // diagonal: any positive value, never used
    std::vector<std::string> names(static_cast<std::size_t>(hosts_));
    for (const auto& [name, members] : sites_) {
      for (std::size_t i = 0; i < members.size(); ++i) {
        auto& n = names[static_cast<std::size_t>(members[i])];
        if (n.empty()) n = name + "." + std::to_string(i);
      }
    }
    return HostNetwork(hosts_, std::move(bw_), std::move(lat_), std::move(names));
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw ConfigError(std::string(source_) + ":" + std::to_string(line_no_) + ": " + what);
  }
  [[noreturn]] void fail_file(const std::string& what) const {
    throw ConfigError(std::string(source_) + ": " + what);
  }
  std::size_t at(int s, int r) const {
    return static_cast<std::size_t>(s) * static_cast<std::size_t>(hosts_) +
           static_cast<std::size_t>(r);
  }

  void expect_fields(const std::vector<std::string_view>& f, std::size_t n, const char* usage) {
    if (f.size() != n) {
      fail("'" + printable(f[0]) + "' expects " + std::to_string(n - 1) + " field(s): " + usage);
    }
  }

  void need_hosts(std::string_view directive) {
    if (hosts_ == 0) fail("'" + printable(directive) + "' before the 'hosts <n>' directive");
  }

  // "3", "0-7", "0-3,8" or a site name.
  std::vector<int> group(std::string_view g) {
    if (auto it = sites_.find(std::string(g)); it != sites_.end()) return it->second;
    std::vector<int> out;
    std::size_t pos = 0;
    while (pos <= g.size()) {
      std::size_t comma = g.find(',', pos);
      if (comma == std::string_view::npos) comma = g.size();
      std::string_view item = g.substr(pos, comma - pos);
      std::size_t dash = item.find('-');
      auto lo = parse_int(item.substr(0, dash));
      auto hi = dash == std::string_view::npos ? lo : parse_int(item.substr(dash + 1));
      if (!lo || !hi) {
        fail("\"" + printable(g) +
             "\" is neither a site name nor a host list (e.g. 3, 0-7, 0-3,8)");
      }
      if (*lo < 0 || *hi >= hosts_ || *lo > *hi) {
        fail("host range \"" + printable(item) + "\" is outside 0.." + std::to_string(hosts_ - 1) +
             " or empty");
      }
      for (long h = *lo; h <= *hi; ++h)
        out.push_back(static_cast<int>(h));
      if (comma == g.size()) break;
      pos = comma + 1;
    }
    return out;
  }

  void handle(const std::vector<std::string_view>& f) {
    if (f.empty()) return;
    const std::string_view d = f[0];
    if (d == "hosts") {
      expect_fields(f, 2, "hosts <n>");
      if (hosts_ != 0) fail("'hosts' appears twice");
      auto n = parse_int(f[1]);
      if (!n || *n < 1 || *n > kMaxHosts)
        fail("host count \"" + printable(f[1]) + "\" is not 1.." + std::to_string(kMaxHosts));
      hosts_ = static_cast<int>(*n);
      const auto cells = static_cast<std::size_t>(hosts_) * static_cast<std::size_t>(hosts_);
      bw_.assign(cells, 0.0);
      lat_.assign(cells, 0.0);
      set_.assign(cells, false);
    } else if (d == "bandwidth-unit") {
      expect_fields(f, 2, "bandwidth-unit <B/s|KB/s|MB/s|GB/s|bit/s|Kbit/s|Mbit/s|Gbit/s>");
      auto u = bandwidth_unit(f[1]);
      if (!u) fail("unknown bandwidth unit \"" + printable(f[1]) + "\"");
      bw_unit_ = *u;
    } else if (d == "latency-unit") {
      expect_fields(f, 2, "latency-unit <s|ms|us|ns>");
      auto u = latency_unit(f[1]);
      if (!u) fail("unknown latency unit \"" + printable(f[1]) + "\" (s, ms, us, ns)");
      lat_unit_ = *u;
    } else if (d == "site") {
      need_hosts(d);
      expect_fields(f, 3, "site <name> <hosts>");
      const std::string name(f[1]);
      if (parse_int(name.substr(0, 1)).has_value())
        fail("site name \"" + printable(name) + "\" starts with a digit");
      if (sites_.count(name)) fail("site \"" + printable(name) + "\" is defined twice");
      auto members = group(f[2]);
      site_members_ += members.size();
      if (site_members_ > kMaxSiteMembers)
        fail("the sites list more than " + std::to_string(kMaxSiteMembers) + " hosts in all");
      sites_[name] = std::move(members);
    } else if (d == "link") {
      need_hosts(d);
      expect_fields(f, 5, "link <from> <to> <bandwidth> <latency>");
      const auto from = group(f[1]);
      const auto to = group(f[2]);
      auto bw = parse_double(f[3]);
      auto lat = parse_double(f[4]);
      if (!bw || *bw <= 0) fail("bandwidth \"" + printable(f[3]) + "\" is not a positive number");
      if (!lat || *lat < 0) fail("latency \"" + printable(f[4]) + "\" is not a number >= 0");
      pairs_set_ += from.size() * to.size();
      if (pairs_set_ > kMaxPairsSet)
        fail("the link lines set more than " + std::to_string(kMaxPairsSet) +
             " host pairs in all (a pair of every " + std::to_string(hosts_) +
             " hosts, many times over)");
      for (int s : from) {
        for (int r : to) {
          if (s == r) continue;
          bw_[at(s, r)] = *bw * bw_unit_;
          lat_[at(s, r)] = *lat * lat_unit_;
          set_[at(s, r)] = true;
        }
      }
    } else {
      fail("unknown directive \"" + printable(d) +
           "\" (expected hosts, bandwidth-unit, latency-unit, site, link)");
    }
  }

  std::string_view source_;
  std::string_view line_;
  int line_no_ = 0;
  // What a file may make the parser do, whatever its size: hosts, host-list entries kept for
  // sites, and pairs assigned by link lines (a line may name all pairs at once).
  static constexpr long kMaxHosts = 1024;
  static constexpr std::size_t kMaxSiteMembers = std::size_t{1} << 20;
  static constexpr std::size_t kMaxPairsSet = std::size_t{1} << 26;
  std::size_t site_members_ = 0;
  std::size_t pairs_set_ = 0;
  int hosts_ = 0;
  double bw_unit_ = 1e6;
  double lat_unit_ = 1e-6;
  std::vector<double> bw_, lat_;
  std::vector<bool> set_;
  std::map<std::string, std::vector<int>> sites_;
};

}  // namespace

HostNetwork::HostNetwork(int hosts, std::vector<double> bandwidth, std::vector<double> latency,
                         std::vector<std::string> host_names)
    : hosts_(hosts),
      bandwidth_(std::move(bandwidth)),
      latency_(std::move(latency)),
      names_(std::move(host_names)) {
  if (hosts_ < 1) throw ConfigError("a host network needs at least 1 host");
  const auto cells = static_cast<std::size_t>(hosts_) * static_cast<std::size_t>(hosts_);
  if (bandwidth_.size() != cells || latency_.size() != cells) {
    throw ConfigError("host network: expected " + std::to_string(cells) +
                      " bandwidth and latency values for " + std::to_string(hosts_) + " hosts");
  }
  for (int s = 0; s < hosts_; ++s) {
    for (int r = 0; r < hosts_; ++r) {
      if (s == r) continue;
      if (!(bandwidth_[index(s, r)] > 0) || !std::isfinite(bandwidth_[index(s, r)])) {
        throw ConfigError("host network: bandwidth of pair " + pair_name(s, r) +
                          " must be positive");
      }
      if (!(latency_[index(s, r)] >= 0) || !std::isfinite(latency_[index(s, r)])) {
        throw ConfigError("host network: latency of pair " + pair_name(s, r) + " must be >= 0");
      }
    }
  }
  names_.resize(static_cast<std::size_t>(hosts_));
  for (int h = 0; h < hosts_; ++h) {
    auto& n = names_[static_cast<std::size_t>(h)];
    if (n.empty()) n = "host" + std::to_string(h);
  }
}

HostNetwork HostNetwork::uniform(int hosts, double bandwidth, double latency) {
  const auto cells = static_cast<std::size_t>(hosts) * static_cast<std::size_t>(hosts);
  return HostNetwork(hosts, std::vector<double>(cells, bandwidth),
                     std::vector<double>(cells, latency));
}

HostNetwork HostNetwork::parse(std::string_view text, std::string_view source_name) {
  return Parser(source_name).run(text);
}

HostNetwork HostNetwork::from_file(const std::filesystem::path& path) {
  return parse(read_input_file(path, "host network file"), printable(path.string(), 256));
}

std::string HostNetwork::to_text() const {
  std::ostringstream out;
  out.precision(17);
  out << "hosts " << hosts_ << "\nbandwidth-unit B/s\nlatency-unit s\n";
  for (int s = 0; s < hosts_; ++s) {
    for (int r = 0; r < hosts_; ++r) {
      if (s != r)
        out << "link " << s << ' ' << r << ' ' << bandwidth(s, r) << ' ' << latency(s, r) << '\n';
    }
  }
  return out.str();
}

HostNetwork HostNetwork::subset(const std::vector<int>& hosts) const {
  const auto n = hosts.size();
  std::vector<double> bw(n * n, 1.0), lat(n * n, 0.0);
  std::vector<std::string> names;
  for (std::size_t i = 0; i < n; ++i) {
    names.push_back(names_[static_cast<std::size_t>(hosts[i])]);
    for (std::size_t j = 0; j < n; ++j) {
      if (i == j) continue;
      bw[i * n + j] = bandwidth(hosts[i], hosts[j]);
      lat[i * n + j] = latency(hosts[i], hosts[j]);
    }
  }
  return HostNetwork(static_cast<int>(n), std::move(bw), std::move(lat), std::move(names));
}

std::string paper_grid_text(std::string_view sites) {
  // Table 1 host counts and Table 2 (row = from) of the Min3-Allgather paper; bandwidth Mbit/s,
  // latency s.
  struct Site {
    const char* name;
    int count;
  };
  static constexpr Site all[] = {{"UT", 8}, {"UK", 4}, {"NL", 8}};
  static constexpr double bw[3][3] = {
      {85.19, 1.44, 1.25}, {1.28, 289.33, 4.75}, {1.16, 4.75, 81.86}};
  static constexpr double lat[3][3] = {
      {0.00006, 0.05, 0.05}, {0.05, 0.000006, 0.076}, {0.05, 0.076, 0.000006}};
  std::vector<int> chosen;
  for (int i = 0; i < 3; ++i) {
    if (sites.find(all[i].name) != std::string_view::npos) chosen.push_back(i);
  }
  if (chosen.empty())
    throw ConfigError("paper grid: no site of UT, UK, NL in \"" + std::string(sites) + "\"");
  std::ostringstream out;
  int total = 0;
  for (int i : chosen)
    total += all[i].count;
  out << "# Seed 000, Tables 1 and 2: " << sites << "\nhosts " << total
      << "\nbandwidth-unit Mbit/s\nlatency-unit s\n";
  int first = 0;
  for (int i : chosen) {
    out << "site " << all[i].name << ' ' << first << '-' << first + all[i].count - 1 << '\n';
    first += all[i].count;
  }
  for (int i : chosen) {
    for (int j : chosen) {
      out << "link " << all[i].name << ' ' << all[j].name << ' ' << bw[i][j] << ' ' << lat[i][j]
          << '\n';
    }
  }
  return out.str();
}

}  // namespace bgl::collectives::wide_area
