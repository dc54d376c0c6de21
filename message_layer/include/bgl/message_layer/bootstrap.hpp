#pragma once
// What initialisation needs from a process manager: rank, size, a barrier and a small broadcast.
// LauncherBootstrap serves programs started by bglrun; HostBootstrap wraps a host's own process
// manager (MPICH's PMI, for the CH4 device), given as C callbacks.
#include <cstddef>
#include <span>

#include "bgl/message_layer/messages.hpp"
#include "bgl/packet_layer/runtime.hpp"

namespace bgl::message_layer {

class Bootstrap {
 public:
  virtual ~Bootstrap() = default;
  virtual Rank rank() const = 0;
  virtual int size() const = 0;
  virtual void barrier() = 0;
  // Rank 0's `bytes` replace every rank's. A broadcast, not an allgather: a process manager's key
  // store answers it with one get per rank, where an allgather takes size() per rank (Hydra needed
  // minutes for 1,024 tasks).
  virtual void broadcast(std::span<std::byte> bytes) = 0;
};

class LauncherBootstrap final : public Bootstrap {
 public:
  explicit LauncherBootstrap(packet_layer::Runtime& runtime) : rt_(runtime) {}
  Rank rank() const override { return rt_.rank(); }
  int size() const override { return rt_.size(); }
  void barrier() override { rt_.barrier(); }
  void broadcast(std::span<std::byte> bytes) override;

 private:
  packet_layer::Runtime& rt_;
};

struct HostCallbacks {
  void* context = nullptr;
  Rank rank = 0;
  int size = 0;
  int (*barrier)(void* context) = nullptr;                                   // 0 on success
  int (*broadcast)(void* context, void* data, std::size_t bytes) = nullptr;  // 0 on success
};

class HostBootstrap final : public Bootstrap {
 public:
  // Throws ConfigError when a callback is missing.
  explicit HostBootstrap(const HostCallbacks& callbacks);
  Rank rank() const override { return cb_.rank; }
  int size() const override { return cb_.size; }
  void barrier() override;
  void broadcast(std::span<std::byte> bytes) override;

 private:
  HostCallbacks cb_;
};

}  // namespace bgl::message_layer
