#pragma once
// A job split over several emulated hosts inside the test process: one segment per host (anonymous
// MAP_SHARED mappings formatted as each host's bglrun does, with the collective network's region),
// one libfabric agent per host on 127.0.0.1, and threads playing the tasks, each attached to its
// own host's segment. What crosses hosts goes through the agents exactly as between processes.

#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bgl/collective_net_emu/region.hpp"
#include "bgl/packet_layer/machine.hpp"
#include "bgl/packet_layer/ofi_agent.hpp"
#include "in_process_job.hpp"

namespace bgl::collective_net_emu::test {

class InProcessHosts {
 public:
  InProcessHosts(int ntasks, const std::string& shape, int hosts, const Options& options = {},
                 packet_layer::OfiOptions ofi = {})
      : policy_(job_runtime::WaitPolicy::for_job(ntasks)) {
    std::vector<std::vector<std::byte>> addresses;
    for (int h = 0; h < hosts; ++h) {
      job_runtime::JobOptions o;
      o.ntasks = ntasks;
      o.shape = shape;
      o.hosts = hosts;
      o.host_index = h;
      auto config = job_runtime::JobConfig::resolve(o);
      config.regions.push_back({std::string(kRegionName), region_bytes(config, options)});
      Host& host = hosts_.emplace_back();
      host.job = std::make_unique<test_support::InProcessMachine>(std::move(config), policy_);
      format(host.job->machine.job(), options);
      ofi.timeout = std::chrono::milliseconds(60'000);
      host.agent = std::make_unique<packet_layer::OfiAgent>(host.job->machine,
                                                            host.job->config.placement, ofi);
      addresses.push_back(host.agent->address());
    }
    for (auto& host : hosts_)
      host.agent->start(addresses);
  }
  InProcessHosts(const InProcessHosts&) = delete;
  InProcessHosts& operator=(const InProcessHosts&) = delete;
  ~InProcessHosts() {
    finish();
    for (auto& host : hosts_) {
      host.agent.reset();
      host.job.reset();
    }
  }

  // The machine (segment) of `rank`'s host.
  const packet_layer::Machine& machine(torus_emu::Rank rank) const {
    const auto& c = hosts_.front().job->config;
    return hosts_[c.placement.node_host[c.mapping.location(rank).node]].job->machine;
  }
  const job_runtime::WaitPolicy& policy() const { return policy_; }
  int ntasks() const { return hosts_.front().job->ntasks(); }
  packet_layer::OfiStats stats(int host) const {
    return hosts_[static_cast<std::size_t>(host)].agent->stats();
  }

  void run(const std::function<void(torus_emu::Rank)>& task) const { run_threads(ntasks(), task); }

  // Ends every agent (each waits for the others' goodbyes); the first fault, if any.
  std::optional<std::string> finish() {
    if (finished_) return fault_;
    finished_ = true;
    std::vector<std::thread> threads;
    for (auto& host : hosts_)
      threads.emplace_back([&host] { host.agent->finish(0); });
    for (auto& t : threads)
      t.join();
    for (auto& host : hosts_)
      if (!fault_) fault_ = host.agent->fault();
    return fault_;
  }

 private:
  struct Host {
    std::unique_ptr<test_support::InProcessMachine> job;
    std::unique_ptr<packet_layer::OfiAgent> agent;  // goes first
  };
  std::vector<Host> hosts_;
  job_runtime::WaitPolicy policy_;
  bool finished_ = false;
  std::optional<std::string> fault_;
};

}  // namespace bgl::collective_net_emu::test
