#pragma once
// Waking a host's libfabric agent. An idle agent sleeps in poll(2) on its completion queue's
// descriptor (the network) and on an eventfd (its tasks) at once, so that a message from another
// host wakes it as promptly as a task's packet. Tasks ring the agent's doorbell as before (one read
// of its armed word on the hot path); only when the agent has armed it does the ring also write the
// eventfd, which bglrun passes to the tasks it forks (BGL_AGENT_FD). The futex wake stays, for an
// agent that sleeps on the doorbell alone (a provider without a wait descriptor).
#include "bgl/job_runtime/asymmetric_fence.hpp"
#include "bgl/job_runtime/doorbell.hpp"

namespace bgl::job_runtime {

// The eventfd of the agent that sleeps on `bell`, as seen by this process: the one an agent in
// this process registered for that bell, else BGL_AGENT_FD (checked once: ConfigError when
// malformed; a descriptor that is not an eventfd is ignored with a warning), else -1.
int agent_wake_fd(const Doorbell& bell);
// An agent in this process registers its eventfd for its doorbell, and takes it back.
void register_agent_wake(const Doorbell& bell, int fd);
void unregister_agent_wake(const Doorbell& bell);
// The slow half of ring_agent: the agent sleeps.
void wake_agent(Doorbell& bell);

// Producer side, after publishing a packet or store for the agent.
inline void ring_agent(Doorbell& bell) {
  light_fence();
  if (bell.take_armed()) [[unlikely]]
    wake_agent(bell);
}

}  // namespace bgl::job_runtime
