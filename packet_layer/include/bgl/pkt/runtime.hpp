#pragma once
// What a program started by bglrun links against: reads the launcher's environment (BGL_RANK,
// BGL_SIZE, BGL_SEGMENT, BGL_SEGMENT_FD), maps the job's segment and gives the task its endpoint.
#include <memory>

#include "bgl/pkt/endpoint.hpp"
#include "bgl/pkt/machine.hpp"
#include "bgl/pkt/segment.hpp"

namespace bgl::pkt {

class Runtime {
 public:
  // Throws ConfigError with instructions when the program was not started by bglrun.
  static Runtime from_environment();

  Runtime(Runtime&&) noexcept = default;
  Runtime& operator=(Runtime&&) noexcept = default;
  ~Runtime();

  torus::Rank rank() const { return rank_; }
  int size() const { return machine_->mapping().size(); }
  const Machine& machine() const { return *machine_; }
  const WaitPolicy& wait_policy() const { return *policy_; }
  Endpoint& endpoint() { return *endpoint_; }
  // All tasks of the job.
  void barrier();

 private:
  Runtime() = default;
  Segment segment_;
  std::unique_ptr<Machine> machine_;
  std::unique_ptr<WaitPolicy> policy_;
  std::unique_ptr<Endpoint> endpoint_;
  torus::Rank rank_ = 0;
};

}  // namespace bgl::pkt
