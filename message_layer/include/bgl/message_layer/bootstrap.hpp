#pragma once
// What initialisation needs from a process manager: rank, size, a barrier and a small allgather.
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
  // `all` receives size() * mine.size() bytes in rank order.
  virtual void allgather(std::span<const std::byte> mine, std::span<std::byte> all) = 0;
};

class LauncherBootstrap final : public Bootstrap {
 public:
  explicit LauncherBootstrap(packet_layer::Runtime& runtime) : rt_(runtime) {}
  Rank rank() const override { return rt_.rank(); }
  int size() const override { return rt_.size(); }
  void barrier() override { rt_.barrier(); }
  void allgather(std::span<const std::byte> mine, std::span<std::byte> all) override {
    rt_.allgather(mine, all);
  }

 private:
  packet_layer::Runtime& rt_;
};

struct HostCallbacks {
  void* context = nullptr;
  Rank rank = 0;
  int size = 0;
  int (*barrier)(void* context) = nullptr;  // 0 on success
  int (*allgather)(void* context, const void* mine, std::size_t bytes, void* all) = nullptr;
};

class HostBootstrap final : public Bootstrap {
 public:
  // Throws ConfigError when a callback is missing.
  explicit HostBootstrap(const HostCallbacks& callbacks);
  Rank rank() const override { return cb_.rank; }
  int size() const override { return cb_.size; }
  void barrier() override;
  void allgather(std::span<const std::byte> mine, std::span<std::byte> all) override;

 private:
  HostCallbacks cb_;
};

}  // namespace bgl::message_layer
