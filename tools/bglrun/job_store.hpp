#pragma once
// The job-wide key-value store behind bglrun's PMI server (pmi_server.hpp): what a host's MPI
// ranks put and cannot find among their own host's puts, and the barrier every host's ranks pass.
// On several hosts it is the process manager's (Hydra, through bglrun's own PMI connection:
// PmiClient); on one host the host's ranks are the whole job and the store is empty (HostStore).
#include <optional>
#include <string>

namespace bgl::bglrun {

class JobStore {
 public:
  // The process manager's limits (PMI get_maxes): KVS name, key and value lengths.
  struct Maxes {
    int kvsname = 256, key = 64, value = 1024;
  };

  virtual ~JobStore() = default;
  virtual const std::string& kvs_name() const = 0;  // the same for every process of the job
  virtual Maxes maxes() = 0;
  virtual void put(const std::string& key, const std::string& value) = 0;
  // The value of `key`, or nothing when the store has none.
  virtual std::optional<std::string> find(const std::string& key) = 0;
  virtual void barrier() = 0;  // also commits the puts
  virtual void finalize() = 0;
  virtual bool finalized() const = 0;
  // Makes a call blocked in another thread fail at once.
  virtual void abandon() = 0;
};

// One host: nothing beyond the host's own ranks, so every call is answered at once.
class HostStore final : public JobStore {
 public:
  explicit HostStore(std::string kvs_name) : kvs_name_(std::move(kvs_name)) {}
  const std::string& kvs_name() const override { return kvs_name_; }
  Maxes maxes() override { return {}; }
  void put(const std::string&, const std::string&) override {}
  std::optional<std::string> find(const std::string&) override { return std::nullopt; }
  void barrier() override {}
  void finalize() override { finalized_ = true; }
  bool finalized() const override { return finalized_; }
  void abandon() override {}

 private:
  std::string kvs_name_;
  bool finalized_ = false;
};

}  // namespace bgl::bglrun
