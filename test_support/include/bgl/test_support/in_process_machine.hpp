#pragma once
// One emulated job inside the test process: its configuration, the segment in an anonymous shared
// mapping formatted as bglrun formats it, and the tasks' packet-layer endpoints, made on demand.
// The layers' own in-process harnesses (message layer, collective network) build on it.
#include <map>
#include <memory>

#include "bgl/packet_layer/endpoint.hpp"
#include "bgl/packet_layer/machine.hpp"
#include "bgl/test_support/shared_memory.hpp"

namespace bgl::test_support {

struct InProcessMachine {
  explicit InProcessMachine(job_runtime::JobConfig c,
                            job_runtime::WaitPolicy p = job_runtime::WaitPolicy{})
      : config(std::move(c)),
        memory(packet_layer::Machine::segment_bytes(config)),
        machine(packet_layer::Machine::format(memory.span(), config)),
        policy(p) {}
  explicit InProcessMachine(const job_runtime::JobOptions& o,
                            job_runtime::WaitPolicy p = job_runtime::WaitPolicy{})
      : InProcessMachine(job_runtime::JobConfig::resolve(o), p) {}
  InProcessMachine(const InProcessMachine&) = delete;
  InProcessMachine& operator=(const InProcessMachine&) = delete;

  // The task's endpoint (its FIFO group is its t), made at the first call.
  packet_layer::Endpoint& ep(torus_emu::Rank rank) {
    auto& slot = endpoints_[rank];
    if (!slot)
      slot = std::make_unique<packet_layer::Endpoint>(machine, rank,
                                                      machine.mapping().location(rank).t, policy);
    return *slot;
  }
  torus_emu::NodeId node(torus_emu::Coord c) const { return machine.shape().node_id(c); }
  int ntasks() const { return config.ntasks(); }

  job_runtime::JobConfig config;
  SharedMemory memory;
  packet_layer::Machine machine;
  job_runtime::WaitPolicy policy;

 private:
  std::map<torus_emu::Rank, std::unique_ptr<packet_layer::Endpoint>>
      endpoints_;  // before the machine goes
};

// Options of a job of `ntasks` tasks on `shape` in `mode`, FIFOs of `fifo_packets` packets.
inline job_runtime::JobOptions job_options(int ntasks, const char* shape,
                                           const char* mode = "heater", int fifo_packets = 64) {
  job_runtime::JobOptions o;
  o.ntasks = ntasks;
  o.shape = shape;
  o.mode = mode;
  o.fifo_packets = fifo_packets;
  return o;
}

}  // namespace bgl::test_support
