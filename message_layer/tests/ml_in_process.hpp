#pragma once
// An emulated job inside one test process and one thread: the segment is an anonymous MAP_SHARED
// mapping formatted like bglrun does, every task gets its packet-layer endpoint and (optionally) a
// MessageLayer, and the test pumps the layers in turn. Deterministic and fast: no processes, no
// scheduling, and a stall (nothing moves any more) is reported instead of hanging.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "bgl/job_runtime/log.hpp"
#include "bgl/message_layer/message_layer.hpp"
#include "bgl/packet_layer/endpoint.hpp"
#include "bgl/packet_layer/machine.hpp"
#include "bgl/test_support/environment.hpp"
#include "bgl/test_support/in_process_machine.hpp"

namespace bgl::message_layer::test {

// ML_TEST_NODE_MODE (coprocessor or vn), set by ctest for the second and third run of this suite,
// replaces the default mode: every test that does not ask for a mode runs in all three. In
// virtual-node mode the tasks keep their nodes (t = 0): what changes is the mode's machinery
// (half a node's FIFO groups, the virtual FIFO set up, the coprocessor thread and its receive
// path in coprocessor mode), not the placement.
inline std::string default_node_mode() {
  const char* v = std::getenv("ML_TEST_NODE_MODE");
  return v && *v ? v : "heater";
}

struct JobSpec {
  int ntasks = 2;
  std::string shape = "2x1x1";
  std::string mode = default_node_mode();
  std::string mesh;                         // dimensions without wrap links, e.g. "x"
  std::optional<std::string> mapping_text;  // "x y z [t]" per rank, as in a bglrun mapfile
  int fifo_packets = 64;
  std::uint64_t seed = 1;
};

class InProcessJob {
 public:
  // Every rank gets a MessageLayer with `config` unless `layered` lists the ones that do (the
  // others keep a bare endpoint, e.g. to forge packets).
  explicit InProcessJob(const JobSpec& spec, const Config& config = Config{},
                        std::optional<std::vector<Rank>> layered = std::nullopt)
      : job_(make_config(spec)) {
    for (int r = 0; r < size(); ++r)
      job_.ep(static_cast<Rank>(r));  // every task's endpoint, in rank order
    layers_.resize(static_cast<std::size_t>(size()));
    for (int r = 0; r < size(); ++r) {
      const auto rank = static_cast<Rank>(r);
      const bool wanted =
          !layered || std::find(layered->begin(), layered->end(), rank) != layered->end();
      if (wanted) layers_[rank] = std::make_unique<MessageLayer>(job_.ep(rank), config);
    }
  }
  InProcessJob(const InProcessJob&) = delete;
  InProcessJob& operator=(const InProcessJob&) = delete;

  int size() const { return job_.ntasks(); }
  const packet_layer::Machine& machine() const { return job_.machine; }
  MessageLayer& ml(Rank r) { return *layers_.at(r); }
  bool has_layer(Rank r) const { return layers_.at(r) != nullptr; }
  packet_layer::Endpoint& ep(Rank r) { return job_.ep(r); }

  // One advance() of every layer; true if any of them did something.
  bool advance_all() {
    bool any = false;
    for (auto& l : layers_)
      if (l) any |= l->advance();
    return any;
  }

  // Advances every layer until pred() holds. Returns false when nothing moved for a while (a
  // stall: the test reports it instead of hanging). Time counts, not rounds: in coprocessor mode
  // a second thread per task moves rendezvous data that advance() does not see.
  template <class Pred>
  bool run_until(Pred&& pred, double stall_seconds = 3.0) {
    using Clock = std::chrono::steady_clock;
    auto last = Clock::now();
    for (int rounds = 0; !pred(); ++rounds) {
      if (advance_all()) {
        last = Clock::now();
      } else if ((rounds & 255) == 0 &&
                 Clock::now() - last > std::chrono::duration<double>(stall_seconds)) {
        return pred();
      }
    }
    return true;
  }
  // Advances every layer until nothing has moved for `quiet_seconds`.
  void settle(double quiet_seconds = 0.05) {
    run_until([] { return false; }, quiet_seconds);
  }

 private:
  static job_runtime::JobConfig make_config(const JobSpec& s) {
    job_runtime::JobOptions o;
    o.ntasks = s.ntasks;
    o.shape = s.shape;
    o.mode = s.mode;
    if (!s.mesh.empty()) o.mesh = s.mesh;
    o.fifo_packets = s.fifo_packets;
    o.seed = s.seed;
    auto c = job_runtime::JobConfig::resolve(o);
    if (s.mapping_text) {
      std::string text = *s.mapping_text;
      // A one-task-per-node mapping run in virtual-node mode by ML_TEST_NODE_MODE: t = 0.
      if (c.mode == job_runtime::NodeMode::virtual_node) text = with_t0(text);
      c.mapping = torus_emu::Mapping::from_text(c.shape, job_runtime::tasks_per_node(c.mode), text,
                                                "test mapping", s.ntasks);
      c.mapping_source = "test mapping";
    }
    return c;
  }

  // "x y z" lines (a one-task-per-node mapping) as "x y z 0".
  static std::string with_t0(const std::string& text) {
    std::string out;
    std::size_t start = 0;
    while (start < text.size()) {
      const std::size_t end = std::min(text.find('\n', start), text.size());
      const std::string line = text.substr(start, end - start);
      const auto words = std::count_if(line.begin(), line.end(), [](char ch) { return ch == ' '; });
      out += line + (words == 2 ? " 0" : "") + "\n";
      start = end + 1;
    }
    return out;
  }

  test_support::InProcessMachine job_;
  std::vector<std::unique_ptr<MessageLayer>> layers_;  // destroyed before the job's endpoints
};

using test_support::QuietLog;
using test_support::ScopedEnv;

}  // namespace bgl::message_layer::test
