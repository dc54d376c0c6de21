#include "bgl/message_layer/session.hpp"

#include <algorithm>
#include <cstring>
#include <functional>
#include <vector>

#include "bgl/job_runtime/env.hpp"
#include "bgl/job_runtime/job_barrier.hpp"
#include "bgl/job_runtime/log.hpp"
#include "bgl/torus_emu/error.hpp"
#include "bgl/virtual_time/collective_timing.hpp"

namespace bgl::message_layer {

HostBootstrap::HostBootstrap(const HostCallbacks& callbacks) : cb_(callbacks) {
  if (!cb_.barrier || !cb_.broadcast || cb_.size <= 0)
    throw ConfigError("host bootstrap needs a size, a barrier and a broadcast");
}

void HostBootstrap::barrier() {
  if (cb_.barrier(cb_.context) != 0) throw ConfigError("host bootstrap barrier failed");
}

void HostBootstrap::broadcast(std::span<std::byte> bytes) {
  if (cb_.broadcast(cb_.context, bytes.data(), bytes.size()) != 0)
    throw ConfigError("host bootstrap broadcast failed");
}

// Through the runtime's exchange slots, whose one operation is an allgather (rank 0's entry is
// what a broadcast delivers; at start-up only, and in shared memory).
void LauncherBootstrap::broadcast(std::span<std::byte> bytes) {
  std::vector<std::byte> all(bytes.size() * static_cast<std::size_t>(size()));
  rt_.allgather(bytes, all);
  std::copy_n(all.begin(), bytes.size(), bytes.begin());
}

std::unique_ptr<Session> Session::from_launcher(const Config& config) {
  auto runtime = packet_layer::Runtime::from_environment();
  auto session = std::unique_ptr<Session>(new Session(std::move(runtime), nullptr, config));
  session->bootstrap_ = std::make_unique<LauncherBootstrap>(session->runtime_);
  session->launcher_ = true;
  session->check_agreement();
  return session;
}

std::unique_ptr<Session> Session::with_bootstrap(std::unique_ptr<Bootstrap> host,
                                                 const Config& config) {
  auto runtime = packet_layer::Runtime::from_environment(host->rank());
  if (runtime.size() != host->size())
    throw ConfigError("the process manager started " + std::to_string(host->size()) +
                      " processes but the emulated job has " + std::to_string(runtime.size()) +
                      " tasks (bglrun -np and the host's process count must agree)");
  auto session = std::unique_ptr<Session>(new Session(std::move(runtime), std::move(host), config));
  session->check_agreement();
  return session;
}

Session::Session(packet_layer::Runtime runtime, std::unique_ptr<Bootstrap> bootstrap,
                 const Config& config)
    : runtime_(std::move(runtime)), bootstrap_(std::move(bootstrap)) {
  layer_ = std::make_unique<MessageLayer>(runtime_.endpoint(), config);
}

// Every task must have attached the same job (on several hosts: segments of the same job): a host
// that mixed up environments would otherwise exchange packets with strangers. A task that differs
// from task 0 fails its start-up, and the process manager stops the job.
void Session::check_agreement() {
  const std::uint64_t mine =
      runtime_.machine().job().job_id() ^ static_cast<std::uint64_t>(runtime_.size());
  std::uint64_t first = mine;
  bootstrap_->broadcast(std::as_writable_bytes(std::span(&first, 1)));
  if (first != mine)
    throw ConfigError("task " + std::to_string(rank()) +
                      " attached a different emulated job than task 0");
}

void Session::barrier() {
  MessageLayer& ml = *layer_;
  ml.progress_until([&] { return ml.flushed(); });
  if (!launcher_) {
    // The process manager's barrier (MPI_Finalize's) has no virtual-time meaning; conservatively
    // synchronised, the task only says that it takes nothing before it has passed.
    runtime_.endpoint().park_outside(false);
    bootstrap_->barrier();
    return;
  }
  const packet_layer::Machine& machine = runtime_.machine();
  job_runtime::JobBarrier& job = machine.job().barrier();
  packet_layer::Endpoint& ep = runtime_.endpoint();
  bool last = false;
  // With virtual time, a global-interrupt barrier on the clocks too.
  const auto release = [&](std::uint64_t latest) {
    return virtual_time::barrier_release(*ep.vt_params(), latest);
  };
  ep.park_outside(true);
  const std::uint32_t generation =
      job.arrive(machine.job().barrier_participants(), last, ep.timed() ? ep.clock().now() : 0,
                 ep.synchronised() ? job_runtime::BeforeRelease([&](std::uint64_t latest) {
                   ep.release_all(release(latest));
                 })
                                   : job_runtime::BeforeRelease{});
  const auto leave = [&] {
    if (ep.timed()) ep.leave_at(release(job.latest_clock_of(generation)));
  };
  if (last) {
    // The others sleep on their own doorbells (where packets wake them): ring each of them.
    for (int r = 0; r < size(); ++r) {
      const auto where = mapping().location(static_cast<Rank>(r));
      machine.doorbell(where.node, where.t).ring();
    }
    return leave();
  }
  job_runtime::Doorbell& bell = machine.doorbell(ep.node(), ep.group());
  const job_runtime::wait_record::Reason reason(job_runtime::WaitKind::job_barrier, generation);
  job_runtime::Backoff backoff(runtime_.wait_policy());
  const auto ready = [&] { return job.passed(generation) || ep.poll_ready(); };
  // Packets still waiting in the injection FIFOs move only when this task calls the layer: sleep
  // briefly then (the doorbell rings for arrivals, not for room in a peer's FIFO).
  constexpr std::chrono::microseconds kPendingCap{200};
  while (!job.passed(generation)) {
    if (ml.advance()) {
      backoff.reset();
      continue;
    }
    if (ep.synchronised()) {  // blocked until a packet or the release, which rings every task
      ep.wait();
      continue;
    }
    backoff.idle(bell, ready, ep.injection_idle() ? std::chrono::microseconds::max() : kPendingCap);
  }
  leave();
}

void Session::finalize(std::chrono::milliseconds patience) {
  MessageLayer& ml = *layer_;
  auto last_progress = std::chrono::steady_clock::now();
  while (!ml.flushed()) {
    if (ml.advance()) {
      last_progress = std::chrono::steady_clock::now();
      continue;
    }
    if (std::chrono::steady_clock::now() - last_progress > patience) {
      spdlog::error(
          "rank {}: finalize gives up after {} ms without progress: packets still wait for room "
          "in a peer's reception FIFO (a task stopped receiving before everything reached it)",
          rank(), patience.count());
      return;
    }
    ml.wait();
  }
}

// The row of the job's communication matrix, when bglrun asked for one (--stats, --report).
void Session::publish_traffic() const {
  const auto row =
      job_runtime::traffic_row(runtime_.machine().job().region(job_runtime::kTrafficRegion), size(),
                               static_cast<int>(rank()));
  const auto mine = layer_->traffic();
  if (!row.empty() && mine.size() == row.size()) std::copy(mine.begin(), mine.end(), row.begin());
}

Session::~Session() {
  const std::string json = layer_->statistics().to_json();
  auto& report = runtime_.machine().job().task(rank()).report;
  if (json.size() < report.size())
    std::memcpy(report.data(), json.c_str(), json.size() + 1);
  else
    spdlog::warn("message-layer statistics too large for the job report ({} bytes)", json.size());
  publish_traffic();
  layer_.reset();
}

}  // namespace bgl::message_layer
