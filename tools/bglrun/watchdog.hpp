#pragma once
// A process that outlives the launcher to clean up after it. The tasks die with the launcher
// (PDEATHSIG), but what they started does not, and a launcher killed with SIGKILL cannot remove
// its segment. The watchdog waits on a socket that only the launcher holds; when it closes
// without the launcher having ended the job itself, it kills the job's process groups and removes
// the segment's name.
#include <sys/types.h>

#include <string>

namespace bgl::bglrun {

class Watchdog {
 public:
  // Starts the watchdog of the job whose segment is `segment_name` ("/bglemu.<pid>.<n>"). On
  // failure (no process can be started) it warns and watches nothing.
  explicit Watchdog(const std::string& segment_name);
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;
  // Lets the watchdog go: it removes the segment's name, and unless disarm() was called (the
  // launcher leaves by an exception) kills the job's process groups.
  ~Watchdog();

  // A process group of the job, to be killed if the launcher dies.
  void watch_group(pid_t group);
  // The launcher has stopped every process of the job: nothing is left to kill.
  void disarm();

 private:
  void send(pid_t value);
  int fd_ = -1;  // the launcher's end of the socket (FD_CLOEXEC: the tasks never hold it)
};

}  // namespace bgl::bglrun
