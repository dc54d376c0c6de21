#pragma once
// A PMI-1 server for the MPI ranks one host runs.
//
// bglrun starts its host's MPI ranks itself and serves their PMI connection (a socket pair per
// rank, PMI_FD), the way a Hydra proxy does: everything a rank could ask locally (rank, size, KVS
// name, limits, the process mapping) is answered here; puts also go to the job-wide key-value
// store, a barrier is entered there once every rank of the host has entered it, and a get that the
// host cannot answer is asked there. On one host that store is empty (HostStore), and a 1,024-rank
// start-up costs a few thousand short lines on local sockets; on several hosts it is Hydra's,
// through this bglrun's own PMI connection (Hydra started one bglrun per host). Ranks keep their
// job-wide MPI rank whatever host runs them.
#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "job_store.hpp"

namespace bgl::bglrun {

class PmiServer {
 public:
  // `local_ranks`: the job's ranks this host runs (not empty); `host_of_rank`: each rank's host
  // index (the process mapping MPICH reads: which ranks share a host); `describe` names a rank in
  // messages.
  PmiServer(JobStore& upstream, std::vector<int> local_ranks, const std::vector<int>& host_of_rank,
            std::function<std::string(int)> describe);
  PmiServer(const PmiServer&) = delete;
  PmiServer& operator=(const PmiServer&) = delete;
  ~PmiServer();

  // Sets PMI_FD, PMI_RANK and PMI_SIZE for rank `rank` (called in its process after fork, before
  // exec); false when the rank is not this host's.
  bool prepare_task(int rank) const;
  // Once every task is started: the tasks' ends of the socket pairs are theirs alone.
  void close_task_ends();
  void start();
  // Stops serving; a call blocked upstream (another host gone) is made to fail.
  void stop();

  // Something that ends the job (a rank called MPI_Abort, an invalid PMI command, the job-wide
  // store failed), and the exit status it calls for. Thread-safe.
  std::optional<std::string> fault() const;
  int fault_status() const { return fault_status_.load(); }

  // "(vector,(host,1,count),...)": runs of consecutive ranks on one host, or empty when that does
  // not fit `max_chars` (MPICH then compares host names instead).
  static std::string process_mapping(const std::vector<int>& host_of_rank, std::size_t max_chars);

 private:
  struct Client {
    int rank = -1;
    int fd = -1;       // bglrun's end
    int task_fd = -1;  // the rank's end (close-on-exec; the rank gets a duplicate)
    std::string input;
    bool in_barrier = false;
    bool finalized = false;
    bool closed = false;
  };
  void serve();
  void read_from(Client& c);
  void handle(Client& c, const std::string& line);
  void reply(Client& c, const std::string& line);
  void close_client(Client& c);
  void barrier_if_complete();
  void finalize_if_complete();
  void set_fault(const std::string& what, int status = 1);
  // Runs an upstream call that waits for other hosts (barrier, get), which stop() may cut short.
  template <typename F>
  auto waiting_for_hosts(F&& f) -> decltype(f());

  JobStore& upstream_;
  std::vector<Client> clients_;
  std::function<std::string(int)> describe_;
  int world_size_ = 0;
  std::string kvs_name_;
  JobStore::Maxes maxes_;
  std::string mapping_;
  std::map<std::string, std::string> local_kvs_;  // what this host's ranks put
  int stop_fd_ = -1;
  std::thread thread_;
  std::atomic<bool> in_upstream_{false};  // in a waiting_for_hosts call
  std::atomic<bool> done_{false};
  std::atomic<bool> stopping_{false};
  bool abandoned_ = false;
  mutable std::mutex fault_mutex_;
  std::optional<std::string> fault_;
  std::atomic<int> fault_status_{1};
};

}  // namespace bgl::bglrun
