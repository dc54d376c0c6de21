#pragma once
// Runs a command line with a hard time limit and captures its output, for tests that drive bglrun.
#include <string>
#include <vector>

namespace bgl::test {

struct ProcessResult {
  int exit_code = -1;  // 128 + signal when killed by a signal; -1 when it was stopped for time
  bool timed_out = false;
  double seconds = 0;
  std::string output;  // stdout and stderr, interleaved
};

// Starts `argv` (with extra "NAME=value" environment entries), kills its process group after
// `timeout_seconds`. `on_line` (optional) sees each output line as it arrives.
ProcessResult run_process(const std::vector<std::string>& argv, double timeout_seconds,
                          const std::vector<std::string>& env = {});

// bglrun (the launcher at `bglrun`) with its own `--timeout` of `timeout` seconds and `args`;
// the process is killed 15 s after that if the launcher itself hangs.
ProcessResult run_bglrun(const std::string& bglrun, std::vector<std::string> args, double timeout,
                         const std::vector<std::string>& env = {});

// Starts `argv` in the background; its stdout/stderr go to `log_path`. Returns the pid.
int spawn_process(const std::vector<std::string>& argv, const std::string& log_path);
// Waits up to `timeout_seconds` for `pid`; returns its exit code (128 + signal), or -1 on timeout
// after killing its process group (spawn_process gives it one).
int wait_process(int pid, double timeout_seconds);

// The pids of ranks 0..n-1 from "pid <rank> <pid>" lines in the log at `log_path`, once all n
// have appeared; empty when they have not within `timeout_seconds`.
std::vector<int> wait_for_pids(const std::string& log_path, int n, double timeout_seconds);

// Paths of files in /dev/shm that a bglemu job created.
std::vector<std::string> bglemu_segments();
bool process_alive(int pid);
// The whole content of a file (empty when it cannot be read), e.g. a job's log.
std::string read_file(const std::string& path);
// The parent process of `pid` (from /proc), or -1 when it is gone.
int parent_of(int pid);

// Two network namespaces joined by a veth pair, for jobs over two emulated hosts: every packet
// between them crosses the veth link. Built by the constructor (needs root and ip(8); `error()`
// says what failed), with the two hosts in a host file at `hostfile()`; removed by the destructor.
// `tag` (a few letters) keeps the names apart from other tests' pairs, `subnet` is like
// "10.213.0" (host A is .1, host B .2).
class NamespacePair {
 public:
  NamespacePair(const std::string& tag, const std::string& subnet, const std::string& hostfile);
  ~NamespacePair();
  NamespacePair(const NamespacePair&) = delete;
  NamespacePair& operator=(const NamespacePair&) = delete;

  const std::string& error() const { return error_; }  // empty once built
  const std::string& ns(int host) const { return ns_[host]; }
  const std::string& link(int host) const { return link_[host]; }  // its end of the veth
  const std::string& hostfile() const { return hostfile_; }

 private:
  void remove();
  std::string ns_[2], link_[2];
  std::string hostfile_, error_;
};

}  // namespace bgl::test
