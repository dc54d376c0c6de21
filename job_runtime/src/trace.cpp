#include "bgl/job_runtime/trace.hpp"
#include "json_string.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <unordered_map>

#include "bgl/job_runtime/env.hpp"

namespace bgl::job_runtime {
namespace {

// Microseconds with nanosecond resolution, as Chrome's trace format wants them.
void micros(std::string& out, std::uint64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%llu.%03llu", static_cast<unsigned long long>(ns / 1000),
                static_cast<unsigned long long>(ns % 1000));
  out += buf;
}

}  // namespace

std::uint64_t Trace::monotonic_ns() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<std::uint64_t>(t.tv_sec) * 1'000'000'000u +
         static_cast<std::uint64_t>(t.tv_nsec);
}

std::string_view to_string(TraceCategory c) {
  switch (c) {
    case TraceCategory::message:
      return "message";
    case TraceCategory::collective:
      return "collective";
    case TraceCategory::step:
      return "step";
    case TraceCategory::mpi:
      return "mpi";
  }
  return "?";
}

std::unique_ptr<Trace> Trace::from_environment(torus_emu::Rank rank,
                                               const virtual_time::Clock& clock, double cpu_hz) {
  const auto dir = job_runtime::env::get("BGL_TRACE_DIR");
  if (!dir || dir->empty()) return nullptr;
  const auto capacity =
      job_runtime::env::get_int("BGL_TRACE_TASK_EVENTS", 1, 1LL << 32).value_or(100000);
  const auto epoch = job_runtime::env::get_int("BGL_TRACE_EPOCH_NS", 0, INT64_MAX).value_or(0);
  const bool virtual_clock = job_runtime::env::get("BGL_TRACE_CLOCK").value_or("host") == "virtual";
  return std::make_unique<Trace>(rank, *dir, static_cast<std::size_t>(capacity), virtual_clock,
                                 static_cast<std::uint64_t>(epoch), clock, cpu_hz);
}

Trace::Trace(torus_emu::Rank rank, std::string dir, std::size_t capacity, bool virtual_clock,
             std::uint64_t epoch_ns, const virtual_time::Clock& clock, double cpu_hz)
    : rank_(rank),
      dir_(std::move(dir)),
      capacity_(capacity),
      virtual_clock_(virtual_clock),
      epoch_ns_(epoch_ns),
      clock_(&clock),
      ns_per_cycle_(cpu_hz > 0 ? 1e9 / cpu_hz : 1.0),
      owner_(std::this_thread::get_id()) {
  events_.reserve(capacity_);
  names_.emplace_back();  // 0: no name
}

Trace::Name Trace::intern(std::string_view text) {
  std::string key(text);
  if (const auto it = name_ids_.find(key); it != name_ids_.end()) return it->second;
  if (names_.size() > 0xFFFF) return 0;  // a name table full of distinct texts: events unnamed
  const auto id = static_cast<Name>(names_.size());
  names_.push_back(key);
  name_ids_.emplace(std::move(key), id);
  return id;
}

std::uint64_t Trace::now() const {
  if (virtual_clock_)
    return static_cast<std::uint64_t>(static_cast<double>(clock_->now()) * ns_per_cycle_);
  const auto t = monotonic_ns();
  return t > epoch_ns_ ? t - epoch_ns_ : 0;
}

void Trace::record(const Event& e) {
  if (std::this_thread::get_id() != owner_) {
    ++foreign_;
    return;
  }
  if (events_.size() >= capacity_) {
    ++dropped_;
    return;
  }
  events_.push_back(e);
}

namespace {
std::int32_t peer_of(const TraceArgs& a) {
  return a.peer >= 0 && a.peer <= INT32_MAX ? static_cast<std::int32_t>(a.peer) : -1;
}
}  // namespace

void Trace::span(TraceCategory category, Name name, std::uint64_t start, const Args& args) {
  const auto t = now();
  record({start, t > start ? t - start : 0, args.bytes, peer_of(args), args.comm_size, name,
          args.detail, category, 'X'});
}

void Trace::begin(TraceCategory category, Name name, std::uint64_t id, const Args& args) {
  record({now(), id, args.bytes, peer_of(args), args.comm_size, name, args.detail, category, 'b'});
}

