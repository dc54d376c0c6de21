#pragma once
// Shared pieces of the benchmarks: repeated samples with min/median, a table printer with a JSON
// twin, and a scratch shared-memory area beside the job's segment for the "raw" floors.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "bgl/job_runtime/env.hpp"
#include "bgl/packet_layer/runtime.hpp"
#include "bgl/torus_emu/error.hpp"

namespace bgl::bench {

// A benchmark's main(): runs `run` and reports what it throws as "<name>: <message>" on stderr
// with exit code 2 (bad options, a missing launcher, a failed check).
inline int run_main(const char* name, int (*run)(int, char**), int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", name, e.what());
    return 2;
  }
}

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// What a measurement reads: the host's steady clock, or, in a job run with virtual time (bglrun
// --virtual-time), the task's BG/L clock, so that the same benchmark reports BG/L times.
class TimeSource {
 public:
  // The host's clock unless `endpoint` keeps virtual time.
  explicit TimeSource(const packet_layer::Endpoint* endpoint = nullptr)
      : clock_(endpoint && endpoint->timed() ? &endpoint->clock() : nullptr),
        hz_(clock_ ? endpoint->vt_params()->cpu_hz : 0) {}
  bool is_virtual() const { return clock_ != nullptr; }
  double seconds() const {
    if (clock_) return static_cast<double>(clock_->now()) / hz_;
    return std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
  }
  const char* name() const { return clock_ ? "BG/L (virtual time)" : "host"; }

 private:
  const virtual_time::Clock* clock_;
  double hz_;
};

struct Samples {
  std::vector<double> values;
  void add(double v) { values.push_back(v); }
  double min() const {
    return values.empty() ? 0 : *std::min_element(values.begin(), values.end());
  }
  double max() const {
    return values.empty() ? 0 : *std::max_element(values.begin(), values.end());
  }
  double median() const {
    if (values.empty()) return 0;
    auto v = values;
    std::nth_element(v.begin(), v.begin() + static_cast<long>(v.size() / 2), v.end());
    return v[v.size() / 2];
  }
};

struct Args {
  bool json = false;
  int rounds = 7;
  std::vector<std::string> rest;

  static Args parse(int argc, char** argv, int default_rounds) {
    Args a;
    a.rounds = default_rounds;
    for (int i = 1; i < argc; ++i) {
      const std::string_view s = argv[i];
      if (s == "--json")
        a.json = true;
      else if (s == "--rounds" && i + 1 < argc)
        a.rounds = static_cast<int>(job_runtime::env::parse_int(argv[++i], "--rounds", 1, 1000));
      else
        a.rest.emplace_back(s);
    }
    return a;
  }

  // The value after `name` among the remaining arguments (validated), or `fallback`.
  long long number(std::string_view name, long long fallback, long long lo, long long hi) const {
    for (std::size_t i = 0; i + 1 < rest.size(); ++i)
      if (rest[i] == name)
        return job_runtime::env::parse_int(rest[i + 1], std::string(name), lo, hi);
    return fallback;
  }
  std::string text(std::string_view name, std::string fallback) const {
    for (std::size_t i = 0; i + 1 < rest.size(); ++i)
      if (rest[i] == name) return rest[i + 1];
    return fallback;
  }
};

// A table printed as aligned text, or as JSON rows when asked.
class Table {
 public:
  Table(std::string title, std::vector<std::string> columns)
      : title_(std::move(title)), columns_(std::move(columns)) {}
  void row(std::vector<nlohmann::json> cells) { rows_.push_back(std::move(cells)); }

  nlohmann::json to_json() const {
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& r : rows_) {
      nlohmann::json o;
      for (std::size_t i = 0; i < columns_.size() && i < r.size(); ++i)
        o[columns_[i]] = r[i];
      rows.push_back(o);
    }
    return {{"title", title_}, {"rows", rows}};
  }

  void print() const {
    std::printf("\n%s\n", title_.c_str());
    std::vector<std::size_t> width(columns_.size());
    const auto text = [](const nlohmann::json& c) {
      if (c.is_number_float()) {
        char b[32];
        std::snprintf(b, sizeof b, "%.3f", c.get<double>());
        return std::string(b);
      }
      return c.is_string() ? c.get<std::string>() : c.dump();
    };
    for (std::size_t i = 0; i < columns_.size(); ++i)
      width[i] = columns_[i].size();
    for (const auto& r : rows_)
      for (std::size_t i = 0; i < r.size() && i < width.size(); ++i)
        width[i] = std::max(width[i], text(r[i]).size());
    for (std::size_t i = 0; i < columns_.size(); ++i)
      std::printf("%*s  ", static_cast<int>(width[i]), columns_[i].c_str());
    std::printf("\n");
    for (const auto& r : rows_) {
      for (std::size_t i = 0; i < r.size() && i < width.size(); ++i)
        std::printf("%*s  ", static_cast<int>(width[i]), text(r[i]).c_str());
      std::printf("\n");
    }
  }

 private:
  std::string title_;
  std::vector<std::string> columns_;
  std::vector<std::vector<nlohmann::json>> rows_;
};

// Shared memory for a raw floor measurement, named after the job's segment (so a crashed run's
// leftover is removed with the job's stale segments). Rank 0 creates it; everybody maps it.
class ScratchMemory {
 public:
  ScratchMemory(packet_layer::Runtime& rt, std::size_t bytes) : bytes_(bytes) {
    const std::string name =
        job_runtime::env::get("BGL_SEGMENT").value_or("/bglemu.bench") + ".scratch";
    int fd = -1;
    if (rt.rank() == 0) {
      fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
      if (fd < 0 || ftruncate(fd, static_cast<off_t>(bytes)) != 0)
        throw ConfigError("cannot create " + name);
    }
    rt.barrier();
    if (rt.rank() != 0) fd = shm_open(name.c_str(), O_RDWR, 0);
    if (fd < 0) throw ConfigError("cannot open " + name);
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) throw ConfigError("cannot map " + name);
    base_ = static_cast<std::byte*>(p);
    rt.barrier();
    if (rt.rank() == 0) shm_unlink(name.c_str());
  }
  ScratchMemory(const ScratchMemory&) = delete;
  ScratchMemory& operator=(const ScratchMemory&) = delete;
  ~ScratchMemory() { munmap(base_, bytes_); }
  std::byte* data() const { return base_; }

 private:
  std::byte* base_ = nullptr;
  std::size_t bytes_;
};

}  // namespace bgl::bench
