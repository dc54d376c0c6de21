#include "stats_report.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <system_error>
#include <tuple>

#include "bgl/job_runtime/traffic_matrix.hpp"
#include "bgl/torus_emu/error.hpp"
#include "bgl/torus_emu/user_text.hpp"
#include "bgl/virtual_time/latency_histogram.hpp"

namespace bgl::bglrun {
namespace {

using nlohmann::json;

json coord(torus_emu::Coord c) {
  return json::array({c.x, c.y, c.z});
}

json counters(const job_runtime::TaskCounters& c) {
  return {{"packets_injected", c.packets_injected},
          {"bytes_injected", c.bytes_injected},
          {"packets_received", c.packets_received},
          {"payload_bytes_received", c.payload_bytes_received},
          {"deposit_copies", c.deposit_copies},
          {"injection_full", c.injection_full},
          {"delivery_stalls", c.delivery_stalls},
          {"malformed", c.malformed},
          {"sleeps", c.sleeps},
          {"virtual_packets", c.virtual_packets}};
}

// The slowest task's clock: the job's predicted time.
struct Prediction {
  std::uint64_t cycles = 0;
  int rank = -1;
};
Prediction predict(const packet_layer::Machine& m) {
  Prediction p;
  for (int r = 0; r < m.config().ntasks(); ++r) {
    const auto& slot = m.job().task(static_cast<torus_emu::Rank>(r));
    if (slot.published.load() && (p.rank < 0 || slot.counters.vt_clock > p.cycles))
      p = {slot.counters.vt_clock, r};
  }
  return p;
}

json clock(const job_runtime::TaskCounters& c, const virtual_time::Params& p) {
  return {{"cycles", c.vt_clock},
          {"seconds", p.seconds(c.vt_clock)},
          {"software_cycles", c.vt_software},
          {"waiting_cycles", c.vt_waiting},
          {"computing_cycles", c.vt_computing},
          {"held", c.vt_held},
          {"unsafe_takes", c.vt_unsafe}};
}

// Conservative synchronisation, over the tasks: how often a packet waited for the other tasks, and
// how many were taken anyway after waiting too long.
struct SyncTotals {
  std::uint64_t held = 0, unsafe = 0;
};
SyncTotals sync_totals(const packet_layer::Machine& m) {
  SyncTotals t;
  for (int r = 0; r < m.config().ntasks(); ++r) {
    const auto& slot = m.job().task(static_cast<torus_emu::Rank>(r));
    if (!slot.published.load()) continue;
    t.held += slot.counters.vt_held;
    t.unsafe += slot.counters.vt_unsafe;
  }
  return t;
}

std::string sync_name(const packet_layer::Machine& m) {
  return packet_layer::Machine::synchronised(m.config()) ? "conservative" : "host order";
}

// One protocol's end-to-end latencies over all tasks, read back from the tasks' message-layer
// reports ("latency_cycles": min, max, sum and the non-empty buckets as [index, count]).
struct ProtocolLatency {
  virtual_time::LatencyHistogram histogram;
  std::uint64_t bytes = 0;
};

void merge_latencies(const json& report, std::map<std::string, ProtocolLatency>& into) {
  const auto it = report.find("latency_cycles");
  if (it == report.end() || !it->is_object()) return;
  for (const auto& [protocol, h] : it->items()) {
    if (!h.is_object() || !h.contains("buckets") || !h["buckets"].is_array()) continue;
    auto& out = into[protocol];
    for (const auto& b : h["buckets"]) {
      if (!b.is_array() || b.size() != 2 || !b[0].is_number_unsigned() ||
          !b[1].is_number_unsigned() ||
          b[0].get<std::uint64_t>() >= virtual_time::LatencyHistogram::kBuckets)
        continue;
      out.histogram.add_bucket(b[0].get<int>(), b[1].get<std::uint64_t>());
    }
    out.histogram.merge_extremes(h.value("min", std::uint64_t{0}), h.value("max", std::uint64_t{0}),
                                 h.value("sum", std::uint64_t{0}));
    const auto counters = report.find("protocols");
    if (counters != report.end() && counters->contains(protocol))
      out.bytes += (*counters)[protocol].value("bytes_received", std::uint64_t{0});
  }
}

// Per protocol: messages received, their bytes, and the latency distribution in nanoseconds.
json protocol_latencies(const json& tasks, const virtual_time::Params& params) {
  std::map<std::string, ProtocolLatency> merged;
  for (const auto& t : tasks)
    if (t.contains("message_layer")) merge_latencies(t["message_layer"], merged);
  const auto ns = [&](double cycles) { return cycles / params.cpu_hz * 1e9; };
  json out = json::array();
  for (const auto& [protocol, p] : merged) {
    const auto& h = p.histogram;
    if (h.count() == 0) continue;
    json buckets = json::array();
    for (int b = 0; b < virtual_time::LatencyHistogram::kBuckets; ++b)
      if (h.bucket(b) != 0)
        buckets.push_back(
            {{"upper_ns", ns(static_cast<double>(
                              std::min(virtual_time::LatencyHistogram::upper_bound(b), h.max())))},
             {"count", h.bucket(b)}});
    out.push_back({{"protocol", protocol},
                   {"messages", h.count()},
                   {"bytes", p.bytes},
                   {"latency_ns",
                    {{"min", ns(static_cast<double>(h.min()))},
                     {"mean", ns(h.mean())},
                     {"p50", ns(static_cast<double>(h.percentile(0.5)))},
                     {"p90", ns(static_cast<double>(h.percentile(0.9)))},
                     {"p99", ns(static_cast<double>(h.percentile(0.99)))},
                     {"max", ns(static_cast<double>(h.max()))}}},
                   {"histogram", std::move(buckets)}});
  }
  return out;
}

json virtual_time_json(const packet_layer::Machine& m, const json& tasks) {
  const auto& params = *m.job().vt_params();
  const auto predicted = predict(m);
  json links = json::array();
  const auto calendars = m.calendars();
  const auto index = m.link_index();  // links no packet can cross have no calendar
  const auto& shape = m.shape();
  for (std::size_t i = 0; i < index.size(); ++i) {
    if (index[i] == packet_layer::kNoLink) continue;
    const auto& calendar = calendars[index[i]];
    if (calendar.packets() == 0) continue;
    const double busy = static_cast<double>(calendar.busy());
    links.push_back(
        {{"node", coord(shape.coord(static_cast<torus_emu::NodeId>(i / torus_emu::kDirections)))},
         {"dir",
          torus_emu::to_string(static_cast<torus_emu::Direction>(i % torus_emu::kDirections))},
         {"packets", calendar.packets()},
         {"busy_cycles", calendar.busy()},
         {"utilisation", predicted.cycles ? busy / static_cast<double>(predicted.cycles) : 0.0}});
  }
  const SyncTotals sync = sync_totals(m);
  return {{"parameters_source", m.config().vt_params_source},
          {"parameters", json::parse(params.to_json())},
          {"predicted_cycles", predicted.cycles},
          {"predicted_seconds", params.seconds(predicted.cycles)},
          {"slowest_rank", predicted.rank},
          {"synchronisation",
           {{"mode", sync_name(m)}, {"held", sync.held}, {"unsafe_takes", sync.unsafe}}},
          {"links", std::move(links)},
          {"protocols", protocol_latencies(tasks, params)}};
}

std::string_view fifo_name(int f) {
  if (f < packet_layer::kLinkFifos)
    return torus_emu::to_string(static_cast<torus_emu::Direction>(f));
  return f == packet_layer::kLocalFifo ? "local" : "high";
}

// The communication matrix: per source rank that sent anything, its destinations with the
// messages and user data bytes it sent there (sparse rows: [dest, bytes, messages]).
json traffic_json(const packet_layer::Machine& m) {
  const int tasks = m.config().ntasks();
  const auto region = m.job().region(job_runtime::kTrafficRegion);
  if (region.empty())
    return {{"recorded", false},
            {"reason", "more than " + std::to_string(job_runtime::kTrafficMaxTasks) + " tasks"}};
  json rows = json::array();
  std::uint64_t bytes = 0, messages = 0, pairs = 0;
  for (int s = 0; s < tasks; ++s) {
    json row = json::array();
    for (int d = 0; d < tasks; ++d) {
      const auto& p = job_runtime::traffic_row(region, tasks, s)[static_cast<std::size_t>(d)];
      if (p.messages == 0) continue;
      row.push_back(json::array({d, p.bytes, p.messages}));
      bytes += p.bytes;
      messages += p.messages;
      ++pairs;
    }
    if (!row.empty()) rows.push_back({{"source", s}, {"to", std::move(row)}});
  }
  return {
      {"recorded", true},       {"tasks", tasks},       {"unit", "message-layer user data bytes"},
      {"bytes", bytes},         {"messages", messages}, {"pairs", pairs},
      {"rows", std::move(rows)}};
}

}  // namespace

std::string statistics_json(const packet_layer::Machine& m, double host_seconds,
                            const nlohmann::json* collective_sites) {
  return statistics_text(statistics_document(m, host_seconds, collective_sites));
}

std::string statistics_text(const nlohmann::json& document) {
  return document.dump(1) + "\n";
}

json statistics_document(const packet_layer::Machine& m, double host_seconds,
                         const nlohmann::json* collective_sites) {
  const auto& c = m.config();
  const auto& shape = m.shape();
  json tasks = json::array();
  for (int r = 0; r < c.ntasks(); ++r) {
    const auto rank = static_cast<torus_emu::Rank>(r);
    const auto& slot = m.job().task(rank);
    json t = {
        {"rank", r}, {"node", coord(c.mapping.coord(rank))}, {"t", c.mapping.location(rank).t}};
    t["published"] = slot.published.load() != 0;
    if (slot.published.load()) {
      t["counters"] = counters(slot.counters);
      if (const auto* p = m.job().vt_params()) t["virtual_clock"] = clock(slot.counters, *p);
    }
    // Layers above the packet layer leave their own statistics as JSON text in the task's slot.
    const std::string report(slot.report.data(), strnlen(slot.report.data(), slot.report.size()));
    if (!report.empty()) {
      auto upper = json::parse(report, nullptr, /*allow_exceptions=*/false);
      if (!upper.is_discarded()) t["message_layer"] = std::move(upper);
    }
    tasks.push_back(std::move(t));
  }
  json links = json::array();
  const auto totals = m.links();
  const auto index = m.link_index();
  for (std::size_t i = 0; i < index.size(); ++i) {
    if (index[i] == packet_layer::kNoLink || totals[index[i]].packets.load() == 0) continue;
    links.push_back(
        {{"node", coord(shape.coord(static_cast<torus_emu::NodeId>(i / torus_emu::kDirections)))},
         {"dir",
          torus_emu::to_string(static_cast<torus_emu::Direction>(i % torus_emu::kDirections))},
         {"packets", totals[index[i]].packets.load()},
         {"bytes", totals[index[i]].bytes.load()}});
  }
  json fifos = json::array();
  for (const torus_emu::NodeId n : m.job().occupied_nodes()) {  // nodes without tasks have no FIFOs
    if (!c.placement.local(n)) continue;                        // another host's segment holds them
    for (int g = 0; g < packet_layer::kFifoGroups; ++g) {
      for (int f = 0; f < packet_layer::kReceptionFifos; ++f) {
        const auto& ctl = m.fifo(n, g, f).control();
        if (ctl.head.load() == 0 && ctl.full_events.load() == 0) continue;
        fifos.push_back({{"node", coord(shape.coord(n))},
                         {"group", g},
                         {"fifo", fifo_name(f)},
                         {"received", ctl.head.load()},
                         {"high_water", ctl.high_water.load()},
                         {"full_events", ctl.full_events.load()}});
      }
    }
  }
  const json job = {{"shape", shape.to_string()},
                    {"mode", job_runtime::to_string(c.mode)},
                    {"tasks", c.ntasks()},
                    {"mapping", c.mapping_source},
                    {"fifo_packets", c.fifo_packets},
                    {"seed", c.seed},
                    {"host_seconds", host_seconds}};
  json all{{"job", job}, {"tasks", tasks}, {"links", links}, {"fifos", fifos}};
  all["traffic"] = traffic_json(m);
  if (m.job().vt_params()) all["virtual_time"] = virtual_time_json(m, all["tasks"]);
  if (collective_sites) all["collective_sites"] = *collective_sites;
  return all;
}

namespace {

// A node's coordinates as its place in node-id order (x fastest), the order one host writes.
std::tuple<int, int, int> node_order(const json& node) {
  if (!node.is_array() || node.size() != 3 || !node[0].is_number_integer() ||
      !node[1].is_number_integer() || !node[2].is_number_integer())
    throw ConfigError("a node is not [x, y, z]: " + node.dump());
  return {node[2].get<int>(), node[1].get<int>(), node[0].get<int>()};
}

int name_index(const json& name, int count, std::string_view (*name_of)(int)) {
  for (int i = 0; i < count; ++i)
    if (name.is_string() && name.get<std::string>() == name_of(i)) return i;
  throw ConfigError("unknown link or FIFO name " + name.dump());
}
std::string_view direction_name(int d) {
  return torus_emu::to_string(static_cast<torus_emu::Direction>(d));
}

const json& member(const json& object, const char* key, const std::string& what) {
  if (!object.is_object() || !object.contains(key))
    throw ConfigError(what + " has no \"" + key + "\"");
  return object[key];
}

// Adds `other`'s per-link (or per-FIFO) rows to `into`'s: rows with the same key are one row,
// `sum` fields added and `max` fields the larger; the result in `key`'s order.
template <class Key>
void merge_rows(json& into, const json& other, Key key, std::initializer_list<const char*> sum,
                std::initializer_list<const char*> max) {
  std::map<decltype(key(json{})), json> rows;
  for (const json* side : std::initializer_list<const json*>{&into, &other}) {
    for (const auto& row : *side) {
      auto [it, fresh] = rows.try_emplace(key(row), row);
      if (fresh) continue;
      for (const char* f : sum)
        it->second[f] = it->second.value(f, std::uint64_t{0}) + row.value(f, std::uint64_t{0});
      for (const char* f : max)
        it->second[f] =
            std::max(it->second.value(f, std::uint64_t{0}), row.value(f, std::uint64_t{0}));
    }
  }
  into = json::array();
  for (auto& [k, row] : rows)
    into.push_back(std::move(row));
}

void merge_traffic(json& into, const json& other) {
  if (!into.value("recorded", false) || !other.value("recorded", false)) return;
  std::map<std::uint64_t, std::map<std::uint64_t, std::pair<std::uint64_t, std::uint64_t>>> rows;
  for (const json* side : std::initializer_list<const json*>{&into, &other})
    for (const auto& row : side->value("rows", json::array()))
      for (const auto& to : row.value("to", json::array()))
        if (to.is_array() && to.size() == 3) {
          auto& cell = rows[row.value("source", std::uint64_t{0})][to[0].get<std::uint64_t>()];
          cell.first += to[1].get<std::uint64_t>();
          cell.second += to[2].get<std::uint64_t>();
        }
  json out = json::array();
  std::uint64_t bytes = 0, messages = 0, pairs = 0;
  for (const auto& [source, dests] : rows) {
    json row = json::array();
    for (const auto& [dest, cell] : dests) {
      row.push_back(json::array({dest, cell.first, cell.second}));
      bytes += cell.first;
      messages += cell.second;
      ++pairs;
    }
    out.push_back({{"source", source}, {"to", std::move(row)}});
  }
  into["rows"] = std::move(out);
  into["bytes"] = bytes;
  into["messages"] = messages;
  into["pairs"] = pairs;
}

// Several hosts: every link crossing is reserved in one host's calendar, so the hosts' calendar
// rows add up; the prediction, the utilisations and the protocols' latencies are the whole job's,
// computed again from the merged tasks.
template <class Key>
void merge_virtual_time(json& into, const json& other, Key link_key) {
  json& vt = into["virtual_time"];
  merge_rows(vt["links"], other.value("links", json::array()), link_key, {"packets", "busy_cycles"},
             {});
  std::uint64_t cycles = 0;
  int slowest = -1;
  const json& tasks = into["tasks"];
  for (std::size_t r = 0; r < tasks.size(); ++r) {
    const json& t = tasks[r];
    if (!t.value("published", false) || !t.contains("virtual_clock")) continue;
    const auto c = t["virtual_clock"].value("cycles", std::uint64_t{0});
    if (slowest < 0 || c > cycles) cycles = c, slowest = static_cast<int>(r);
  }
  virtual_time::Params params;
  params.cpu_hz = vt["parameters"]["cpu_hz"].value("value", params.cpu_hz);
  vt["predicted_cycles"] = cycles;
  vt["predicted_seconds"] = params.seconds(cycles);
  vt["slowest_rank"] = slowest;
  for (auto& link : vt["links"])
    link["utilisation"] =
        cycles ? link.value("busy_cycles", 0.0) / static_cast<double>(cycles) : 0.0;
  vt["protocols"] = protocol_latencies(tasks, params);
}

}  // namespace

void merge_statistics(json& into, const json& other, const std::string& what) {
  const json& job = member(other, "job", what);
  for (const char* key : {"shape", "mode", "tasks"})
    if (member(job, key, what) != into["job"][key])
      throw ConfigError(what + " are of another job: " + key + " " + job[key].dump() + ", not " +
                        into["job"][key].dump());
  json& tasks = into["tasks"];
  const json& theirs = member(other, "tasks", what);
  if (!theirs.is_array() || theirs.size() != tasks.size())
    throw ConfigError(what + " do not list every task");
  for (std::size_t r = 0; r < tasks.size(); ++r)
    if (theirs[r].value("published", false) && !tasks[r].value("published", false))
      tasks[r] = theirs[r];
  const auto link_key = [](const json& l) {
    return std::tuple_cat(
        node_order(l.at("node")),
        std::tuple{name_index(l.at("dir"), torus_emu::kDirections, direction_name)});
  };
  merge_rows(into["links"], member(other, "links", what), link_key, {"packets", "bytes"}, {});
  const auto fifo_key = [](const json& f) {
    return std::tuple_cat(
        node_order(f.at("node")),
        std::tuple{f.at("group").get<int>(), name_index(f.at("fifo"), packet_layer::kReceptionFifos,
                                                        [](int i) { return fifo_name(i); })});
  };
  merge_rows(into["fifos"], member(other, "fifos", what), fifo_key, {"received", "full_events"},
             {"high_water"});
  if (other.contains("traffic")) merge_traffic(into["traffic"], other["traffic"]);
  if (into.contains("virtual_time"))
    merge_virtual_time(into, member(other, "virtual_time", what), link_key);
  into["job"]["host_seconds"] =
      std::max(into["job"].value("host_seconds", 0.0), job.value("host_seconds", 0.0));
}

std::string virtual_time_summary(const packet_layer::Machine& m, double host_seconds,
                                 std::span<const SlowestTask> other_hosts) {
  const auto& params = *m.job().vt_params();
  auto predicted = predict(m);
  for (const auto& t : other_hosts)
    if (t.rank >= 0 && (predicted.rank < 0 || t.cycles > predicted.cycles))
      predicted = {t.cycles, t.rank};
  char line[512];
  if (predicted.rank < 0) {
    std::snprintf(line, sizeof line,
                  "bglrun: virtual time: no task reported a clock (host time %.3f s)\n",
                  host_seconds);
    return line;
  }
  std::snprintf(line, sizeof line,
                "bglrun: predicted BG/L time %.3f us (%llu cycles at %.0f MHz, slowest task: rank "
                "%d); host time %.3f s; model parameters: %s; clocks in step: %s\n",
                params.seconds(predicted.cycles) * 1e6,
                static_cast<unsigned long long>(predicted.cycles), params.cpu_hz / 1e6,
                predicted.rank, host_seconds, m.config().vt_params_source.c_str(),
                sync_name(m).c_str());
  std::string out = line;
  if (const auto unsafe = sync_totals(m).unsafe; unsafe != 0) {
    std::snprintf(line, sizeof line,
                  "bglrun: warning: %llu packets were taken before it was certain that no earlier "
                  "one would come (a task waited where it publishes no bound); the prediction may "
                  "depend on host order\n",
                  static_cast<unsigned long long>(unsafe));
    out += line;
  }
  return out;
}

std::string parameter_listing(const virtual_time::Params& p) {
  std::string out =
      "# the virtual-time model's parameters (bglrun --vt-params FILE overrides "
      "them, one \"name = value\" line each)\n";
  char line[256];
  for (const auto& info : virtual_time::parameter_table()) {
    std::snprintf(line, sizeof line, "%-24s = %-10g # %s, %s: %s\n", std::string(info.name).c_str(),
                  p.*(info.member), std::string(info.unit).c_str(),
                  std::string(to_string(info.source)).c_str(), std::string(info.meaning).c_str());
    out += line;
  }
  return out;
}

std::string statistics_summary(const packet_layer::Machine& m) {
  std::uint64_t injected = 0, received = 0, stalls = 0, traversals = 0, busiest = 0;
  std::size_t busiest_index = 0;
  for (int r = 0; r < m.config().ntasks(); ++r) {
    const auto& c = m.job().task(static_cast<torus_emu::Rank>(r)).counters;
    injected += c.packets_injected;
    received += c.packets_received;
    stalls += c.delivery_stalls;
  }
  const auto links = m.links();
  const auto index = m.link_index();
  for (std::size_t i = 0; i < index.size(); ++i) {
    if (index[i] == packet_layer::kNoLink) continue;
    const auto& link = links[index[i]];
    traversals += link.packets.load();
    if (link.bytes.load() > busiest) busiest = link.bytes.load(), busiest_index = i;
  }
  std::string s = std::to_string(injected) + " packets injected, " + std::to_string(received) +
                  " received, " + std::to_string(traversals) + " link traversals, " +
                  std::to_string(stalls) + " delivery stalls";
  if (busiest > 0) {
    const auto node = static_cast<torus_emu::NodeId>(busiest_index / torus_emu::kDirections);
    const auto dir = static_cast<torus_emu::Direction>(busiest_index % torus_emu::kDirections);
    s += "; busiest link " + torus_emu::to_string(m.shape().coord(node)) +
         std::string(torus_emu::to_string(dir)) + " carried " + std::to_string(busiest) + " bytes";
  }
  return s;
}

StatsFile::StatsFile(std::filesystem::path path, std::string what)
    : path_(std::move(path)), what_(std::move(what)) {
  const auto fail = [&](const std::string& problem) {
    return ConfigError("cannot write " + what_ + " to " + printable(path_.string(), 256) + ": " +
                       problem);
  };
  if (path_.empty()) throw fail("empty path");
  struct stat st {};
  if (::stat(path_.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) throw fail("it is a directory");
  const auto dir = path_.has_parent_path() ? path_.parent_path() : std::filesystem::path(".");
  std::string name = (dir / ("." + path_.filename().string() + ".XXXXXX")).string();
  // mkstemp opens with O_CREAT | O_EXCL: it never opens an existing file or follows a link.
  fd_ = ::mkostemp(name.data(), O_CLOEXEC);
  if (fd_ < 0) throw fail(std::generic_category().message(errno));
  temp_ = name;
  // mkstemp's 0600, widened to what the umask allows, as for a file created by open() (read and
  // restored at once; the launcher has no other threads yet).
  const mode_t mask = ::umask(0);
  ::umask(mask);
  ::fchmod(fd_, 0666 & ~mask);
}

StatsFile::~StatsFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!temp_.empty()) ::unlink(temp_.c_str());
}

std::string StatsFile::display_path() const {
  return printable(path_.string(), 256);
}

bool StatsFile::commit(std::string_view text) {
  const auto failed = [&](int err) {
    std::fprintf(stderr, "bglrun: cannot write %s to %s: %s\n", what_.c_str(),
                 printable(path_.string(), 256).c_str(), std::strerror(err));
    return false;
  };
  for (std::size_t done = 0; done < text.size();) {
    const ssize_t n = ::write(fd_, text.data() + done, text.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return failed(errno);
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd_) != 0) return failed(errno);
  const int closed = ::close(fd_);
  fd_ = -1;
  if (closed != 0) return failed(errno);
  if (::rename(temp_.c_str(), path_.c_str()) != 0) return failed(errno);
  temp_.clear();
  return true;
}

}  // namespace bgl::bglrun
