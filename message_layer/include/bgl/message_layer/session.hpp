#pragma once
// Initialisation of the message layer for one task: attaches to the job's segment, checks that
// every task agrees on the job (same segment, same size), primes the rank mapping, reads the node
// mode, and creates the MessageLayer. At the end it publishes the task's statistics for bglrun's
// --stats report.
#include <chrono>
#include <memory>

#include "bgl/job_runtime/node_mode.hpp"
#include "bgl/message_layer/bootstrap.hpp"
#include "bgl/message_layer/message_layer.hpp"
#include "bgl/packet_layer/runtime.hpp"

namespace bgl::message_layer {

class Session {
 public:
  // A program started by bglrun. Throws ConfigError with instructions otherwise.
  static std::unique_ptr<Session> from_launcher(const Config& config = Config::from_environment());
  // A host process manager supplies rank, size, barrier and allgather; the segment still comes
  // from the environment that bglrun exported to the host's processes.
  static std::unique_ptr<Session> with_bootstrap(std::unique_ptr<Bootstrap> host,
                                                 const Config& config = Config::from_environment());
  ~Session();

  // A barrier of all tasks that keeps the message layer moving: the task first hands every
  // packet it owes to the network (its peers keep receiving, being in the barrier too or still
  // working), and advances while it waits, so that peers can flush into it. With a host
  // bootstrap the host's barrier cannot advance: the task flushes, then calls it.
  void barrier();
  // Flushes what the task still owes the network (advancing, so that the peers it sends to can
  // make room), then the session may be destroyed. Gives up with an error after `patience`
  // without any progress (a peer that stopped receiving).
  void finalize(std::chrono::milliseconds patience = std::chrono::seconds(10));

  Rank rank() const { return runtime_.rank(); }
  int size() const { return runtime_.size(); }
  job_runtime::NodeMode mode() const { return runtime_.machine().config().mode; }
  const torus_emu::Mapping& mapping() const { return runtime_.machine().mapping(); }
  packet_layer::Runtime& runtime() { return runtime_; }
  MessageLayer& layer() { return *layer_; }
  Bootstrap& bootstrap() { return *bootstrap_; }

 private:
  Session(packet_layer::Runtime runtime, std::unique_ptr<Bootstrap> bootstrap,
          const Config& config);
  void check_agreement();
  void publish_traffic() const;

  packet_layer::Runtime runtime_;
  std::unique_ptr<Bootstrap> bootstrap_;
  std::unique_ptr<MessageLayer> layer_;
  bool launcher_ = false;  // bootstrap_ is the launcher's: its barrier is split-phase
};

}  // namespace bgl::message_layer
