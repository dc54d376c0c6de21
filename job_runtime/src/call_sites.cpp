#include "bgl/job_runtime/call_sites.hpp"
#include "json_string.hpp"

#include <dlfcn.h>
#include <execinfo.h>
#include <fcntl.h>
#include <link.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <limits>

#include "bgl/job_runtime/env.hpp"

namespace bgl::job_runtime {
namespace {

std::uint64_t monotonic_ns() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<std::uint64_t>(t.tv_sec) * 1'000'000'000u +
         static_cast<std::uint64_t>(t.tv_nsec);
}

// The code of the libraries between a program and the collectives: MPICH's (libmpi, libmpifort,
// libmpicxx) and libbglml. Found once; they are loaded with the program, before any collective.
struct Range {
  std::uintptr_t begin, end;
};
struct RuntimeCode {
  std::vector<Range> ranges;
  bool contains(std::uintptr_t a) const {
    return std::ranges::any_of(ranges, [a](const Range& r) { return a >= r.begin && a < r.end; });
  }
};

bool runtime_library(std::string_view path) {
  const auto slash = path.rfind('/');
  const std::string_view base = slash == std::string_view::npos ? path : path.substr(slash + 1);
  return base.starts_with("libmpi") || base.starts_with("libbglml");
}

const RuntimeCode& runtime_code() {
  static const RuntimeCode code = [] {
    RuntimeCode c;
    dl_iterate_phdr(
        [](dl_phdr_info* info, std::size_t, void* out) {
          if (!info->dlpi_name || !runtime_library(info->dlpi_name)) return 0;
          for (int i = 0; i < info->dlpi_phnum; ++i) {
            const auto& ph = info->dlpi_phdr[i];
            if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X)) continue;
            const std::uintptr_t begin = info->dlpi_addr + ph.p_vaddr;
            static_cast<RuntimeCode*>(out)->ranges.push_back({begin, begin + ph.p_memsz});
          }
          return 0;
        },
        &c);
    return c;
  }();
  return code;
}

// Where an address lies: the module's path and the address in the module's file.
struct Location {
  std::string module;
  std::uintptr_t offset = 0;
  std::string symbol;  // a dynamic symbol, when dladdr finds one
};

Location locate(std::uintptr_t address) {
  Location l;
  l.offset = address;
  Dl_info info{};
  link_map* map = nullptr;
  if (address == 0 || dladdr1(reinterpret_cast<void*>(address), &info,
                              reinterpret_cast<void**>(&map), RTLD_DL_LINKMAP) == 0)
    return l;
  if (map) l.offset = address - map->l_addr;
  if (map && map->l_name && *map->l_name) {
    l.module = map->l_name;
  } else {
    // The main program (its link map has no name).
    static const std::string program = [] {
      std::array<char, 4096> exe{};
      const ssize_t n = ::readlink("/proc/self/exe", exe.data(), exe.size() - 1);
      return n > 0 ? std::string(exe.data(), static_cast<std::size_t>(n)) : std::string();
    }();
    l.module = program;
  }
  if (info.dli_sname) l.symbol = info.dli_sname;
  return l;
}

std::uint64_t hash_row(const CallSites::Row& r) {
  std::uint64_t h = r.site * 0x9E3779B97F4A7C15ull;
  for (const std::uint64_t v :
       {std::uint64_t{r.op}, std::uint64_t{r.algorithm}, std::uint64_t{r.rule},
        static_cast<std::uint64_t>(r.comm_size), static_cast<std::uint64_t>(r.root), r.bytes})
    h = (h ^ v) * 0x100000001B3ull;
  return h ^ (h >> 29);
}

bool same_key(const CallSites::Row& a, const CallSites::Row& b) {
  return a.site == b.site && a.op == b.op && a.algorithm == b.algorithm && a.rule == b.rule &&
         a.comm_size == b.comm_size && a.root == b.root && a.bytes == b.bytes;
}

}  // namespace

std::unique_ptr<CallSites> CallSites::from_environment(torus_emu::Rank rank,
                                                       const virtual_time::Clock* clock) {
  const auto dir = job_runtime::env::get("BGL_SITES_DIR");
  if (!dir || dir->empty()) return nullptr;
  return std::make_unique<CallSites>(rank, *dir, clock);
}

CallSites::CallSites(torus_emu::Rank rank, std::string dir, const virtual_time::Clock* clock)
    : rank_(rank),
      dir_(std::move(dir)),
      clock_(clock),
      owner_(std::this_thread::get_id()),
      slots_(2 * kCapacity) {
  texts_.reserve(kTexts);
  texts_.emplace_back("(other)");  // 0: what does not fit in the text table
  // The first unwind loads the unwinder (libgcc_s) and the first look-up finds the libraries:
  // done here, so that no collective's time includes them.
  std::array<void*, 2> warm{};
  (void)::backtrace(warm.data(), 2);
  (void)runtime_code();
}

