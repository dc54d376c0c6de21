#pragma once
// What a program started by bglrun links against: reads the launcher's environment (BGL_RANK,
// BGL_SIZE, BGL_SEGMENT, BGL_SEGMENT_FD), maps the job's segment and gives the task its endpoint.
#include <memory>
#include <optional>
#include <span>

#include "bgl/job_runtime/segment.hpp"
#include "bgl/packet_layer/endpoint.hpp"
#include "bgl/packet_layer/machine.hpp"

namespace bgl::packet_layer {

class Runtime {
 public:
  // Throws ConfigError with instructions when the program was not started by bglrun. A host with
  // its own process manager (e.g. MPICH's PMI) supplies the rank; otherwise BGL_RANK gives it.
  static Runtime from_environment(std::optional<torus_emu::Rank> rank = std::nullopt);

  Runtime(Runtime&&) noexcept = default;
  Runtime& operator=(Runtime&&) noexcept = default;
  ~Runtime();

  torus_emu::Rank rank() const { return rank_; }
  int size() const { return machine_->mapping().size(); }
  const Machine& machine() const { return *machine_; }
  const job_runtime::WaitPolicy& wait_policy() const { return *policy_; }
  Endpoint& endpoint() { return *endpoint_; }
  // All tasks of the job. With virtual time, a global-interrupt barrier on the clocks too:
  // everybody leaves at the last arrival plus the interrupt network's latency.
  void barrier();
  // Every task contributes `mine` (at most kExchangeBytes); `all` receives size() * mine.size()
  // bytes in rank order. Collective: every task must call it with the same size.
  void allgather(std::span<const std::byte> mine, std::span<std::byte> all);

 private:
  Runtime() = default;
  void exchange_barrier();  // start-up: no virtual time
  job_runtime::Segment segment_;
  std::unique_ptr<Machine> machine_;
  std::unique_ptr<job_runtime::WaitPolicy> policy_;
  std::unique_ptr<Endpoint> endpoint_;
  std::unique_ptr<job_runtime::Trace> trace_;           // bglrun --trace
  std::unique_ptr<job_runtime::CallSites> call_sites_;  // bglrun --stats, --report, --trace
  torus_emu::Rank rank_ = 0;
};

}  // namespace bgl::packet_layer
