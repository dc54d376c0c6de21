#pragma once
// An emulated job inside the test process: the segment is an anonymous MAP_SHARED mapping formatted
// like bglrun does (packet layer, then the collective network's region), and threads play the
// tasks.
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bgl/collective_net_emu/region.hpp"
#include "bgl/packet_layer/machine.hpp"
#include "bgl/test_support/in_process_machine.hpp"

namespace bgl::collective_net_emu::test {

// Runs task(rank) for ranks 0..ntasks-1, one thread each, and joins them.
inline void run_threads(int ntasks, const std::function<void(torus_emu::Rank)>& task) {
  std::vector<std::thread> threads;
  for (int r = 0; r < ntasks; ++r)
    threads.emplace_back(task, static_cast<torus_emu::Rank>(r));
  for (auto& t : threads)
    t.join();
}

class InProcessJob {
 public:
  InProcessJob(int ntasks, const std::string& shape, const std::string& mode = "heater",
               const Options& options = {})
      : job_(make_config(ntasks, shape, mode, options), job_runtime::WaitPolicy::for_job(ntasks)) {
    format(job_.machine.job(), options);
  }

  const packet_layer::Machine& machine() const { return job_.machine; }
  const job_runtime::WaitPolicy& policy() const { return job_.policy; }
  int ntasks() const { return job_.ntasks(); }

  // Runs task(rank) on one thread per task and joins them.
  void run(const std::function<void(torus_emu::Rank)>& task) const { run_threads(ntasks(), task); }

 private:
  static job_runtime::JobConfig make_config(int ntasks, const std::string& shape,
                                            const std::string& mode, const Options& options) {
    job_runtime::JobOptions o;
    o.ntasks = ntasks;
    o.shape = shape;
    o.mode = mode;
    auto config = job_runtime::JobConfig::resolve(o);
    config.regions.push_back({std::string(kRegionName), region_bytes(config, options)});
    return config;
  }

  test_support::InProcessMachine job_;
};

}  // namespace bgl::collective_net_emu::test
