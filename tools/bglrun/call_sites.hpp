#pragma once
// bglrun --stats/--report/--trace: the tasks count their collective calls per call site
// (pkt/call_sites.hpp) and write them to files of their own in a directory bglrun makes; after the
// job, bglrun resolves each distinct site once (function, file and line from the module's symbol
// table and DWARF, through elfutils' libdwfl) and merges the tasks' rows into one table.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

namespace bgl::bglrun {

// Resolves a return address in a module (its path and the address in its file) to the function,
// source file and line of the call before it. Caches the modules it opened.
class SiteResolver {
 public:
  SiteResolver();
  ~SiteResolver();
  SiteResolver(const SiteResolver&) = delete;
  SiteResolver& operator=(const SiteResolver&) = delete;

  struct Site {
    std::string function;  // demangled; empty when unknown
    std::string file;      // empty without debug information
    int line = 0;
  };
  Site resolve(const std::string& module, std::uint64_t offset);

 private:
  struct Modules;
  std::unique_ptr<Modules> modules_;
};

class CallSiteFiles {
 public:
  // The most rows the merged table keeps (the ones with the most host time); the rest are counted.
  static constexpr std::size_t kMaxRows = 1000;

  // Before the job: makes the tasks' directory next to `near` (the statistics, report or trace
  // path) and sets BGL_SITES_DIR for the tasks. Throws ConfigError when it cannot.
  explicit CallSiteFiles(const std::filesystem::path& near);
  CallSiteFiles(const CallSiteFiles&) = delete;
  CallSiteFiles& operator=(const CallSiteFiles&) = delete;
  ~CallSiteFiles();  // removes the directory

  // After the job: the merged table ("collective_sites" of the statistics; docs/CONFIGURATION.md).
  // `cpu_hz` > 0: virtual time, cycles are converted to seconds.
  nlohmann::json merge(int ntasks, double cpu_hz) const;
  // The tasks' directory (several hosts: the other hosts' files are copied into it).
  const std::filesystem::path& dir() const { return dir_; }

 private:
  std::filesystem::path dir_;
};

// The merge of the tasks' files in `dir` (task.<rank>.sites), for tests.
nlohmann::json merge_call_sites(const std::filesystem::path& dir, int ntasks, double cpu_hz);

}  // namespace bgl::bglrun
