#pragma once
// A PMI-1 server for the MPI ranks one host runs.
//
// bglrun starts its host's MPI ranks itself and serves their PMI connection (a socket pair per
// rank, PMI_FD), the way a Hydra proxy does. The serving thread keeps the ranks' sockets in a
// descriptor table of its own: a rank forked later does not inherit (and close at exec) every
// earlier rank's socket, which made a 1,024-rank start-up quadratic. The server: everything a rank
// could ask locally (rank, size, KVS name, limits, the process mapping) is answered here; puts also
// go to the job-wide key-value store, a barrier is entered there once every rank of the host has
// entered it, and a get that the host cannot answer is asked there. On one host that store is empty
// (HostStore), and a 1,024-rank start-up costs a few thousand short lines on local sockets; on
// several hosts it is Hydra's, through this bglrun's own PMI connection (Hydra started one bglrun
// per host). Ranks keep their job-wide MPI rank whatever host runs them.
#include <sys/resource.h>

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

  // A rank's start, in the launcher's thread (RunSettings): connect() opens its socket pair and
  // hands bglrun's end to the serving thread (false, errno set, when it cannot), prepare_task()
  // sets PMI_FD, PMI_RANK and PMI_SIZE in its process after fork (false when the rank is not
  // this host's or was not connected), and after_fork() closes the launcher's copy of its end.
  bool connect(int rank);
  bool prepare_task(int rank) const;
  void after_fork();
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
    int fd = -1;  // bglrun's end, in the serving thread's descriptor table; -1 until connected
    std::string input;
    bool in_barrier = false;
    bool finalized = false;
    bool closed = false;
  };
  void serve();
  // In the serving thread: a descriptor table of its own, so that the ranks' sockets it receives
  // are not in the table the launcher's thread forks.
  void own_descriptor_table() const;
  // Takes a connected rank's socket from the launcher's thread (the hand-over channel): the
  // client's index, or nothing when the message was not one.
  std::optional<std::size_t> receive_client();
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
  // Socket pair (datagrams) from the launcher's thread to the serving thread: a client's index in
  // clients_ with its socket (SCM_RIGHTS).
  int handover_[2] = {-1, -1};
  int pending_task_fd_ = -1;  // the rank being started: its end, in the launcher's table
  int pending_rank_ = -1;
  rlimit descriptor_limit_{};  // the user's, which ranks get back (the server may raise its own)
  std::thread thread_;
  std::atomic<bool> in_upstream_{false};  // in a waiting_for_hosts call
  std::atomic<bool> table_owned_{false};  // the serving thread has its own descriptor table
  std::atomic<bool> done_{false};
  std::atomic<bool> stopping_{false};
  bool abandoned_ = false;
  mutable std::mutex fault_mutex_;
  std::optional<std::string> fault_;
  std::atomic<int> fault_status_{1};
};

}  // namespace bgl::bglrun
