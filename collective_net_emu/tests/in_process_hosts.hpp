#pragma once
// A job split over several emulated hosts inside the test process: one segment per host (anonymous
// MAP_SHARED mappings formatted as each host's bglrun does, with the collective network's region),
// one libfabric agent per host on 127.0.0.1, and threads playing the tasks, each attached to its
// own host's segment. What crosses hosts goes through the agents exactly as between processes.
#include <sys/mman.h>

#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bgl/collnet/region.hpp"
#include "bgl/pkt/machine.hpp"
#include "bgl/pkt/ofi_agent.hpp"
#include "in_process_job.hpp"

namespace bgl::collnet::test {

class InProcessHosts {
 public:
  InProcessHosts(int ntasks, const std::string& shape, int hosts, const Options& options = {},
                 pkt::OfiOptions ofi = {})
      : policy_(pkt::WaitPolicy::for_job(ntasks)) {
    std::vector<std::vector<std::byte>> addresses;
    for (int h = 0; h < hosts; ++h) {
      pkt::JobOptions o;
      o.ntasks = ntasks;
      o.shape = shape;
      o.hosts = hosts;
      o.host_index = h;
      hosts_.push_back(Host{pkt::JobConfig::resolve(o)});
      Host& host = hosts_.back();
      host.config.regions.push_back({std::string(kRegionName), region_bytes(host.config, options)});
      host.bytes = pkt::Machine::segment_bytes(host.config);
      void* p =
          ::mmap(nullptr, host.bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) throw std::runtime_error("mmap failed");
      host.base = static_cast<std::byte*>(p);
      host.machine = std::make_unique<pkt::Machine>(
          pkt::Machine::format({host.base, host.bytes}, host.config));
      format(*host.machine, options);
      ofi.timeout = std::chrono::milliseconds(60'000);
      host.agent = std::make_unique<pkt::OfiAgent>(*host.machine, host.config.placement, ofi);
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
      host.machine.reset();
      ::munmap(host.base, host.bytes);
    }
  }

  // The machine (segment) of `rank`'s host.
  const pkt::Machine& machine(torus::Rank rank) const {
    const auto& c = hosts_.front().config;
    return *hosts_[c.placement.node_host[c.mapping.location(rank).node]].machine;
  }
  const pkt::WaitPolicy& policy() const { return policy_; }
  int ntasks() const { return hosts_.front().config.ntasks(); }
  pkt::OfiStats stats(int host) const {
    return hosts_[static_cast<std::size_t>(host)].agent->stats();
  }

  void run(const std::function<void(torus::Rank)>& task) const { run_threads(ntasks(), task); }

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
    pkt::JobConfig config;
    std::size_t bytes = 0;
    std::byte* base = nullptr;
    std::unique_ptr<pkt::Machine> machine;
    std::unique_ptr<pkt::OfiAgent> agent;
  };
  std::vector<Host> hosts_;
  pkt::WaitPolicy policy_;
  bool finished_ = false;
  std::optional<std::string> fault_;
};

}  // namespace bgl::collnet::test
