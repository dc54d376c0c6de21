#include "host_parts.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "bgl/torus_emu/user_text.hpp"

namespace bgl::bglrun {
namespace {

namespace fs = std::filesystem;

constexpr const char* kStatistics = "statistics.json";

std::string hex(std::uint64_t v) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(v));
  return text;
}

// Copies the tasks' files ("task.<rank>.<kind>") of `from` into `to` (made if need be).
void copy_task_files(const fs::path& from, const fs::path& to) {
  if (from.empty() || to.empty() || !fs::is_directory(from)) return;
  fs::create_directories(to);
  for (const auto& e : fs::directory_iterator(from))
    if (e.is_regular_file() && e.path().filename().string().starts_with("task."))
      fs::copy_file(e.path(), to / e.path().filename(), fs::copy_options::overwrite_existing);
}

std::string shown(const fs::path& p) {
  return printable(p.string(), 256);
}

}  // namespace

HostParts::HostParts(const fs::path& near, std::uint64_t job_id, int hosts, int this_host)
    : dir_(near.has_parent_path() ? near.parent_path() : fs::path(".")),
      stem_("." + near.filename().string() + "." + hex(job_id)),
      hosts_(hosts),
      this_host_(this_host) {}

fs::path HostParts::part(int h) const {
  return dir_ / (stem_ + ".host" + std::to_string(h));
}

bool HostParts::publish(const Files& files) const {
  std::string name = (dir_ / (stem_ + ".host" + std::to_string(this_host_) + ".XXXXXX")).string();
  if (!::mkdtemp(name.data())) {
    std::fprintf(stderr, "bglrun: host %d: cannot leave its statistics for host 0 in %s: %s\n",
                 this_host_, shown(dir_).c_str(), std::strerror(errno));
    return false;
  }
  const fs::path temp = name;
  try {
    if (files.statistics) {
      std::ofstream out(temp / kStatistics, std::ios::binary);
      out << files.statistics->dump();
      out.close();
      if (!out) throw std::runtime_error("cannot write " + shown(temp / kStatistics));
    }
    copy_task_files(files.sites_dir, temp / "sites");
    copy_task_files(files.trace_dir, temp / "trace");
    fs::remove_all(part(this_host_));
    fs::rename(temp, part(this_host_));
    return true;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bglrun: host %d: cannot leave its part of the results for host 0: %s\n",
                 this_host_, e.what());
    std::error_code ignored;
    fs::remove_all(temp, ignored);
    return false;
  }
}

HostParts::Collected HostParts::collect(std::chrono::milliseconds wait, const Files& into) const {
  Collected c;
  const auto deadline = std::chrono::steady_clock::now() + wait;
  for (int h = 0; h < hosts_; ++h) {
    if (h == this_host_) continue;
    const auto dir = part(h);
    std::error_code ec;
    while (!fs::is_directory(dir, ec) && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (!fs::is_directory(dir, ec)) {
      c.missing.push_back(h);
      continue;
    }
    try {
      if (into.statistics) {
        std::ifstream in(dir / kStatistics, std::ios::binary);
        if (!in) throw std::runtime_error("it has no " + std::string(kStatistics));
        std::stringstream text;
        text << in.rdbuf();
        auto doc = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
        if (!doc.is_object())
          throw std::runtime_error(std::string(kStatistics) + " is not a JSON object");
        c.statistics.emplace_back(h, std::move(doc));
      }
      copy_task_files(dir / "sites", into.sites_dir);
      copy_task_files(dir / "trace", into.trace_dir);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "bglrun: host %d's part of the results (%s) cannot be read: %s\n", h,
                   shown(dir).c_str(), e.what());
      c.missing.push_back(h);
    }
    fs::remove_all(dir, ec);
  }
  return c;
}

}  // namespace bgl::bglrun
