#pragma once
// An emulated job inside the test process: the segment is an anonymous MAP_SHARED mapping formatted
// like bglrun does (packet layer, then the collective network's region), and threads play the
// tasks.
#include <sys/mman.h>

#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bgl/collnet/region.hpp"
#include "bgl/pkt/machine.hpp"

namespace bgl::collnet::test {

// Runs task(rank) for ranks 0..ntasks-1, one thread each, and joins them.
inline void run_threads(int ntasks, const std::function<void(torus::Rank)>& task) {
  std::vector<std::thread> threads;
  for (int r = 0; r < ntasks; ++r)
    threads.emplace_back(task, static_cast<torus::Rank>(r));
  for (auto& t : threads)
    t.join();
}

class InProcessJob {
 public:
  InProcessJob(int ntasks, const std::string& shape, const std::string& mode = "heater",
               const Options& options = {})
      : config_(make_config(ntasks, shape, mode, options)),
        bytes_(pkt::Machine::segment_bytes(config_)),
        policy_(pkt::WaitPolicy::for_job(ntasks)) {
    void* p = ::mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::runtime_error("mmap failed");
    base_ = static_cast<std::byte*>(p);
    machine_ = std::make_unique<pkt::Machine>(pkt::Machine::format({base_, bytes_}, config_));
    format(*machine_, options);
  }
  InProcessJob(const InProcessJob&) = delete;
  InProcessJob& operator=(const InProcessJob&) = delete;
  ~InProcessJob() {
    machine_.reset();
    ::munmap(base_, bytes_);
  }

  const pkt::Machine& machine() const { return *machine_; }
  const pkt::WaitPolicy& policy() const { return policy_; }
  int ntasks() const { return config_.ntasks(); }

  // Runs task(rank) on one thread per task and joins them.
  void run(const std::function<void(torus::Rank)>& task) const { run_threads(ntasks(), task); }

 private:
  static pkt::JobConfig make_config(int ntasks, const std::string& shape, const std::string& mode,
                                    const Options& options) {
    pkt::JobOptions o;
    o.ntasks = ntasks;
    o.shape = shape;
    o.mode = mode;
    auto config = pkt::JobConfig::resolve(o);
    config.regions.push_back({std::string(kRegionName), region_bytes(config, options)});
    return config;
  }

  pkt::JobConfig config_;
  std::size_t bytes_;
  pkt::WaitPolicy policy_;
  std::byte* base_ = nullptr;
  std::unique_ptr<pkt::Machine> machine_;
};

}  // namespace bgl::collnet::test
