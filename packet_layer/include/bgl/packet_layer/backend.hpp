#pragma once
// Where an Endpoint hands a packet for a node's reception FIFO. Two backends:
//   ShmBackend  the node is on this host: copy into its reception FIFO in the segment and ring its
//               doorbell (the hot path: no indirection beyond the FIFO itself);
//   OfiBackend  the node is on another host (or BGL_TRANSPORT=ofi): copy into this task's outbound
//               ring; the host's libfabric agent (bgl/packet_layer/ofi_agent.hpp, in bglrun) sends
//               it and the destination host's agent deposits it, with credits for backpressure.
// Endpoint decides per destination node from the placement with a flag in its per-node table and
// calls the final classes directly, so the choice costs one predictable branch.
#include <cstdint>
#include <span>

#include "bgl/job_runtime/agent_wake.hpp"
#include "bgl/job_runtime/placement.hpp"
#include "bgl/packet_layer/header.hpp"
#include "bgl/packet_layer/machine.hpp"
#include "bgl/packet_layer/outbound_ring.hpp"
#include "bgl/torus_emu/route.hpp"

namespace bgl::packet_layer {

struct Target {
  torus_emu::NodeId node = 0;
  std::uint8_t group = 0;
  std::uint8_t fifo = 0;  // reception FIFO index 0..7
};

class Backend {
 public:
  virtual ~Backend() = default;
  // Copies the packet towards `to`; false (nothing copied) when there is no room now.
  virtual bool try_deliver(Target to, const PacketHeader& h, std::span<const std::byte> payload,
                           std::span<const std::byte> more) = 0;
  virtual job_runtime::Transport transport() const = 0;
};

class ShmBackend final : public Backend {
 public:
  explicit ShmBackend(const Machine& machine) : machine_(&machine) {}
  bool try_deliver(Target to, const PacketHeader& h, std::span<const std::byte> payload,
                   std::span<const std::byte> more) override {
    if (!machine_->fifo(to.node, to.group, to.fifo).try_push(h, payload, more)) return false;
    machine_->doorbell(to.node, to.group).ring();
    return true;
  }
  job_runtime::Transport transport() const override { return job_runtime::Transport::shm; }
  // try_deliver() to a node whose slot the caller resolved when it set the node up.
  bool try_deliver(job_runtime::NodeSlot slot, Target to, const PacketHeader& h,
                   std::span<const std::byte> payload, std::span<const std::byte> more) {
    if (!machine_->fifo_in_slot(slot, to.group, to.fifo).try_push(h, payload, more)) return false;
    machine_->doorbell_in_slot(slot, to.group).ring();
    return true;
  }
  // try_deliver() of a packet with its virtual-time stamp.
  bool try_deliver_at(job_runtime::NodeSlot slot, Target to, virtual_time::Stamp stamp,
                      const PacketHeader& h, std::span<const std::byte> payload,
                      std::span<const std::byte> more) {
    if (!machine_->fifo_in_slot(slot, to.group, to.fifo).try_push_at(stamp, h, payload, more))
      return false;
    machine_->doorbell_in_slot(slot, to.group).ring();
    return true;
  }

 private:
  const Machine* machine_;
};

class OfiBackend final : public Backend {
 public:
  OfiBackend(OutboundRing& ring, job_runtime::Doorbell& agent) : ring_(&ring), agent_(&agent) {}
  bool try_deliver(Target to, const PacketHeader& h, std::span<const std::byte> payload,
                   std::span<const std::byte> more) override {
    if (!ring_->try_push(to.node, to.group, to.fifo, h, payload, more)) return false;
    job_runtime::ring_agent(*agent_);
    return true;
  }
  job_runtime::Transport transport() const override { return job_runtime::Transport::ofi; }
  // try_deliver() of a packet with its virtual-time stamp (as the sender left it: see
  // OutboundPacket::stamp).
  bool try_deliver_at(Target to, virtual_time::Stamp stamp, const PacketHeader& h,
                      std::span<const std::byte> payload, std::span<const std::byte> more) {
    if (!ring_->try_push_at(stamp, to.node, to.group, to.fifo, h, payload, more)) return false;
    agent_->ring();
    return true;
  }

 private:
  OutboundRing* ring_;
  job_runtime::Doorbell* agent_;
};

// Virtual time on several hosts: a directed link's calendar is kept by the host of the node the
// link leaves. A deterministically routed packet for another host is timed by its sender over the
// leading links of its route that leave the sender's host, and by the receiving host's agent over
// the rest (docs/VIRTUAL_TIME.md, "Several hosts"). Both sides count those links with this.
inline int links_timed_by_sender(const torus_emu::Shape& shape,
                                 const job_runtime::Placement& placement,
                                 const torus_emu::Route& route) {
  if (placement.node_host.empty()) return route.hops();
  const auto host = placement.node_host[route.source()];
  int hops = 0;
  bool ours = true;
  route.for_each_link(shape, [&](torus_emu::Link l) {
    ours = ours && placement.node_host[l.node] == host;
    if (ours) ++hops;
  });
  return hops;
}

}  // namespace bgl::packet_layer
