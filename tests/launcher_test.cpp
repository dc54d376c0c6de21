// bglrun end to end: job start, configuration errors, failure handling and cleanup, and the packet
// layer's multi-process behaviour (order, adaptive reordering, deposit bit, backpressure, scale).
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "process_runner.hpp"

namespace bgl::test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

const std::string kBglrun = BGLRUN_PATH;
const std::string kScenarios = SCENARIOS_PATH;

ProcessResult bglrun(std::vector<std::string> args, double timeout = 60,
                     const std::vector<std::string>& env = {}) {
  args.insert(args.begin(), kBglrun);
  return run_process(args, timeout, env);
}

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "/" + name + "." + std::to_string(getpid());
}

bool segment_of(int launcher_pid) {
  for (const auto& s : bglemu_segments())
    if (s.find("bglemu." + std::to_string(launcher_pid) + ".") != std::string::npos) return true;
  return false;
}

TEST(Launcher, RunsTasksAndReturnsZero) {
  const auto r = bglrun({"-np", "8", "--shape", "2x2x2", kScenarios, "order", "200"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

TEST(Launcher, ReturnsFirstFailingRanksCodeAndNamesIt) {
  const auto r = bglrun({"-np", "4", "--shape", "2x2x1", kScenarios, "fail", "2", "3"});
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_THAT(r.output, HasSubstr("rank 2 on node (0,1,0) t=0"));
  EXPECT_THAT(r.output, HasSubstr("exited with code 3"));
  EXPECT_THAT(r.output, HasSubstr("stopping the other 3 tasks"));
  EXPECT_LT(r.seconds, 10);
}

TEST(Launcher, KillNineOfOneRankStopsJobAndCleansUpWithinFiveSeconds) {
  const std::string log = temp_path("kill9.log");
  const int launcher =
      spawn_process({kBglrun, "-np", "8", "--shape", "2x2x2", kScenarios, "hang"}, log);
  const auto pids = wait_for_pids(log, 8, 30);
  ASSERT_EQ(pids.size(), 8u) << read_file(log);
  EXPECT_TRUE(segment_of(launcher));
  const auto start = std::chrono::steady_clock::now();
  ASSERT_EQ(kill(pids[3], SIGKILL), 0);
  const int code = wait_process(launcher, 5);
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(code, 128 + SIGKILL) << read_file(log);
  EXPECT_LT(took, 5.0);
  EXPECT_THAT(read_file(log), HasSubstr("rank 3 on node (1,1,0) t=0"));
  EXPECT_THAT(read_file(log), HasSubstr("was killed by signal 9"));
  EXPECT_FALSE(segment_of(launcher));
  for (int pid : pids)
    EXPECT_FALSE(process_alive(pid)) << "task pid " << pid << " survived";
}

// The mpiexec path (MPI programs) names the rank that died first although bglrun looks only after
// Hydra's cleanup killed the others, rank 0 first (a stand-in mpiexec stops bglrun meanwhile, as
// a loaded machine would; bglrun used to name rank 0).
TEST(Launcher, MpiexecPathNamesTheRankThatDiedFirstNotTheCleanupsVictims) {
  for (int round = 0; round < 3; ++round) {
    const auto r =
        bglrun({"--launcher", "mpiexec", "-np", "4", "--mode", "vn", "--timeout", "60", kScenarios,
                "hang"},
               90, {std::string("BGL_MPIEXEC=") + FAKE_MPIEXEC_PATH, "FAKE_MPIEXEC_VICTIM=2"});
    EXPECT_EQ(r.exit_code, 128 + SIGKILL) << r.output;
    EXPECT_THAT(r.output, HasSubstr("bglrun: rank 2 on node (0,0,0) t=1")) << r.output;
    EXPECT_THAT(r.output, HasSubstr("was killed by signal 9")) << r.output;
    EXPECT_THAT(r.output, ::testing::Not(HasSubstr("bglrun: rank 0 "))) << r.output;
  }
}

// The mpiexec path (MPI programs) detects deadlocks too, once every rank has started.
TEST(Launcher, MpiexecPathReportsADeadlock) {
  const auto r =
      bglrun({"--launcher", "mpiexec", "-np", "4", "--mode", "vn", "--timeout", "60", "--deadlock",
              "2", kScenarios, "deadlock", "2"},
             90, {std::string("BGL_MPIEXEC=") + FAKE_MPIEXEC_PATH, "FAKE_MPIEXEC_VICTIM=none"});
  EXPECT_EQ(r.exit_code, 125) << r.output;
  EXPECT_THAT(r.output, HasSubstr("bglrun: deadlock: every task has been waiting for 2."));
  EXPECT_THAT(r.output, HasSubstr("rank 2 waits for packets"));
  EXPECT_THAT(r.output, HasSubstr("ranks 0-1,3 wait for the job barrier"));
  EXPECT_LT(r.seconds, 40) << r.output;
}

// The mpiexec of an MPICH prefix named by --mpich-prefix or BGL_MPICH_PREFIX (an installed bglrun
// with the device's MPICH elsewhere): the flag wins over BGL_MPIEXEC, the variable is used when no
// flag is given. The stand-in mpiexec kills rank 2, so its message proves it was the one started.
TEST(Launcher, MpichPrefixFlagAndVariableChooseTheMpiexec) {
  const auto prefix = std::filesystem::path(temp_path("mpich-prefix"));
  std::filesystem::remove_all(prefix);
  std::filesystem::create_directories(prefix / "bin");
  std::filesystem::create_symlink(FAKE_MPIEXEC_PATH, prefix / "bin" / "mpiexec");
  const std::vector<std::vector<std::string>> cases = {{"--mpich-prefix", prefix.string()}, {}};
  for (const auto& flag : cases) {
    std::vector<std::string> args{"--launcher", "mpiexec"};
    args.insert(args.end(), flag.begin(), flag.end());
    args.insert(args.end(), {"-np", "4", "--timeout", "60", kScenarios, "hang"});
    std::vector<std::string> env{"FAKE_MPIEXEC_VICTIM=2"};
    if (flag.empty())
      env.insert(env.end(), {"BGL_MPIEXEC=", "BGL_MPICH_PREFIX=" + prefix.string()});
    else
      env.insert(env.end(), {"BGL_MPIEXEC=/nonexistent", "BGL_MPICH_PREFIX="});
    const auto r = bglrun(args, 90, env);
    EXPECT_EQ(r.exit_code, 128 + SIGKILL) << r.output;
    EXPECT_THAT(r.output, HasSubstr("bglrun: rank 2 on node")) << r.output;
  }
  std::filesystem::remove_all(prefix);
}

TEST(Launcher, InterruptStopsEveryTaskAndRemovesTheSegment) {
  const std::string log = temp_path("sigint.log");
  const int launcher =
      spawn_process({kBglrun, "-np", "4", "--shape", "2x2x1", kScenarios, "hang"}, log);
  const auto pids = wait_for_pids(log, 4, 30);
  ASSERT_EQ(pids.size(), 4u) << read_file(log);
  kill(launcher, SIGINT);
  EXPECT_EQ(wait_process(launcher, 5), 128 + SIGINT) << read_file(log);
  EXPECT_THAT(read_file(log), HasSubstr("received signal 2"));
  EXPECT_FALSE(segment_of(launcher));
  for (int pid : pids)
    EXPECT_FALSE(process_alive(pid));
}

// Every task asleep in a wait of the runtime and none seeing work: the launcher stops the job in
// seconds (not at --timeout) and says what each task waits for.
TEST(Launcher, DeadlockIsReportedWithWhatEachTaskWaitsFor) {
  const auto r = bglrun({"-np", "8", "--shape", "2x2x2", "--timeout", "120", "--deadlock", "2",
                         kScenarios, "deadlock", "3"},
                        130);
  EXPECT_EQ(r.exit_code, 125) << r.output;
  EXPECT_THAT(r.output, HasSubstr("bglrun: deadlock: every task has been waiting for 2."));
  EXPECT_THAT(r.output, HasSubstr("rank 3 waits for packets (asleep on its reception doorbell)"));
  EXPECT_THAT(r.output,
              HasSubstr("ranks 0-2,4-7 wait for the job barrier (generation 0; 7 of 8 arrived)"));
  EXPECT_LT(r.seconds, 20) << r.output;
}

// The default window (3 s) at the scale of a partition in virtual-node mode.
TEST(Launcher, DeadlockOf256TasksIsReportedInSeconds) {
  const auto r = bglrun({"-np", "256", "--shape", "4x4x8", "--mode", "vn", "--timeout", "240",
                         kScenarios, "deadlock", "200"},
                        250);
  EXPECT_EQ(r.exit_code, 125) << r.output;
  EXPECT_THAT(r.output, HasSubstr("rank 200 waits for packets"));
  EXPECT_THAT(r.output, HasSubstr("ranks 0-199,201-255 wait for the job barrier"));
  EXPECT_LT(r.seconds, 90) << r.output;
}

// A task that computes while all others sleep waiting for it is not a deadlock: the job is
// stopped only once it waits too (5 s of computing, then the 2 s window).
TEST(Launcher, TaskThatComputesWhileOthersWaitIsNoDeadlock) {
  const auto r = bglrun({"-np", "4", "--shape", "2x2x1", "--timeout", "120", "--deadlock", "2",
                         kScenarios, "deadlock", "1", "5"},
                        130);
  EXPECT_EQ(r.exit_code, 125) << r.output;
  EXPECT_GE(r.seconds, 6.5) << r.output;
  EXPECT_THAT(r.output, HasSubstr("rank 1 waits for packets"));
}

// Tasks that block outside the runtime's waits (here in pause()) are slow, not deadlocked; and
// --deadlock 0 (or BGL_DEADLOCK=0) turns detection off.
TEST(Launcher, OnlyTheTimeoutStopsTasksBlockedElsewhereOrWithDetectionOff) {
  auto r = bglrun({"-np", "2", "--timeout", "5", "--deadlock", "1", kScenarios, "hang"}, 20);
  EXPECT_EQ(r.exit_code, 124) << r.output;
  EXPECT_THAT(r.output, Not(HasSubstr("deadlock")));
  r = bglrun({"-np", "2", "--timeout", "5", kScenarios, "deadlock"}, 20, {"BGL_DEADLOCK=0"});
  EXPECT_EQ(r.exit_code, 124) << r.output;
  EXPECT_THAT(r.output, Not(HasSubstr("deadlock")));
  r = bglrun({"-np", "2", "--deadlock", "soon", kScenarios, "deadlock"}, 20);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("--deadlock='soon': not a number"));
  r = bglrun({"-np", "2", kScenarios, "deadlock"}, 20, {"BGL_DEADLOCK=-1"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("BGL_DEADLOCK='-1'"));
}

// The job's fence mode is the launcher's to choose; a value it cannot read stops the job before
// anything starts, and a forced mode runs the job (docs/CONFIGURATION.md, BGL_FENCES).
TEST(Launcher, BglFencesIsCheckedBeforeTheJobStarts) {
  auto r = bglrun({"-np", "8", "--shape", "2x2x2", kScenarios, "order", "200"}, 20,
                  {"BGL_FENCES=sometimes"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("BGL_FENCES=sometimes: expected auto, asymmetric or symmetric"));
  EXPECT_THAT(r.output, Not(HasSubstr("watchdog")));
  for (const char* mode : {"BGL_FENCES=symmetric", "BGL_FENCES=asymmetric"}) {
    r = bglrun({"-np", "8", "--shape", "2x2x2", kScenarios, "order", "200"}, 60, {mode});
    EXPECT_EQ(r.exit_code, 0) << mode << "\n" << r.output;
  }
}

TEST(Launcher, TimeoutStopsTheJob) {
  const auto r = bglrun({"-np", "2", "--timeout", "1", kScenarios, "hang"}, 20);
  EXPECT_EQ(r.exit_code, 124) << r.output;
  EXPECT_THAT(r.output, HasSubstr("timed out after 1"));
  EXPECT_LT(r.seconds, 6);
}

TEST(Launcher, ProgramWithoutLauncherGetsAClearError) {
  const auto r = run_process({kScenarios, "order"}, 20);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("must be started by bglrun"));
}

TEST(Launcher, ValidatesConfigurationBeforeStarting) {
  struct Case {
    std::vector<std::string> args;
    std::vector<std::string> env;
    std::string message;
  };
  const std::string map = temp_path("bad.map");
  std::ofstream(map) << "# two tasks\n0 0 0\n0 0 0\n";
  const std::vector<Case> cases = {
      {{"-np", "9", "--shape", "2x2x2", "true"},
       {},
       "9 tasks do not fit shape 2x2x2 in heater mode"},
      {{"-np", "17", "--shape", "2x2x2", "--mode", "vn", "true"}, {}, "17 tasks do not fit"},
      {{"-np", "2", "--mode", "turbo", "true"}, {}, "expected heater, coprocessor or vn"},
      {{"-np", "2", "true"}, {"BGL_MODE=turbo"}, "BGL_MODE='turbo'"},
      {{"-np", "2", "--shape", "2x0x1", "true"}, {}, "2x0x1"},
      {{"-np", "2", "--mapfile", map, "--shape", "2x1x1", "true"}, {}, map + ":3:"},
      {{"-np", "2", "--mapping", "XYQ", "true"}, {}, "XYQ"},
      {{"-np", "2", "--fifo-packets", "48", "true"}, {}, "power of two"},
      {{"-np", "2", "--bogus", "true"}, {}, "unknown option '--bogus'"},
      {{"-np", "2", "/nonexistent/program"}, {}, "not found or not executable"},
      {{"-np", "x", "true"}, {}, "-np='x'"},
      {{"-np", "2", "true"}, {"BGL_TIMEOUT=soon"}, "BGL_TIMEOUT='soon'"},
      {{"-np", "2", "true"}, {"BGL_LOG_LEVEL=loud"}, "BGL_LOG_LEVEL='loud'"},
  };
  for (const auto& c : cases) {
    const auto r = bglrun(c.args, 20, c.env);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_THAT(r.output, HasSubstr(c.message));
  }
}

TEST(Launcher, DryRunPrintsTheMapping) {
  const auto r =
      bglrun({"-np", "16", "--shape", "2x2x2", "--mode", "vn", "--mapping", "TXYZ", "--dry-run"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("16 tasks on 2x2x2 (8 nodes), vn mode, mapping order TXYZ"));
  // t varies fastest: rank 1 is the second task of node (0,0,0), rank 2 is on (1,0,0).
  EXPECT_THAT(r.output, HasSubstr("     1  0  0  0  1\n"));
  EXPECT_THAT(r.output, HasSubstr("     2  1  0  0  0\n"));
}

// A /dev/shm of the test's own while it lives (a tmpfs in a mount namespace, left again at the
// end), so that no launcher of a test running in parallel removes the test's files first. Needs
// root (CI runs as root); elsewhere the test shares /dev/shm, and active() is false.
class PrivateDevShm {
 public:
  PrivateDevShm() {
    if (geteuid() != 0) return;
    previous_ = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
    if (previous_ < 0 || unshare(CLONE_NEWNS) != 0) return;
    active_ = mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0 &&
              mount("tmpfs", "/dev/shm", "tmpfs", 0, "size=256m,mode=1777") == 0;
  }
  PrivateDevShm(const PrivateDevShm&) = delete;
  PrivateDevShm& operator=(const PrivateDevShm&) = delete;
  ~PrivateDevShm() {
    if (previous_ >= 0 && setns(previous_, CLONE_NEWNS) != 0)
      ADD_FAILURE() << "cannot return to the test's mount namespace";
    if (previous_ >= 0) close(previous_);
  }
  bool active() const { return active_; }

 private:
  int previous_ = -1;
  bool active_ = false;
};

// A segment nobody holds (its launcher and watchdog were killed) is left behind. A job start
// removes such segments with a warning in the job's output; `bglrun --cleanup` removes them
// beforehand, so that scripts comparing a program's output (MPICH's runtests) see only what the
// program printed. Segments whose lock is held (live jobs) stay.
TEST(Launcher, CleanupRemovesOnlyDeadLaunchersSegments) {
  const PrivateDevShm private_shm;
  const auto stale_segment = [] {
    const int dead = spawn_process({"true"}, temp_path("true.log"));
    EXPECT_EQ(wait_process(dead, 10), 0);
    const std::string path = "/dev/shm/bglemu." + std::to_string(dead) + ".42";
    std::ofstream(path) << "stale";
    return path;
  };
  const std::string live = "/dev/shm/bglemu." + std::to_string(getpid()) + ".42";
  std::ofstream(live) << "live";
  const int live_fd = open(live.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(live_fd, 0);
  ASSERT_EQ(flock(live_fd, LOCK_EX | LOCK_NB), 0);  // as a live launcher holds its segment

  // Every launcher removes stale segments when it starts, so in a shared /dev/shm under
  // `ctest -j` another test's launcher may remove ours first: the message is then expected only
  // from a run that found it.
  std::string stale = stale_segment();
  bool found = private_shm.active() || std::filesystem::exists(stale);
  const auto r = bglrun({"--cleanup"}, 20);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  if (found) {
    EXPECT_THAT(r.output, ::testing::ContainsRegex("bglrun: removed [1-9][0-9]* shared-memory "
                                                   "segments left by launchers that were killed"));
  }
  EXPECT_FALSE(std::filesystem::exists(stale));
  EXPECT_TRUE(std::filesystem::exists(live));

  stale = stale_segment();
  found = private_shm.active() || std::filesystem::exists(stale);
  const auto job = bglrun({"-np", "1", "echo", "No Errors"});
  EXPECT_EQ(job.exit_code, 0) << job.output;
  EXPECT_THAT(job.output, HasSubstr("No Errors\n"));
  if (found) {
    EXPECT_THAT(job.output, HasSubstr("segments left by launchers that were killed"));
  }
  EXPECT_FALSE(std::filesystem::exists(stale));
  EXPECT_TRUE(std::filesystem::exists(live));
  std::filesystem::remove(live);
  close(live_fd);

  const auto bad = bglrun({"--cleanup", "true"}, 20);
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_THAT(bad.output, HasSubstr("--cleanup runs nothing"));
}

// A task that exits 0 without taking part (a wrapper that exits before exec-ing the program), or
// that leaves without shutting down its runtime, used to leave the others waiting for it forever.
TEST(Launcher, TaskThatExitsZeroEarlyStopsTheJobNamingIt) {
  const auto wrapped =
      bglrun({"-np", "2", "sh", "-c", "[ \"$BGL_RANK\" = 1 ] && exit 0; exec \"$0\" order 100",
              kScenarios},
             30);
  EXPECT_FALSE(wrapped.timed_out) << wrapped.output;
  EXPECT_EQ(wrapped.exit_code, 1) << wrapped.output;
  EXPECT_THAT(wrapped.output, HasSubstr("bglrun: rank 1 on node (1,0,0) t=0"));
  EXPECT_THAT(wrapped.output, HasSubstr("exited with code 0 before the job finished (without "
                                        "taking part"));
  EXPECT_LT(wrapped.seconds, 10);

  const auto left = bglrun({"-np", "4", "--shape", "2x2x1", kScenarios, "leave", "2"}, 30);
  EXPECT_FALSE(left.timed_out) << left.output;
  EXPECT_EQ(left.exit_code, 1) << left.output;
  EXPECT_THAT(left.output, HasSubstr("bglrun: rank 2 on node (0,1,0) t=0"));
  EXPECT_THAT(left.output, HasSubstr("without shutting down its bglemu runtime"));
  EXPECT_THAT(left.output, HasSubstr("stopping the other 3 tasks"));
  EXPECT_LT(left.seconds, 10);

  // Plain programs that never attach the job may end whenever they like.
  const auto plain =
      bglrun({"-np", "2", "sh", "-c", "[ \"$BGL_RANK\" = 1 ] && exit 0; sleep 0.3"}, 30);
  EXPECT_EQ(plain.exit_code, 0) << plain.output;
}

// kill -9 of the launcher: the tasks die with it (PDEATHSIG), and its watchdog kills what they
// started and removes the segment; both used to outlive the job.
TEST(Launcher, KillNineOfTheLauncherLeavesNoProcessAndNoSegment) {
  const std::string log = temp_path("launcher-kill9.log");
  const int launcher = spawn_process(
      {kBglrun, "-np", "2", "sh", "-c", "sleep 600 & echo \"pid $BGL_RANK $!\"; wait"}, log);
  const auto children = wait_for_pids(log, 2, 30);
  ASSERT_EQ(children.size(), 2u) << read_file(log);
  ASSERT_TRUE(segment_of(launcher));
  ASSERT_EQ(kill(launcher, SIGKILL), 0);
  EXPECT_EQ(wait_process(launcher, 5), 128 + SIGKILL);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  const auto anything_left = [&] {
    return segment_of(launcher) || process_alive(children[0]) || process_alive(children[1]);
  };
  while (anything_left() && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(segment_of(launcher)) << read_file(log);
  for (int pid : children) {
    EXPECT_FALSE(process_alive(pid)) << "a task's child (pid " << pid << ") survived";
    kill(pid, SIGKILL);
  }
  EXPECT_THAT(read_file(log), HasSubstr("its watchdog killed the job's processes"));
}

// The commands that put a test's bglrun into a namespace of its own: as root directly, else in
// a user namespace (where the test user is root).
std::vector<std::string> in_namespace(std::vector<std::string> kinds) {
  std::vector<std::string> out{"unshare"};
  if (geteuid() != 0) out.insert(out.end(), {"-U", "-r"});
  out.insert(out.end(), kinds.begin(), kinds.end());
  return out;
}

// A /dev/shm too small for the segment: a clear error naming the size needed and free, nothing
// left behind (it used to be SIGBUS, and the segment stayed). The tmpfs lives in a mount
// namespace of the test's own, gone with it.
TEST(Launcher, TooLittleSharedMemoryIsAClearErrorNotSigbus) {
  auto argv = in_namespace({"-m"});
  argv.insert(argv.end(),
              {"sh", "-c",
               "mount -t tmpfs -o size=1m tmpfs /dev/shm || { echo 'cannot mount'; exit 97; }; "
               "\"$0\" -np 8 --shape 2x2x2 true; echo \"rc=$?\"; echo \"left=$(ls -A /dev/shm)\"",
               kBglrun});
  const auto r = run_process(argv, 60);
  ASSERT_NE(r.exit_code, 97) << "the test needs a mount namespace (unshare -m): " << r.output;
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("rc=2\n"));
  EXPECT_THAT(r.output, HasSubstr("bglrun: the job needs a shared-memory segment of "));
  EXPECT_THAT(r.output, HasSubstr("but /dev/shm has only 1 MiB free"));
  EXPECT_THAT(r.output, HasSubstr("left=\n"));
}

TEST(Launcher, DryRunReportsTheSegmentSize) {
  const auto r = bglrun({"-np", "1", "--shape", "16x16x16", "--dry-run"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, ::testing::ContainsRegex("# shared-memory segment: [0-9]+ MiB in "
                                                 "/dev/shm \\([0-9]+ MiB free\\)"));
}

// The segment size --dry-run reports, in MiB (-1 when it reports none).
long dry_run_segment_mib(std::vector<std::string> args) {
  args.push_back("--dry-run");
  const auto r = bglrun(args);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  const std::string key = "# shared-memory segment: ";
  const auto at = r.output.find(key);
  return at == std::string::npos ? -1 : std::stol(r.output.substr(at + key.size()));
}

// A big, nearly empty partition: the segment holds what the tasks need, not what the shape has
// (2 tasks on 64x64x64 once needed 98 GiB of /dev/shm, 1 task on 16x16x16 1.5 GiB). Such a job
// runs in a 64 MiB /dev/shm, its packets crossing the empty nodes (deposit-bit lines the length of
// the torus, adaptive all-to-all), with and without virtual time.
TEST(Launcher, BigShapeWithFewTasksHasASmallSegment) {
  const long big = dry_run_segment_mib({"-np", "3", "--shape", "64x64x64"});
  EXPECT_GT(big, 0);
  EXPECT_LT(big, 64);
  const long timed = dry_run_segment_mib({"-np", "3", "--shape", "64x64x64", "--virtual-time"});
  EXPECT_GT(timed, 0);
  EXPECT_LT(timed, 64);
  const long small = dry_run_segment_mib({"-np", "1", "--shape", "16x16x16"});
  EXPECT_GT(small, 0);
  EXPECT_LT(small, 8);

  auto argv = in_namespace({"-m"});
  argv.insert(argv.end(),
              {"sh", "-c",
               "mount -t tmpfs -o size=64m tmpfs /dev/shm || { echo 'cannot mount'; exit 97; }; "
               "\"$0\" -np 3 --shape 64x64x64 \"$1\" deposit 50; echo \"lines rc=$?\"; "
               "\"$0\" -np 3 --shape 64x64x64 --virtual-time \"$1\" deposit 50; "
               "echo \"timed lines rc=$?\"; "
               "\"$0\" -np 3 --shape 64x64x64 \"$1\" alltoall 20; echo \"alltoall rc=$?\"; "
               "echo \"left=$(ls -A /dev/shm)\"",
               kBglrun, kScenarios});
  const auto r = run_process(argv, 120);
  ASSERT_NE(r.exit_code, 97) << "the test needs a mount namespace (unshare -m): " << r.output;
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("lines rc=0\n"));
  EXPECT_THAT(r.output, HasSubstr("timed lines rc=0\n"));
  EXPECT_THAT(r.output, HasSubstr("alltoall rc=0\n"));
  EXPECT_THAT(r.output, HasSubstr("left=\n"));
}

// Two jobs in two PID namespaces sharing /dev/shm: the second's start must not take the first's
// live segment for a dead launcher's (its pid, 3 in the first namespace, is nobody in the
// second), which it used to remove.
TEST(Launcher, JobStartInAnotherPidNamespaceKeepsALiveSegment) {
  const std::string log = temp_path("pidns.log");
  auto first = in_namespace({"-p", "-f"});
  first.insert(first.end(), {"sh", "-c",
                             "/bin/true; \"$0\" -np 1 sh -c 'echo \"segment $BGL_SEGMENT\"; "
                             "sleep 600'; echo \"first job ended\"",
                             kBglrun});
  const int job = spawn_process(first, log);
  std::string segment;
  for (int i = 0; i < 1500 && segment.empty(); ++i) {
    std::istringstream lines(read_file(log));
    for (std::string line; std::getline(lines, line);)
      if (line.starts_with("segment /bglemu.")) segment = "/dev/shm" + line.substr(8);
    if (segment.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_FALSE(segment.empty()) << read_file(log);
  EXPECT_THAT(segment, HasSubstr("/bglemu.3."));
  ASSERT_TRUE(std::filesystem::exists(segment));

  auto second = in_namespace({"-p", "-f"});
  second.insert(second.end(), {kBglrun, "-np", "1", "true"});
  const auto r = run_process(second, 30);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(std::filesystem::exists(segment)) << r.output;

  kill(-job, SIGINT);  // the first job's launcher stops it and removes its segment
  wait_process(job, 10);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (std::filesystem::exists(segment) && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(std::filesystem::exists(segment)) << read_file(log);
}

TEST(Launcher, WritesStatisticsAsJson) {
  const std::string stats = temp_path("stats.json");
  const auto r =
      bglrun({"-np", "8", "--shape", "2x2x2", "--stats", stats, kScenarios, "order", "100"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(read_file(stats));
  EXPECT_EQ(j["job"]["shape"], "2x2x2");
  EXPECT_EQ(j["tasks"].size(), 8u);
  std::uint64_t injected = 0, received = 0, link_packets = 0;
  for (const auto& t : j["tasks"]) {
    injected += t["counters"]["packets_injected"].get<std::uint64_t>();
    received += t["counters"]["packets_received"].get<std::uint64_t>();
  }
  for (const auto& l : j["links"])
    link_packets += l["packets"].get<std::uint64_t>();
  EXPECT_EQ(injected, 8u * 7u * 100u);
  EXPECT_EQ(received, injected);
  // On a 2x2x2 torus each task has 3 peers at 1 hop, 3 at 2 and 1 at 3: 12 hops per round.
  EXPECT_EQ(link_packets, 8u * 12u * 100u);
}

TEST(PacketLayer, DeterministicRoutingKeepsEveryPairsOrder) {
  const auto r = bglrun({"-np", "8", "--shape", "2x2x2", kScenarios, "order", "3000"}, 120);
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

TEST(PacketLayer, OrderHoldsInVirtualNodeModeAndOnAMesh) {
  const auto vn =
      bglrun({"-np", "16", "--shape", "2x2x2", "--mode", "vn", kScenarios, "order", "500"}, 120);
  EXPECT_EQ(vn.exit_code, 0) << vn.output;
  const auto mesh =
      bglrun({"-np", "12", "--shape", "3x2x2", "--mesh", "xz", kScenarios, "order", "500"}, 120);
  EXPECT_EQ(mesh.exit_code, 0) << mesh.output;
}

TEST(PacketLayer, AdaptiveRoutingReordersAndLosesNothing) {
  // Rank 7 = (1,1,1): three productive dimensions from rank 0.
  const auto r = bglrun({"-np", "8", "--shape", "2x2x2", kScenarios, "adaptive", "20000"}, 120);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("adaptive: 20000 packets"));
  EXPECT_THAT(r.output, HasSubstr("deterministic: 20000 packets, 0 out of order"));
}

TEST(PacketLayer, DepositBitReachesEveryNodeOnTheLineOnce) {
  // 8x2x1 torus: +x line from (0,0,0) to (7,0,0), -x line to (4,0,0) via 7, 6, 5.
  const auto torus = bglrun({"-np", "16", "--shape", "8x2x1", kScenarios, "deposit", "2000"}, 120);
  EXPECT_EQ(torus.exit_code, 0) << torus.output;
  EXPECT_THAT(torus.output, HasSubstr("rank 7: 4000 deposit-bit copies"));  // on both lines
  EXPECT_THAT(torus.output, HasSubstr("rank 1: 2000 deposit-bit copies"));
  EXPECT_THAT(torus.output, HasSubstr("rank 8: 0 deposit-bit copies"));
  const auto mesh =
      bglrun({"-np", "8", "--shape", "8x1x1", "--mesh", "x", kScenarios, "deposit", "2000"}, 120);
  EXPECT_EQ(mesh.exit_code, 0) << mesh.output;
  EXPECT_THAT(mesh.output, HasSubstr("rank 7: 2000 deposit-bit copies"));
}

TEST(PacketLayer, EightProducersOneFifoMillionPacketsNoLossNoDuplicates) {
  // 9x1x1 mesh: every packet to rank 0 travels -x last, into the same reception FIFO.
  const auto r =
      bglrun({"-np", "9", "--shape", "9x1x1", "--mesh", "x", kScenarios, "flood", "125000"}, 300);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("rank 0: 1000000 packets from 8 producers, reception FIFOs 0x2"));
}

TEST(PacketLayer, SixtyFourTasksOnTwoCoresCompleteAnAllToAll) {
  const auto r = bglrun(
      {"-np", "64", "--shape", "4x4x4", "--timeout", "240", kScenarios, "alltoall", "20"}, 300);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("alltoall: 64 tasks x 20 packets to each peer: ok"));
}

}  // namespace
}  // namespace bgl::test
