#include "bgl/packet_layer/runtime.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "bgl/job_runtime/agent_wake.hpp"
#include "bgl/job_runtime/env.hpp"
#include "bgl/job_runtime/log.hpp"
#include "bgl/torus_emu/error.hpp"
#include "bgl/virtual_time/collective_timing.hpp"

namespace bgl::packet_layer {

Runtime Runtime::from_environment(std::optional<torus_emu::Rank> host_rank) {
  job_runtime::log::init("bgl");
  const auto name = job_runtime::env::get("BGL_SEGMENT");
  if (!name) {
    throw ConfigError(
        "this program must be started by bglrun (BGL_SEGMENT is not set); for example: "
        "bglrun -np 8 --shape 2x2x2 <program>");
  }
  const int fd =
      static_cast<int>(job_runtime::env::get_int("BGL_SEGMENT_FD", 0, 1 << 20).value_or(-1));
  Runtime rt;
  rt.segment_ = job_runtime::Segment::attach(fd, *name);
  rt.machine_ = std::make_unique<Machine>(Machine::attach(rt.segment_.bytes()));
  const int size = rt.machine_->mapping().size();
  const auto rank = host_rank ? std::optional<long long>(*host_rank)
                              : job_runtime::env::get_int("BGL_RANK", 0, size - 1);
  if (!rank) throw ConfigError("BGL_RANK is not set; start this program with bglrun");
  if (*rank < 0 || *rank >= size)
    throw ConfigError("rank " + std::to_string(*rank) + " is outside the job's " +
                      std::to_string(size) + " tasks");
  if (auto declared = job_runtime::env::get_int("BGL_SIZE", 1, 1 << 24);
      declared && *declared != size)
    throw ConfigError("BGL_SIZE=" + std::to_string(*declared) + " does not match the job's " +
                      std::to_string(size) + " tasks");
  rt.rank_ = static_cast<torus_emu::Rank>(*rank);
  if (!rt.machine_->local(rt.rank_))
    throw ConfigError(
        "rank " + std::to_string(*rank) + " lives on host " +
        std::to_string(
            rt.machine_->placement().node_host[rt.machine_->mapping().location(rt.rank_).node]) +
        ", but this segment belongs to host " + std::to_string(rt.machine_->placement().this_host));
  // How a task waits depends on how many threads share this host's cores (its tasks, and with
  // the libfabric transport its agent; every emulated host's on one machine), not on the job's
  // size.
  rt.policy_ = std::make_unique<job_runtime::WaitPolicy>(job_runtime::WaitPolicy::for_job(
      rt.machine_->job().busy_threads(), rt.machine_->job().vt_params() != nullptr));
  // A malformed BGL_AGENT_FD is an error now, not at the first ring of a sleeping agent.
  if (rt.machine_->placement().transport == job_runtime::Transport::ofi)
    job_runtime::agent_wake_fd(rt.machine_->job().agent_bell());
  const int group = rt.machine_->mapping().location(rt.rank_).t;
  rt.endpoint_ = std::make_unique<Endpoint>(*rt.machine_, rt.rank_, group, *rt.policy_);
  const auto* params = rt.machine_->job().vt_params();
  rt.trace_ = job_runtime::Trace::from_environment(rt.rank_, rt.endpoint_->clock(),
                                                   params ? params->cpu_hz : 0);
  rt.endpoint_->set_trace(rt.trace_.get());
  job_runtime::wait_record::attach(&rt.machine_->job().task(rt.rank_).wait,
                                   rt.segment_.bytes().data());
  rt.call_sites_ =
      job_runtime::CallSites::from_environment(rt.rank_, params ? &rt.endpoint_->clock() : nullptr);
  rt.endpoint_->set_call_sites(rt.call_sites_.get());
  return rt;
}

Runtime::~Runtime() {
  if (endpoint_) job_runtime::wait_record::attach(nullptr, nullptr);
  if (endpoint_) endpoint_->publish_statistics();
  if (trace_ && !trace_->write())
    spdlog::warn("rank {}: cannot write the trace's events: {}", rank_, std::strerror(errno));
  if (call_sites_ && !call_sites_->write())
    spdlog::warn("rank {}: cannot write its collective call sites: {}", rank_,
                 std::strerror(errno));
}

void Runtime::allgather(std::span<const std::byte> mine, std::span<std::byte> all) {
  if (mine.size() > job_runtime::kExchangeBytes ||
      all.size() != mine.size() * static_cast<std::size_t>(size()))
    throw std::invalid_argument(
        "allgather: at most 256 bytes each, and size() times that in total");
  std::copy(mine.begin(), mine.end(), machine_->job().task(rank_).exchange.begin());
  exchange_barrier();
  for (int r = 0; r < size(); ++r) {
    const auto& slot = machine_->job().task(static_cast<torus_emu::Rank>(r)).exchange;
    std::copy_n(slot.begin(), mine.size(),
                all.begin() + static_cast<std::ptrdiff_t>(r * mine.size()));
  }
  exchange_barrier();  // nobody overwrites its slot before everybody has read it
}

void Runtime::exchange_barrier() {
  auto& job = machine_->job();
  job.barrier().arrive_and_wait(job.barrier_participants(), *policy_, 0,
                                job.placement().host_count() > 1 ? &job.agent_bell() : nullptr);
}

void Runtime::barrier() {
  if (!endpoint_ || !endpoint_->timed()) return exchange_barrier();
  // A global-interrupt barrier in virtual time: everybody leaves when the last has arrived, plus
  // the interrupt network's latency.
  Endpoint& ep = *endpoint_;
  auto& job = machine_->job().barrier();
  const auto release = [&](std::uint64_t latest) {
    return virtual_time::barrier_release(*ep.vt_params(), latest);
  };
  ep.park_outside(false);
  const auto generation = job.arrive_and_wait(
      machine_->job().barrier_participants(), *policy_, ep.clock().now(), nullptr,
      ep.synchronised() ? job_runtime::BeforeRelease(
                              [&](std::uint64_t latest) { ep.release_all(release(latest)); })
                        : job_runtime::BeforeRelease{});
  ep.leave_at(release(job.latest_clock_of(generation)));
}

}  // namespace bgl::packet_layer
