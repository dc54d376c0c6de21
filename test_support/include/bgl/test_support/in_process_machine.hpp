#pragma once
// One emulated job inside the test process: its configuration, the segment in an anonymous shared
// mapping formatted as bglrun formats it, and the tasks' packet-layer endpoints, made on demand.
// The layers' own in-process harnesses (message layer, collective network) build on it.
#include <map>
#include <memory>

#include "bgl/pkt/endpoint.hpp"
#include "bgl/pkt/machine.hpp"
#include "bgl/test_support/shared_memory.hpp"

namespace bgl::test_support {

struct InProcessMachine {
  explicit InProcessMachine(pkt::JobConfig c, pkt::WaitPolicy p = pkt::WaitPolicy{})
      : config(std::move(c)),
        memory(pkt::Machine::segment_bytes(config)),
        machine(pkt::Machine::format(memory.span(), config)),
        policy(p) {}
  explicit InProcessMachine(const pkt::JobOptions& o, pkt::WaitPolicy p = pkt::WaitPolicy{})
      : InProcessMachine(pkt::JobConfig::resolve(o), p) {}
  InProcessMachine(const InProcessMachine&) = delete;
  InProcessMachine& operator=(const InProcessMachine&) = delete;

  // The task's endpoint (its FIFO group is its t), made at the first call.
  pkt::Endpoint& ep(torus::Rank rank) {
    auto& slot = endpoints_[rank];
    if (!slot)
      slot = std::make_unique<pkt::Endpoint>(machine, rank, machine.mapping().location(rank).t,
                                             policy);
    return *slot;
  }
  torus::NodeId node(torus::Coord c) const { return machine.shape().node_id(c); }
  int ntasks() const { return config.ntasks(); }

  pkt::JobConfig config;
  SharedMemory memory;
  pkt::Machine machine;
  pkt::WaitPolicy policy;

 private:
  std::map<torus::Rank, std::unique_ptr<pkt::Endpoint>> endpoints_;  // before the machine goes
};

// Options of a job of `ntasks` tasks on `shape` in `mode`, FIFOs of `fifo_packets` packets.
inline pkt::JobOptions job_options(int ntasks, const char* shape, const char* mode = "heater",
                                   int fifo_packets = 64) {
  pkt::JobOptions o;
  o.ntasks = ntasks;
  o.shape = shape;
  o.mode = mode;
  o.fifo_packets = fifo_packets;
  return o;
}

}  // namespace bgl::test_support
