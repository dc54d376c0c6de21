#pragma once
// A task's collective calls per call site, for bglrun --stats/--report: which collective, on how
// many ranks, with how many bytes, which algorithm and which selection rule chose it, how often and
// how long (host time and, with virtual time, BG/L cycles). A call site is the program's return
// address: the first frame of the call stack outside MPICH's libraries (libmpi*) and libbglml, so
// that an MPI program's MPI_Allreduce in main() and a C++ program's Communicator::run in main()
// both name main(). The table is fixed in size (kCapacity rows, allocated when the task starts);
// calls of rows that find no room are counted, never stored. The task writes its rows to a file of
// its own when its runtime ends; bglrun resolves the addresses (function, file:line) and merges
// the tasks' rows into the statistics. Components reach it through Endpoint::call_sites(), null
// when nobody asked: the only cost then is that test. Not thread-safe: calls from threads other
// than the one that made the table are counted and left out.
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "bgl/torus_emu/mapping.hpp"
#include "bgl/virtual_time/clock.hpp"

namespace bgl::job_runtime {

class CallSites {
 public:
  static constexpr std::size_t kCapacity = 256;  // rows per task
  static constexpr std::size_t kTexts = 64;      // distinct collective, algorithm and rule names
  static constexpr int kMaxFrames = 48;          // frames searched for the program's caller

  // On when bglrun set BGL_SITES_DIR (it does for --stats, --report and --trace). `clock`: the
  // task's BG/L clock, or null without virtual time.
  static std::unique_ptr<CallSites> from_environment(torus_emu::Rank rank,
                                                     const virtual_time::Clock* clock);
  CallSites(torus_emu::Rank rank, std::string dir, const virtual_time::Clock* clock);

  // The program's call site for a runtime entry (Communicator::run, Library::run) that passes its
  // own return address (__builtin_return_address(0)): that address itself when it lies in the
  // program; else (the entry was called by libbglml or MPICH) the first frame above it on the
  // stack that lies outside libmpi* and libbglml, found by one unwind of the stack (about a
  // microsecond). 0 when none is found within kMaxFrames frames.
  [[gnu::noinline]] static std::uintptr_t program_caller(std::uintptr_t return_address);

  struct Start {
    std::uint64_t host_ns = 0;
    std::uint64_t cycles = 0;
  };
  Start start() const;

  struct Call {
    std::uintptr_t site = 0;  // program_caller()
    std::string_view op;      // "allreduce"
    std::string_view algorithm;
    std::string_view rule;  // why the algorithm was chosen
    int comm_size = 0;
    std::uint64_t bytes = 0;
    int root = -1;  // -1: the collective has none
  };
  // One call that began at `start` and ends now.
  void record(const Call& call, Start start);

  struct Row {
    std::uintptr_t site = 0;
    std::uint16_t op = 0, algorithm = 0, rule = 0;  // indices into texts()
    std::int32_t comm_size = 0, root = -1;
    std::uint64_t bytes = 0;
    std::uint64_t calls = 0;  // 0: the slot is free
    std::uint64_t host_ns = 0, host_ns_min = 0, host_ns_max = 0;
    std::uint64_t cycles = 0;
  };
  // The rows in use, in no particular order.
  std::vector<Row> rows() const;
  const std::vector<std::string>& texts() const { return texts_; }
  std::uint64_t overflow_calls() const { return overflow_calls_; }
  std::uint64_t overflow_host_ns() const { return overflow_host_ns_; }
  std::uint64_t foreign() const { return foreign_; }

  // Writes "<dir>/task.<rank>.sites": a header object, then one JSON object per row with the
  // site's module (path), its address in that module's file (what a symbol table or DWARF
  // knows) and the dynamic symbol dladdr finds; false when the file cannot be written.
  bool write() const;

 private:
  std::uint16_t text(std::string_view s);

  torus_emu::Rank rank_;
  std::string dir_;
  const virtual_time::Clock* clock_;
  std::thread::id owner_;
  // Open addressing over twice the rows, so a probe ends at a free slot soon.
  std::vector<Row> slots_;
  std::size_t used_ = 0;
  std::vector<std::string> texts_;
  std::uint64_t overflow_calls_ = 0, overflow_host_ns_ = 0, foreign_ = 0;
};

}  // namespace bgl::job_runtime
