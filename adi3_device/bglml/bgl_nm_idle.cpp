// The device's idle wait and processor name over the packet layer's public view of the job's
// segment (see bgl_nm_idle.h).
#include "bgl_nm_idle.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <exception>
#include <memory>
#include <string>

#include "bgl/job_runtime/env.hpp"
#include "bgl/message_layer/bgl_msg.h"
#include "bgl/packet_layer/machine.hpp"
#include "bgl/job_runtime/segment.hpp"
#include "bgl/torus_emu/error.hpp"
#include "idle_cap.hpp"
#include "idle_machine.hpp"

struct bgl_nm_idle {
  bgl::job_runtime::Segment segment;
  std::unique_ptr<bgl::packet_layer::Machine> machine;
  std::uint32_t rank = 0;
  bgl::job_runtime::Doorbell* bell = nullptr;
  // Views of the task's reception FIFOs; their consumer position is re-read from the shared head
  // that the task's endpoint publishes after every pop.
  mutable std::array<bgl::packet_layer::ReceptionFifo, bgl::packet_layer::kReceptionFifos> fifos;
};

namespace {

thread_local std::string g_error;

// Set once by the collective hooks at init and cleared at finalize, on the MPI thread that also
// sleeps here.
bgl::adi3_device::PendingProbe g_pending_probe = nullptr;
void* g_pending_context = nullptr;
thread_local int g_idle_sleep_suppressed = 0;

bool packet_waiting(const bgl_nm_idle& idle) {
  for (auto& f : idle.fifos) {
    f.attach_consumer();
    if (f.front() != nullptr) return true;
  }
  return false;
}

}  // namespace

const bgl::packet_layer::Machine& bgl::adi3_device::machine_of(const bgl_nm_idle_t& idle) {
  return *idle.machine;
}

void bgl::adi3_device::set_pending_probe(PendingProbe probe, void* context) {
  g_pending_probe = probe;
  g_pending_context = context;
}

bgl::adi3_device::IdleSleepSuppressed::IdleSleepSuppressed() {
  ++g_idle_sleep_suppressed;
}
bgl::adi3_device::IdleSleepSuppressed::~IdleSleepSuppressed() {
  --g_idle_sleep_suppressed;
}

extern "C" {

const char* bgl_nm_idle_error(void) {
  return g_error.c_str();
}

int bgl_nm_idle_open(uint32_t rank, bgl_nm_idle_t** out) {
  try {
    const auto name = bgl::job_runtime::env::get("BGL_SEGMENT");
    if (!name) throw bgl::ConfigError("BGL_SEGMENT is not set: start MPI programs with bglrun");
    auto idle = std::make_unique<bgl_nm_idle>();
    idle->segment = bgl::job_runtime::Segment::attach(-1, *name);
    idle->machine = std::make_unique<bgl::packet_layer::Machine>(
        bgl::packet_layer::Machine::attach(idle->segment.bytes()));
    const auto& mapping = idle->machine->mapping();
    if (rank >= static_cast<std::uint32_t>(mapping.size()))
      throw bgl::ConfigError("rank " + std::to_string(rank) + " outside the job's " +
                             std::to_string(mapping.size()) + " tasks");
    const auto loc = mapping.location(rank);
    idle->rank = rank;
    idle->bell = &idle->machine->doorbell(loc.node, loc.t);
    for (int i = 0; i < bgl::packet_layer::kReceptionFifos; ++i)
      idle->fifos[static_cast<std::size_t>(i)] = idle->machine->fifo(loc.node, loc.t, i);
    // The launcher names a task that dies by its pid (the packet layer writes the same value again
    // when the task publishes its statistics at the end).
    idle->machine->job().task(rank).pid = static_cast<std::int32_t>(getpid());
    *out = idle.release();
    return BGL_MSG_OK;
  } catch (const bgl::ConfigError& e) {
    g_error = e.what();
    return BGL_MSG_ERR_CONFIG;
  } catch (const std::exception& e) {
    g_error = e.what();
    return BGL_MSG_ERR_INTERNAL;
  }
}

void bgl_nm_idle_close(bgl_nm_idle_t* idle) {
  delete idle;
}

int bgl_nm_idle_ready(const bgl_nm_idle_t* idle) {
  return packet_waiting(*idle) ? 1 : 0;
}

int bgl_nm_idle_wait(bgl_nm_idle_t* idle, uint32_t timeout_us) {
  // A sleep skipped here must not lengthen the netmod's next one: answering 0 would double it each
  // time, and the first real sleep after the wait would last the whole BGL_NM_SLEEP_US.
  if (g_idle_sleep_suppressed > 0) return 1;
  const auto ready = [idle] { return packet_waiting(*idle); };
  auto timeout = std::chrono::microseconds(timeout_us);
  if (g_pending_probe && g_pending_probe(g_pending_context))
    timeout = std::min(timeout, bgl::adi3_device::kPendingSleepCap);
  bgl::job_runtime::wait_record::asleep(idle->bell);
  idle->bell->sleep_unless(ready, timeout);
  if (!ready()) return 0;
  bgl::job_runtime::wait_record::awake();  // a packet came: the rank makes progress
  return 1;
}

int bgl_nm_processor_name(const bgl_nm_idle_t* idle, char* name, size_t bytes) {
  const auto& m = *idle->machine;
  const auto c = m.mapping().coord(idle->rank);
  const auto& s = m.shape();
  const int n = std::snprintf(name, bytes, "BGL <%d,%d,%d,%d> in %dx%dx%d %s mode", c.x, c.y, c.z,
                              m.mapping().location(idle->rank).t, s.extent(bgl::torus_emu::Dim::x),
                              s.extent(bgl::torus_emu::Dim::y), s.extent(bgl::torus_emu::Dim::z),
                              std::string(bgl::job_runtime::to_string(m.config().mode)).c_str());
  return n < 0 || static_cast<std::size_t>(n) >= bytes ? BGL_MSG_ERR_ARG : BGL_MSG_OK;
}

int bgl_nm_online_cores(void) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return CPU_COUNT(&set);
  const long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

}  // extern "C"
