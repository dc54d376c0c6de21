#include "call_sites.hpp"

#include <cxxabi.h>
#include <elfutils/libdwfl.h>
#include <spdlog/spdlog.h>
#include <stdlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "bgl/torus_emu/error.hpp"
#include "bgl/torus_emu/user_text.hpp"

namespace bgl::bglrun {
namespace {

using nlohmann::json;

std::string demangle(const char* name) {
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> d(
      abi::__cxa_demangle(name, nullptr, nullptr, &status), &std::free);
  std::string out = status == 0 && d ? d.get() : name;
  // GCC's specialised copies ("f(int) [clone .constprop.0]") are the same function to a reader.
  if (const auto clone = out.find(" [clone "); clone != std::string::npos) out.erase(clone);
  return out;
}

// "ns::f(int, char const*) const" -> "ns::f": what a table of call sites needs to name.
std::string without_parameters(const std::string& function) {
  std::size_t end = function.size();
  if (function.ends_with(" const")) end -= 6;
  if (end == 0 || function[end - 1] != ')') return function;
  int depth = 0;
  for (std::size_t i = end; i-- > 0;) {
    if (function[i] == ')') ++depth;
    if (function[i] == '(' && --depth == 0) return i > 0 ? function.substr(0, i) : function;
  }
  return function;
}

std::string hex(std::uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string basename_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// One task's row as written by job_runtime::CallSites::write(); nullopt when a field is missing or
// wrong.
struct TaskRow {
  std::string module, symbol, op, algorithm, rule;
  std::uint64_t offset = 0, bytes = 0, calls = 0, host_ns = 0, host_ns_min = 0, host_ns_max = 0,
                cycles = 0;
  int comm_size = 0, root = -1;
};

std::optional<TaskRow> parse_row(const std::string& line) {
  const json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return std::nullopt;
  TaskRow r;
  try {
    r.module = j.at("module").get<std::string>();
    r.symbol = j.at("symbol").get<std::string>();
    r.op = j.at("op").get<std::string>();
    r.algorithm = j.at("algorithm").get<std::string>();
    r.rule = j.at("rule").get<std::string>();
    r.offset = j.at("offset").get<std::uint64_t>();
    r.comm_size = j.at("comm_size").get<int>();
    r.bytes = j.at("bytes").get<std::uint64_t>();
    r.root = j.at("root").get<int>();
    r.calls = j.at("calls").get<std::uint64_t>();
    r.host_ns = j.at("host_ns").get<std::uint64_t>();
    r.host_ns_min = j.at("host_ns_min").get<std::uint64_t>();
    r.host_ns_max = j.at("host_ns_max").get<std::uint64_t>();
    r.cycles = j.at("cycles").get<std::uint64_t>();
  } catch (const json::exception&) {
    return std::nullopt;
  }
  return r;
}

struct Merged {
  std::uint64_t tasks = 0, calls = 0, host_ns = 0, host_ns_min = ~std::uint64_t{0}, host_ns_max = 0,
                task_host_ns_max = 0, cycles = 0, task_cycles_max = 0;
};

// A row's identity: where (the resolved source line, or the module and address without debug
// information: a loop the compiler unrolled has several call instructions on one line), what and
// how.
// The texts are numbered (Names) so that the maps compare integers.
using Key = std::tuple<int, int, int, int, int, std::uint64_t, int>;

struct Names {
  std::unordered_map<std::string, int> ids;
  std::vector<std::string> texts;
  int id(const std::string& text) {
    const auto [it, fresh] = ids.try_emplace(text, static_cast<int>(texts.size()));
    if (fresh) texts.push_back(text);
    return it->second;
  }
};

}  // namespace

struct SiteResolver::Modules {
  struct Entry {
    std::unique_ptr<Dwfl, decltype(&dwfl_end)> dwfl{nullptr, &dwfl_end};
    Dwfl_Module* module = nullptr;
  };
  std::map<std::string, Entry> open;
};

SiteResolver::SiteResolver() : modules_(std::make_unique<Modules>()) {}
SiteResolver::~SiteResolver() = default;

SiteResolver::Site SiteResolver::resolve(const std::string& module, std::uint64_t offset) {
  Site s;
  if (module.empty() || offset == 0) return s;
  auto [it, fresh] = modules_->open.try_emplace(module);
  auto& entry = it->second;
  if (fresh) {
    static char* debuginfo_path = nullptr;
    static const Dwfl_Callbacks callbacks = {.find_elf = dwfl_build_id_find_elf,
                                             .find_debuginfo = dwfl_standard_find_debuginfo,
                                             .section_address = dwfl_offline_section_address,
                                             .debuginfo_path = &debuginfo_path};
    entry.dwfl.reset(dwfl_begin(&callbacks));
    if (entry.dwfl) {
      dwfl_report_begin(entry.dwfl.get());
      // At base 0: the module's addresses are those of its file, what the task wrote.
      entry.module = dwfl_report_elf(entry.dwfl.get(), basename_of(module).c_str(), module.c_str(),
                                     -1, 0, false);
      dwfl_report_end(entry.dwfl.get(), nullptr, nullptr);
      if (!entry.module) spdlog::info("call sites: cannot read {}: {}", module, dwfl_errmsg(-1));
    }
  }
  if (!entry.module) return s;
  // A return address follows the call: the call's own line is the byte before.
  const Dwarf_Addr at = offset - 1;
  if (const char* name = dwfl_module_addrname(entry.module, at)) s.function = demangle(name);
  if (Dwfl_Line* line = dwfl_module_getsrc(entry.module, at)) {
    int lineno = 0;
    if (const char* file = dwfl_lineinfo(line, nullptr, &lineno, nullptr, nullptr, nullptr)) {
      std::filesystem::path path(file);
      if (path.is_relative())
        if (const char* dir = dwfl_line_comp_dir(line)) path = std::filesystem::path(dir) / path;
      s.file = path.lexically_normal().string();
      s.line = lineno;
    }
  }
  return s;
}

json merge_call_sites(const std::filesystem::path& dir, int ntasks, double cpu_hz) {
  SiteResolver resolver;
  Names names;
  std::map<std::pair<std::string, std::uint64_t>, int> where_of;  // address -> identity
  std::map<int, json> located;                                    // identity -> location
  const auto identity = [&](const TaskRow& row) -> int {
    auto [it, fresh] = where_of.try_emplace({row.module, row.offset});
    if (!fresh) return it->second;
    const auto s = resolver.resolve(row.module, row.offset);
    const std::string function = !s.function.empty() ? s.function : demangle(row.symbol.c_str());
    std::string site = function.empty() ? "?" : without_parameters(function);
    if (!s.file.empty())
      site += " (" + basename_of(s.file) + ":" + std::to_string(s.line) + ")";
    else if (!row.module.empty())
      site += " (" + basename_of(row.module) + "+" + hex(row.offset) + ")";
    it->second = names.id(s.file.empty() ? row.module + "+" + hex(row.offset)
                                         : function + "\n" + s.file + ":" + std::to_string(s.line));
    located.try_emplace(it->second, json{{"site", site},
                                         {"function", function},
                                         {"file", s.file},
                                         {"line", s.line},
                                         {"module", row.module},
                                         {"offset", hex(row.offset)}});
    return it->second;
  };

  std::map<Key, Merged> merged;
  std::uint64_t overflow_calls = 0, overflow_host_ns = 0, foreign = 0, bad_rows = 0;
  int overflow_tasks = 0, reporting = 0, first_overflow = -1;
  std::size_t capacity = 0;
  for (int r = 0; r < ntasks; ++r) {
    std::ifstream in(dir / ("task." + std::to_string(r) + ".sites"), std::ios::binary);
    std::string line;
    if (!in || !std::getline(in, line)) continue;
    const json header = json::parse(line, nullptr, false);
    if (!header.is_object()) {
      ++bad_rows;
      continue;
    }
    ++reporting;
    const auto over = header.value("overflow_calls", std::uint64_t{0});
    if (over > 0 && overflow_tasks++ == 0) first_overflow = r;
    overflow_calls += over;
    overflow_host_ns += header.value("overflow_host_ns", std::uint64_t{0});
    foreign += header.value("foreign", std::uint64_t{0});
    capacity = std::max(capacity, header.value("capacity", std::size_t{0}));
    // This task's rows by identity first: the task counts once per row, with its total time.
    std::map<Key, Merged> task;
    while (std::getline(in, line)) {
      const auto row = parse_row(line);
      if (!row) {
        ++bad_rows;
        continue;
      }
      Merged& m = task[{identity(*row), names.id(row->op), names.id(row->algorithm),
                        names.id(row->rule), row->comm_size, row->bytes, row->root}];
      m.calls += row->calls;
      m.host_ns += row->host_ns;
      m.host_ns_min = std::min(m.host_ns_min, row->host_ns_min);
      m.host_ns_max = std::max(m.host_ns_max, row->host_ns_max);
      m.cycles += row->cycles;
    }
    for (const auto& [key, t] : task) {
      Merged& m = merged[key];
      ++m.tasks;
      m.calls += t.calls;
      m.host_ns += t.host_ns;
      m.host_ns_min = std::min(m.host_ns_min, t.host_ns_min);
      m.host_ns_max = std::max(m.host_ns_max, t.host_ns_max);
      m.task_host_ns_max = std::max(m.task_host_ns_max, t.host_ns);
      m.cycles += t.cycles;
      m.task_cycles_max = std::max(m.task_cycles_max, t.cycles);
    }
  }
  if (bad_rows > 0)
    spdlog::warn("call sites: {} malformed rows in the tasks' files were left out", bad_rows);
  if (overflow_tasks > 0)
    std::fprintf(stderr,
                 "bglrun: collective call sites: %d task(s) (first: rank %d) filled their table "
                 "of %zu rows; %llu later calls of new sites (or sizes) were counted without "
                 "their site\n",
                 overflow_tasks, first_overflow, capacity,
                 static_cast<unsigned long long>(overflow_calls));

  // The rows with the most host time first; beyond kMaxRows only counted.
  std::vector<std::pair<const Key*, const Merged*>> order;
  order.reserve(merged.size());
  for (const auto& [k, m] : merged)
    order.emplace_back(&k, &m);
  std::ranges::sort(order, [](const auto& a, const auto& b) {
    return a.second->host_ns != b.second->host_ns ? a.second->host_ns > b.second->host_ns
                                                  : *a.first < *b.first;
  });
  const std::size_t kept = std::min(order.size(), CallSiteFiles::kMaxRows);
  json sites = json::array();
  for (std::size_t i = 0; i < kept; ++i) {
    const auto& [where, op, algorithm, rule, comm_size, bytes, root] = *order[i].first;
    const Merged& m = *order[i].second;
    json row = located.at(where);
    row["op"] = names.texts[static_cast<std::size_t>(op)];
    row["algorithm"] = names.texts[static_cast<std::size_t>(algorithm)];
    row["rule"] = names.texts[static_cast<std::size_t>(rule)];
    row["comm_size"] = comm_size;
    row["bytes"] = bytes;
    if (root >= 0) row["root"] = root;
    row["tasks"] = m.tasks;
    row["calls"] = m.calls;
    row["host_seconds"] = static_cast<double>(m.host_ns) * 1e-9;
    row["host_seconds_slowest_task"] = static_cast<double>(m.task_host_ns_max) * 1e-9;
    row["host_call_seconds_min"] = static_cast<double>(m.host_ns_min) * 1e-9;
    row["host_call_seconds_max"] = static_cast<double>(m.host_ns_max) * 1e-9;
    if (cpu_hz > 0) {
      row["cycles"] = m.cycles;
      row["virtual_seconds"] = static_cast<double>(m.cycles) / cpu_hz;
      row["virtual_seconds_slowest_task"] = static_cast<double>(m.task_cycles_max) / cpu_hz;
    }
    sites.push_back(std::move(row));
  }
  return {{"capacity", capacity},
          {"tasks_reporting", reporting},
          {"virtual_time", cpu_hz > 0},
          {"sites", std::move(sites)},
          {"rows_left_out", order.size() - kept},
          {"overflow",
           {{"tasks", overflow_tasks},
            {"calls", overflow_calls},
            {"host_seconds", static_cast<double>(overflow_host_ns) * 1e-9}}},
          {"other_threads_calls", foreign}};
}

CallSiteFiles::CallSiteFiles(const std::filesystem::path& near) {
  const auto parent = near.has_parent_path() ? near.parent_path() : std::filesystem::path(".");
  std::string name = (parent / ("." + near.filename().string() + ".sites.XXXXXX")).string();
  if (!::mkdtemp(name.data()))
    throw ConfigError("cannot record collective call sites next to " +
                      printable(near.string(), 256) +
                      ": cannot make a directory: " + std::strerror(errno));
  dir_ = std::filesystem::absolute(name);
  ::setenv("BGL_SITES_DIR", dir_.c_str(), 1);  // the tasks inherit it
}

CallSiteFiles::~CallSiteFiles() {
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

json CallSiteFiles::merge(int ntasks, double cpu_hz) const {
  return merge_call_sites(dir_, ntasks, cpu_hz);
}

}  // namespace bgl::bglrun
