#pragma once
// Initialisation of the message layer for one task: attaches to the job's segment, checks that
// every task agrees on the job (same segment, same size), primes the rank mapping, reads the node
// mode, and creates the MessageLayer. At the end it publishes the task's statistics for bglrun's
// --stats report.
#include <memory>

#include "bgl/msg/bootstrap.hpp"
#include "bgl/msg/message_layer.hpp"
#include "bgl/pkt/node_mode.hpp"
#include "bgl/pkt/runtime.hpp"

namespace bgl::msg {

class Session {
 public:
  // A program started by bglrun. Throws ConfigError with instructions otherwise.
  static std::unique_ptr<Session> from_launcher(const Config& config = Config::from_environment());
  // A host process manager supplies rank, size, barrier and allgather; the segment still comes
  // from the environment that bglrun exported to the host's processes.
  static std::unique_ptr<Session> with_bootstrap(std::unique_ptr<Bootstrap> host,
                                                 const Config& config = Config::from_environment());
  ~Session();

  Rank rank() const { return runtime_.rank(); }
  int size() const { return runtime_.size(); }
  pkt::NodeMode mode() const { return runtime_.machine().config().mode; }
  const torus::Mapping& mapping() const { return runtime_.machine().mapping(); }
  pkt::Runtime& runtime() { return runtime_; }
  MessageLayer& layer() { return *layer_; }
  Bootstrap& bootstrap() { return *bootstrap_; }

 private:
  Session(pkt::Runtime runtime, std::unique_ptr<Bootstrap> bootstrap, const Config& config);
  void check_agreement();

  pkt::Runtime runtime_;
  std::unique_ptr<Bootstrap> bootstrap_;
  std::unique_ptr<MessageLayer> layer_;
};

}  // namespace bgl::msg
