#pragma once
// A PMI-1 client (the wire protocol Hydra's mpiexec speaks to the processes it starts, through the
// descriptor in PMI_FD): bglrun uses it when Hydra starts one bglrun per host of a multi-host job,
// to learn which host it is (PMI rank), how many hosts there are (PMI size), and to exchange the
// hosts' libfabric addresses (put, barrier, get). Debian's MPICH does not ship libpmi separately,
// and the protocol is a few text lines, so the client is spoken here directly.
#include <optional>
#include <string>

#include "job_store.hpp"

namespace bgl::bglrun {

class PmiClient final : public JobStore {
 public:
  // The client of this process when a PMI-1 process manager started it (PMI_FD, PMI_RANK and
  // PMI_SIZE are set); nothing otherwise. Throws ConfigError when the handshake fails.
  static std::optional<PmiClient> from_environment();

  PmiClient(PmiClient&& other) noexcept;
  PmiClient& operator=(PmiClient&&) = delete;
  ~PmiClient();

  int rank() const { return rank_; }
  int size() const { return size_; }
  const std::string& kvs_name() const override { return kvs_; }
  void put(const std::string& key, const std::string& value) override;
  std::string get(const std::string& key);
  std::optional<std::string> find(const std::string& key) override;
  void barrier() override;
  void finalize() override;
  bool finalized() const override { return finalized_; }
  Maxes maxes() override;
  // The connection is shut down; the process manager then treats this process as gone.
  void abandon() override;

  // The value of `name=` in a PMI-1 line ("cmd=put kvsname=k key=a value=b"); empty if absent.
  static std::string field(const std::string& line, const std::string& name);

 private:
  PmiClient(int fd, int rank, int size) : fd_(fd), rank_(rank), size_(size) {}
  // Sends one command line and reads one response line; checks its cmd= and rc=.
  std::string command(const std::string& line, const std::string& expect, bool check_rc = true);

  int fd_ = -1;
  int rank_ = 0;
  int size_ = 1;
  std::string kvs_;
  bool finalized_ = false;
};

}  // namespace bgl::bglrun