void Trace::end(TraceCategory category, Name name, std::uint64_t id) {
  record({now(), id, kNoBytes, -1, 0, name, 0, category, 'e'});
}

void Trace::instant(TraceCategory category, Name name, const Args& args) {
  record({now(), 0, args.bytes, peer_of(args), args.comm_size, name, args.detail, category, 'i'});
}

bool Trace::write() const {
  // Spans matched by id whose other half is missing (the cap cut it off) are left out, so that
  // every begin in the file has its end. An id may be used again once its span ended.
  std::vector<bool> keep(events_.size(), true);
  std::unordered_map<std::uint64_t, std::vector<std::size_t>> open;
  std::uint64_t unmatched = 0;
  for (std::size_t i = 0; i < events_.size(); ++i) {
    const auto& e = events_[i];
    if (e.phase == 'b') {
      keep[i] = false;
      open[e.dur_or_id].push_back(i);
    } else if (e.phase == 'e') {
      auto& begins = open[e.dur_or_id];
      if (begins.empty()) {
        keep[i] = false;
        ++unmatched;
        continue;
      }
      keep[begins.back()] = true;
      begins.pop_back();
    }
  }
  for (const auto& [id, begins] : open)
    unmatched += begins.size();
  std::string body;
  body.reserve(events_.size() * 140);
  for (std::size_t i = 0; i < events_.size(); ++i) {
    if (!keep[i]) continue;
    const auto& e = events_[i];
    body += "{\"ph\":\"";
    body += e.phase;
    body += "\",\"pid\":" + std::to_string(rank_) + ",\"tid\":0,\"cat\":";
    json_string(body, to_string(e.category));
    body += ",\"name\":";
    json_string(body, names_[e.name]);
    body += ",\"ts\":";
    micros(body, e.ts);
    if (e.phase == 'X') {
      body += ",\"dur\":";
      micros(body, e.dur_or_id);
    } else if (e.phase == 'b' || e.phase == 'e') {
      char id[32];
      std::snprintf(id, sizeof id, "0x%llx", static_cast<unsigned long long>(e.dur_or_id));
      body += ",\"id2\":{\"local\":\"";
      body += id;
      body += "\"}";
    } else {
      body += ",\"s\":\"t\"";
    }
    if (e.peer >= 0 || e.bytes != kNoBytes || e.detail != 0 || e.comm_size != 0) {
      body += ",\"args\":{";
      bool first = true;
      const auto sep = [&] {
        if (!first) body += ',';
        first = false;
      };
      if (e.peer >= 0) sep(), body += "\"peer\":" + std::to_string(e.peer);
      if (e.bytes != kNoBytes) sep(), body += "\"bytes\":" + std::to_string(e.bytes);
      if (e.comm_size != 0) sep(), body += "\"comm_size\":" + std::to_string(e.comm_size);
      if (e.detail != 0) {
        sep();
        body += "\"detail\":";
        json_string(body, names_[e.detail]);
      }
      body += '}';
    }
    body += "}\n";
  }
  char header[200];
  std::snprintf(
      header, sizeof header,
      "# bglemu trace: rank %u events %zu dropped %llu unmatched %llu foreign %llu\n",
      static_cast<unsigned>(rank_), events_.size(), static_cast<unsigned long long>(dropped_),
      static_cast<unsigned long long>(unmatched), static_cast<unsigned long long>(foreign_));
  // Written under a temporary name and renamed when complete: a task that dies while writing
  // leaves no half file for bglrun to merge.
  const std::string path = dir_ + "/task." + std::to_string(rank_) + ".trace";
  const std::string temp = path + ".part";
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  bool ok = true;
  for (const std::string_view part : {std::string_view(header), std::string_view(body)}) {
    for (std::size_t done = 0; ok && done < part.size();) {
      const ssize_t n = ::write(fd, part.data() + done, part.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0)
        ok = false;
      else
        done += static_cast<std::size_t>(n);
    }
  }
  ok = ::close(fd) == 0 && ok;
  if (ok) ok = ::rename(temp.c_str(), path.c_str()) == 0;
  if (!ok) ::unlink(temp.c_str());
  return ok;
}

}  // namespace bgl::job_runtime