std::uintptr_t CallSites::program_caller(std::uintptr_t return_address) {
  const RuntimeCode& code = runtime_code();
  if (!code.contains(return_address)) return return_address;
  std::array<void*, kMaxFrames> frames{};
  const int n = ::backtrace(frames.data(), kMaxFrames);
  // Above the entry's own return address (frames below it belong to the entry and to us; how many
  // depends on inlining and the build), the first frame outside the runtime's libraries.
  int i = 0;
  while (i < n &&
         reinterpret_cast<std::uintptr_t>(frames[static_cast<std::size_t>(i)]) != return_address)
    ++i;
  for (i = i < n ? i + 1 : 0; i < n; ++i) {
    const auto a = reinterpret_cast<std::uintptr_t>(frames[static_cast<std::size_t>(i)]);
    if (!code.contains(a)) return a;
  }
  return 0;
}

CallSites::Start CallSites::start() const {
  return {monotonic_ns(), clock_ ? clock_->now() : 0};
}

std::uint16_t CallSites::text(std::string_view s) {
  for (std::size_t i = 1; i < texts_.size(); ++i)
    if (texts_[i] == s) return static_cast<std::uint16_t>(i);
  if (texts_.size() >= kTexts) return 0;
  texts_.emplace_back(s);
  return static_cast<std::uint16_t>(texts_.size() - 1);
}

void CallSites::record(const Call& call, Start start) {
  const std::uint64_t host = monotonic_ns() - start.host_ns;
  const std::uint64_t cycles =
      clock_ && clock_->now() > start.cycles ? clock_->now() - start.cycles : 0;
  if (std::this_thread::get_id() != owner_) [[unlikely]] {
    ++foreign_;
    return;
  }
  Row key;
  key.site = call.site;
  key.op = text(call.op);
  key.algorithm = text(call.algorithm);
  key.rule = text(call.rule);
  key.comm_size = call.comm_size;
  key.root = call.root;
  key.bytes = call.bytes;
  const std::size_t mask = slots_.size() - 1;
  for (std::size_t i = hash_row(key) & mask;; i = (i + 1) & mask) {
    Row& r = slots_[i];
    if (r.calls != 0 && !same_key(r, key)) continue;
    if (r.calls == 0) {
      if (used_ >= kCapacity) {
        ++overflow_calls_;
        overflow_host_ns_ += host;
        return;
      }
      ++used_;
      r = key;
      r.host_ns_min = std::numeric_limits<std::uint64_t>::max();
    }
    ++r.calls;
    r.host_ns += host;
    r.host_ns_min = std::min(r.host_ns_min, host);
    r.host_ns_max = std::max(r.host_ns_max, host);
    r.cycles += cycles;
    return;
  }
}

std::vector<CallSites::Row> CallSites::rows() const {
  std::vector<Row> out;
  out.reserve(used_);
  for (const Row& r : slots_)
    if (r.calls != 0) out.push_back(r);
  return out;
}

bool CallSites::write() const {
  std::string out;
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "{\"rank\":%u,\"capacity\":%zu,\"rows\":%zu,\"overflow_calls\":%llu,"
                "\"overflow_host_ns\":%llu,\"foreign\":%llu,\"virtual_time\":%s}\n",
                static_cast<unsigned>(rank_), kCapacity, used_,
                static_cast<unsigned long long>(overflow_calls_),
                static_cast<unsigned long long>(overflow_host_ns_),
                static_cast<unsigned long long>(foreign_), clock_ ? "true" : "false");
  out += buf;
  for (const Row& r : rows()) {
    const Location where = locate(r.site);
    out += "{\"module\":";
    json_string(out, where.module);
    out += ",\"symbol\":";
    json_string(out, where.symbol);
    out += ",\"op\":";
    json_string(out, texts_[r.op]);
    out += ",\"algorithm\":";
    json_string(out, texts_[r.algorithm]);
    out += ",\"rule\":";
    json_string(out, texts_[r.rule]);
    std::snprintf(
        buf, sizeof buf,
        ",\"offset\":%llu,\"comm_size\":%d,\"bytes\":%llu,\"root\":%d,\"calls\":%llu,"
        "\"host_ns\":%llu,\"host_ns_min\":%llu,\"host_ns_max\":%llu,\"cycles\":%llu}\n",
        static_cast<unsigned long long>(where.offset), r.comm_size,
        static_cast<unsigned long long>(r.bytes), r.root, static_cast<unsigned long long>(r.calls),
        static_cast<unsigned long long>(r.host_ns), static_cast<unsigned long long>(r.host_ns_min),
        static_cast<unsigned long long>(r.host_ns_max), static_cast<unsigned long long>(r.cycles));
    out += buf;
  }
  const std::string path = dir_ + "/task." + std::to_string(rank_) + ".sites";
  const std::string temp = path + ".part";
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  bool ok = true;
  for (std::size_t done = 0; ok && done < out.size();) {
    const ssize_t n = ::write(fd, out.data() + done, out.size() - done);
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) done += static_cast<std::size_t>(n);
  }
  ok = ::close(fd) == 0 && ok;
  // Renamed into place: bglrun never reads half a file of a task that died while writing.
  return ok && ::rename(temp.c_str(), path.c_str()) == 0;
}

}  // namespace bgl::job_runtime
