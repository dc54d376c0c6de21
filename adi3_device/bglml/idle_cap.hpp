#pragma once
// Inside libbglml: a bound on the device's idle sleep that the message layer's owner can set.
//
// The device sleeps on its doorbell when a progress loop finds nothing to do (bgl_nm_idle_wait).
// Arriving packets ring that doorbell, but room appearing in a full reception FIFO does not: a task
// whose own packets wait for such room would sleep its whole timeout (up to BGL_NM_SLEEP_US) before
// it injects them, and its peer, waiting for those packets, sleeps too. The netmod caps its sleep
// while MPICH's sends are in flight; the collectives library's sends are not MPICH's, so the hooks
// register a probe of the task's endpoint here, and a task with packets waiting to be injected
// sleeps at most kPendingSleepCap, as in the packet layer's own wait.
#include <chrono>

namespace bgl::adi3_device {

inline constexpr std::chrono::microseconds kPendingSleepCap{200};

// `pending(context)`: whether this task has packets waiting to be injected. nullptr: no probe.
using PendingProbe = bool (*)(void* context);
void set_pending_probe(PendingProbe probe, void* context);

// While a tree or global-interrupt wait runs the device's progress as its meanwhile round, that
// wait does the idling: it sleeps on the wire's doorbell and the task's reception doorbell at once.
// The device's own idle sleep (on the reception doorbell alone, up to BGL_NM_SLEEP_US) would miss
// the wire, and a wait that runs the round on every spin drives the netmod's idle phases into it
// quickly. In scope, bgl_nm_idle_wait returns at once, reporting the skipped sleep as one that a
// packet ended, so that the netmod's sleep does not grow while no sleep happens.
class IdleSleepSuppressed {
 public:
  IdleSleepSuppressed();
  ~IdleSleepSuppressed();
  IdleSleepSuppressed(const IdleSleepSuppressed&) = delete;
  IdleSleepSuppressed& operator=(const IdleSleepSuppressed&) = delete;
};

}  // namespace bgl::adi3_device
