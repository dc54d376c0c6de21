// bglrun and bglmap against hostile input: files that are not files (FIFOs, devices), too large
// or unreadable; flags against BGL_* variables; the statistics path; what error messages echo.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "process_runner.hpp"

namespace bgl::test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

const std::string kBglrun = BGLRUN_PATH;
const std::string kBglmap = BGLMAP_PATH;
const std::string kScenarios = SCENARIOS_PATH;

// A fresh directory for one test, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    std::string pattern = ::testing::TempDir() + "/bgl_input_XXXXXX";
    path_ = mkdtemp(pattern.data());
    std::filesystem::permissions(path_, std::filesystem::perms::all);  // setpriv'd runs too
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }
  std::string write(const std::string& name, const std::string& text) const {
    const auto p = *this / name;
    std::ofstream(p) << text;
    return p;
  }
  std::string fifo(const std::string& name) const {
    const auto p = *this / name;
    EXPECT_EQ(mkfifo(p.c_str(), 0600), 0);
    return p;
  }
  // A sparse file one byte over the input-file limit (16 MiB).
  std::string oversized(const std::string& name) const {
    const auto p = write(name, "");
    std::filesystem::resize_file(p, (std::size_t{16} << 20) + 1);
    return p;
  }

 private:
  std::filesystem::path path_;
};

ProcessResult run(std::vector<std::string> argv, double timeout = 20,
                  const std::vector<std::string>& env = {}) {
  return run_process(argv, timeout, env);
}

ProcessResult bglrun(std::vector<std::string> args, double timeout = 20,
                     const std::vector<std::string>& env = {}) {
  args.insert(args.begin(), kBglrun);
  return run_process(args, timeout, env);
}

// Each file input, named by a flag or a variable, of bglrun (a dry run and a real job) and bglmap.
struct FileInput {
  std::string name;
  std::function<ProcessResult(const std::string& path)> run;
  std::string what;  // the file's kind as errors name it
  std::string limit = "16777216 bytes (16 MiB)";
};

std::vector<FileInput> file_inputs() {
  const std::vector<std::string> job{"-np", "2", "--shape", "2x1x1"};
  const auto with = [](std::vector<std::string> a, std::vector<std::string> b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  };
  return {
      {"--mapfile (dry run)",
       [=](const std::string& p) {
         return bglrun(with(job, {"--mapfile", p, "--dry-run"}));
       },
       "mapping file"},
      {"--mapfile (job)",
       [=](const std::string& p) {
         return bglrun(with(job, {"--mapfile", p, "true"}));
       },
       "mapping file"},
      {"BGL_MAPFILE",
       [=](const std::string& p) {
         return bglrun(with(job, {"--dry-run"}), 20, {"BGL_MAPFILE=" + p});
       },
       "mapping file"},
      {"--hostfile",
       [=](const std::string& p) {
         return bglrun(with(job, {"--hostfile", p, "--dry-run"}));
       },
       "host file"},
      {"BGL_HOSTFILE",
       [=](const std::string& p) { return bglrun(with(job, {"true"}), 20, {"BGL_HOSTFILE=" + p}); },
       "host file"},
      {"--vt-params",
       [=](const std::string& p) {
         return bglrun(with(job, {"--virtual-time", "--vt-params", p, "--dry-run"}));
       },
       "virtual-time parameters file", "1048576 bytes (1 MiB)"},
      {"BGL_VT_PARAMS",
       [=](const std::string& p) {
         return bglrun(with(job, {"--virtual-time", "--dry-run"}), 20, {"BGL_VT_PARAMS=" + p});
       },
       "virtual-time parameters file", "1048576 bytes (1 MiB)"},
      {"bglmap --check --mapfile",
       [=](const std::string& p) {
         return run({kBglmap, "-np", "2", "--shape", "2x1x1", "--mapfile", p, "--check"});
       },
       "mapping file"},
  };
}

void expect_refused(const ProcessResult& r, const std::string& message, const std::string& input) {
  EXPECT_FALSE(r.timed_out) << input << ": hung";
  EXPECT_EQ(r.exit_code, 2) << input << "\n" << r.output;
  EXPECT_LT(r.seconds, 5) << input;
  EXPECT_THAT(r.output, HasSubstr(message)) << input;
}

TEST(InputFiles, AFifoIsRefusedAtOnceInsteadOfWaitingForAWriter) {
  TempDir dir;
  const auto fifo = dir.fifo("in.fifo");
  for (const auto& in : file_inputs())
    expect_refused(
        in.run(fifo),
        "cannot read " + in.what + " " + fifo + ": it is a FIFO (named pipe), not a regular file",
        in.name);
}

TEST(InputFiles, DevicesAreRefusedWithoutReadingThem) {
  for (const std::string device : {"/dev/zero", "/dev/urandom"}) {
    for (const auto& in : file_inputs())
      expect_refused(in.run(device),
                     "cannot read " + in.what + " " + device +
                         ": it is a character device, not a regular file",
                     in.name + " " + device);
  }
}

TEST(InputFiles, DirectoriesAndOversizedFilesAreRefused) {
  TempDir dir;
  const auto big = dir.oversized("big.txt");
  for (const auto& in : file_inputs()) {
    expect_refused(in.run(big),
                   "cannot read " + in.what + " " + big +
                       ": it is 16777217 bytes, more than the limit of " + in.limit,
                   in.name);
    expect_refused(in.run(dir / ""), "it is a directory, not a regular file", in.name);
  }
}

// Root reads any file: the unreadable file is tried as user nobody then.
TEST(InputFiles, UnreadableAndMissingFilesAreNamed) {
  TempDir dir;
  const auto secret = dir.write("secret.txt", "0 0 0\n1 0 0\n");
  ASSERT_EQ(chmod(secret.c_str(), 0), 0);
  const std::vector<std::string> as_nobody =
      geteuid() == 0 ? std::vector<std::string>{"setpriv", "--reuid=65534", "--regid=65534",
                                                "--clear-groups", "--"}
                     : std::vector<std::string>{};
  const auto with = [&](std::vector<std::string> args) {
    args.insert(args.begin(), as_nobody.begin(), as_nobody.end());
    return run(args);
  };
  expect_refused(with({kBglrun, "-np", "2", "--shape", "2x1x1", "--mapfile", secret, "--dry-run"}),
                 "cannot read mapping file " + secret + ": Permission denied", "--mapfile");
  expect_refused(with({kBglrun, "-np", "2", "--hostfile", secret, "--dry-run"}),
                 "cannot read host file " + secret + ": Permission denied", "--hostfile");
  expect_refused(with({kBglmap, "-np", "2", "--shape", "2x1x1", "--mapfile", secret, "--check"}),
                 "cannot read mapping file " + secret + ": Permission denied", "bglmap");
  expect_refused(bglrun({"-np", "2", "--mapfile", dir / "missing", "--dry-run"}),
                 "cannot read mapping file " + (dir / "missing") + ": No such file or directory",
                 "missing");
}

TEST(InputFiles, AFileAtTheLimitIsRead) {
  TempDir dir;
  // Two task lines, then comments up to exactly 16 MiB.
  std::string text = "0 0 0\n1 0 0\n";
  const std::string comment = "# " + std::string(1021, 'c') + "\n";  // 1 KiB lines
  while (text.size() + comment.size() <= (std::size_t{16} << 20))
    text += comment;
  text += std::string((std::size_t{16} << 20) - text.size() - 1, '#') + "\n";
  ASSERT_EQ(text.size(), std::size_t{16} << 20);
  const auto map = dir.write("limit.map", text);
  const auto r = bglrun({"-np", "2", "--shape", "2x1x1", "--mapfile", map, "--dry-run"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

// --- flags win over variables -----------------------------------------------------------------

struct Precedence {
  std::string option;
  std::vector<std::string> args;  // after -np 8
  std::vector<std::string> env;
  std::string expected;  // in the output
  std::string not_expected = "\x01";
};

TEST(Precedence, EveryFlagWinsOverItsVariableInADryRun) {
  TempDir dir;
  const auto map =
      dir.write("ranks.map", "1 0 0\n0 0 0\n1 1 0\n0 1 0\n1 0 1\n0 0 1\n1 1 1\n0 1 1\n");
  const auto two_hosts = dir.write("two.hosts", "a 127.0.0.1\nb 127.0.0.1\n");
  const auto vt_params = dir.write("vt.params", "# defaults\n");
  const std::vector<Precedence> cases = {
      {"shape", {"--shape", "2x2x2"}, {"BGL_SHAPE=4x2x1"}, "8 tasks on 2x2x2 (8 nodes)"},
      {"shape over a malformed variable", {"--shape", "2x2x2"}, {"BGL_SHAPE=abc"}, "on 2x2x2"},
      {"mesh", {"--mesh", "z"}, {"BGL_MESH=x"}, "mesh:z"},
      {"mode", {"--mode", "vn"}, {"BGL_MODE=heater"}, "vn mode"},
      {"mapping", {"--mapping", "ZYXT"}, {"BGL_MAPPING=YXZT"}, "mapping order ZYXT"},
      {"mapping over BGL_MAPFILE", {"--mapping", "ZYXT"}, {"BGL_MAPFILE=" + map}, "order ZYXT"},
      {"mapfile over BGL_MAPPING", {"--mapfile", map}, {"BGL_MAPPING=ZYXT"}, "mapping file " + map},
      {"mapfile", {"--mapfile", map}, {"BGL_MAPFILE=/nonexistent"}, "mapping file " + map},
      {"fifo-packets", {"--fifo-packets", "16"}, {"BGL_FIFO_PACKETS=32"}, "16-packet reception"},
      {"hosts", {"--hosts", "2"}, {"BGL_HOSTS=4"}, "2 host(s) over ofi"},
      {"hosts over BGL_HOSTFILE",
       {"--hosts", "1"},
       {"BGL_HOSTFILE=" + two_hosts},
       "64-packet reception FIFOs\n",
       "host(s)"},
      {"hostfile over BGL_HOSTS", {"--hostfile", two_hosts}, {"BGL_HOSTS=3"}, "2 host(s)"},
      {"transport", {"--transport", "shm"}, {"BGL_TRANSPORT=ofi"}, "FIFOs\n", "over ofi"},
      {"log-level", {"--log-level", "warn"}, {"BGL_LOG_LEVEL=loud"}, "8 tasks on"},
      {"vt-params",
       {"--virtual-time", "--vt-params", vt_params},
       {"BGL_VT_PARAMS=/nonexistent"},
       "8 tasks on"},
      {"vt-cpu-factor",
       {"--virtual-time", "--vt-cpu-factor", "1"},
       {"BGL_VT_CPU_FACTOR=fast"},
       "8 tasks on"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args{"-np", "8"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    args.push_back("--dry-run");
    const auto r = bglrun(args, 20, c.env);
    EXPECT_EQ(r.exit_code, 0) << c.option << "\n" << r.output;
    EXPECT_THAT(r.output, HasSubstr(c.expected)) << c.option;
    EXPECT_THAT(r.output, Not(HasSubstr(c.not_expected))) << c.option;
  }
}

TEST(Precedence, FlagsWinOverVariablesInAJob) {
  TempDir dir;
  // --seed and --stats: the statistics name the seed used, in the file the flag named.
  const auto flag_stats = dir / "flag.json";
  const auto env_stats = dir / "env.json";
  auto r = bglrun({"-np", "2", "--seed", "7", "--stats", flag_stats, "true"}, 20,
                  {"BGL_SEED=9", "BGL_STATS=" + env_stats});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(nlohmann::json::parse(read_file(flag_stats))["job"]["seed"], 7u);
  EXPECT_FALSE(std::filesystem::exists(env_stats));

  // --timeout 0 (none) over BGL_TIMEOUT=1: the job runs its 2 s.
  r = bglrun({"-np", "1", "--timeout", "0", "sleep", "2"}, 20, {"BGL_TIMEOUT=1"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_GE(r.seconds, 1.9);

  // --kill-grace 1 over BGL_KILL_GRACE=6: a task that ignores SIGTERM is killed after 1 s.
  r = bglrun(
      {"-np", "1", "--timeout", "1", "--kill-grace", "1", "sh", "-c", "trap '' TERM; sleep 30"}, 30,
      {"BGL_KILL_GRACE=6"});
  EXPECT_EQ(r.exit_code, 124) << r.output;
  EXPECT_LT(r.seconds, 4.5) << r.output;

  // --log-level info over BGL_LOG_LEVEL=off.
  r = bglrun({"-np", "1", "--log-level", "info", "true"}, 20, {"BGL_LOG_LEVEL=off"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("[bglrun info]"));

  // --launcher direct over BGL_LAUNCHER=mpiexec.
  r = bglrun({"-np", "1", "--launcher", "direct", "true"}, 20,
             {"BGL_LAUNCHER=mpiexec", "BGL_MPIEXEC=/nonexistent"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

// An unknown launcher is a configuration error listing the valid ones, from the flag or the
// variable.
TEST(Precedence, UnknownLauncherIsNamed) {
  auto r = bglrun({"-np", "1", "--launcher", "hydra", "true"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("--launcher 'hydra': expected auto, pmi, mpiexec or direct"));
  r = bglrun({"-np", "1", "true"}, 20, {"BGL_LAUNCHER=spawn"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("BGL_LAUNCHER='spawn': expected auto, pmi, mpiexec or direct"));
}

// A named MPICH prefix without an mpiexec is a configuration error naming the flag or variable.
TEST(Precedence, MpichPrefixWithoutMpiexecIsNamed) {
  auto r = bglrun({"-np", "1", "--launcher", "mpiexec", "--mpich-prefix", "/nonexistent", "true"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("--mpich-prefix='/nonexistent' has no executable bin/mpiexec"));
  r = bglrun({"-np", "1", "--launcher", "mpiexec", "true"}, 20,
             {"BGL_MPICH_PREFIX=/nonexistent", "BGL_MPIEXEC="});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("BGL_MPICH_PREFIX='/nonexistent' has no executable bin/mpiexec"));
  // Nothing named and no MPICH beside bglrun or in the cache: the error says how to name one.
  r = bglrun({"-np", "1", "--launcher", "mpiexec", "true"}, 20,
             {"BGL_CACHE_DIR=/nonexistent", "BGL_MPICH_PREFIX=", "BGL_MPIEXEC="});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("use --mpich-prefix or set BGL_MPICH_PREFIX or BGL_MPIEXEC"));
}

TEST(Precedence, SeedFlagAndVariableAcceptTheSameRange) {
  const std::string max = "9223372036854775807";
  auto r = bglrun({"-np", "1", "--seed", max, "--dry-run"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  r = bglrun({"-np", "1", "--dry-run"}, 20, {"BGL_SEED=" + max});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  const std::string range = "out of range; expected an integer in [0, " + max + "]";
  r = bglrun({"-np", "1", "--seed", "9223372036854775808", "--dry-run"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("--seed='9223372036854775808': " + range));
  r = bglrun({"-np", "1", "--dry-run"}, 20, {"BGL_SEED=9223372036854775808"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("BGL_SEED='9223372036854775808': " + range));
}

TEST(Precedence, BothVariablesOfAGroupWithoutAFlagAreAnError) {
  TempDir dir;
  const auto map = dir.write("ranks.map", "0 0 0\n");
  const auto r = bglrun({"-np", "1", "--dry-run"}, 20, {"BGL_MAPPING=XYZT", "BGL_MAPFILE=" + map});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("not both"));
}

// --- the statistics file ----------------------------------------------------------------------

TEST(StatsFile, AnUnwritablePathFailsBeforeTheJobStarts) {
  TempDir dir;
  const auto marker = dir / "ran";
  const auto r = bglrun({"-np", "1", "--stats", dir / "no/such/dir/stats.json", "touch", marker});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("cannot write statistics to " + (dir / "no/such/dir/stats.json") +
                                  ": No such file or directory"));
  EXPECT_FALSE(std::filesystem::exists(marker)) << "the job ran";

  const auto to_dir = bglrun({"-np", "1", "--stats", dir / "", "touch", marker});
  EXPECT_EQ(to_dir.exit_code, 2) << to_dir.output;
  EXPECT_THAT(to_dir.output, HasSubstr("it is a directory"));
  EXPECT_FALSE(std::filesystem::exists(marker)) << "the job ran";
}

TEST(StatsFile, APlantedSymlinkIsReplacedNotFollowed) {
  TempDir dir;
  const auto victim = dir.write("victim.txt", "precious\n");
  const auto stats = dir / "stats.json";
  std::filesystem::create_symlink(victim, stats);
  const auto r = bglrun({"-np", "2", "--stats", stats, "true"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(read_file(victim), "precious\n");
  EXPECT_FALSE(std::filesystem::is_symlink(stats));
  EXPECT_EQ(nlohmann::json::parse(read_file(stats))["job"]["tasks"], 2);
  // Nothing else is left in the directory (the temporary file was renamed).
  int files = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir / ""))
    ++files;
  EXPECT_EQ(files, 2);
}

TEST(StatsFile, AFailedWriteMakesTheJobFail) {
  TempDir dir;
  const auto sub = dir / "out";
  std::filesystem::create_directory(sub);
  // The task removes the directory the statistics were to go to.
  const auto r = bglrun({"-np", "1", "--stats", sub + "/stats.json", "rm", "-rf", sub});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("cannot write statistics to " + sub + "/stats.json"));
}

// --- messages ---------------------------------------------------------------------------------

TEST(Messages, UserTextIsEscapedAndLongTokensAreCut) {
  TempDir dir;
  const auto esc = dir.write("esc.map", std::string("0 0 0\n1 0 \x1b[31mred\0x\n", 22));
  auto r = bglrun({"-np", "2", "--shape", "2x1x1", "--mapfile", esc, "--dry-run"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr(esc + ":2: malformed number \"\\x1b[31mred\\0x\" for z"));
  EXPECT_EQ(r.output.find('\x1b'), std::string::npos) << "an escape sequence reached the terminal";

  const auto long_map = dir.write("long.map", "0 0 " + std::string(1 << 20, '9') + "\n");
  r = bglrun({"-np", "1", "--mapfile", long_map, "--dry-run"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("... (1048576 bytes) is out of range 0..0"));
  EXPECT_LT(r.output.size(), 1000u);

  const auto long_host = dir.write("long.hosts", std::string(100000, 'h') + "\n");
  r = bglrun({"-np", "1", "--hostfile", long_host, "--dry-run"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("(100000 bytes)' is longer than 255 characters"));
  EXPECT_LT(r.output.size(), 1000u);

  const auto ctl_host = dir.write("ctl.hosts", "a\x07 127.0.0.1\n");
  r = bglrun({"-np", "1", "--hostfile", ctl_host, "--dry-run"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr(":1: 'a\\x07' holds a control or non-ASCII character"));

  r = bglrun({"-np", "1", "--mode", "\x1b]0;title\x07", "--dry-run"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("mode='\\x1b]0;title\\x07'"));
}

TEST(Messages, OutOfRangeNumbersAreNotCalledMalformed) {
  TempDir dir;
  const auto map = dir.write("big.map", "0 0 99999999999\n");
  auto r = bglrun({"-np", "1", "--mapfile", map, "--dry-run"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr(map + ":1: z = 99999999999 is out of range 0..0 of shape"));
  r = bglrun({"-np", "99999999999", "true"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("-np='99999999999': out of range; expected an integer in [1, "));
  r = bglrun({"-np", "2", "true"}, 20, {"BGL_FIFO_PACKETS=99999999999999999999"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("BGL_FIFO_PACKETS='99999999999999999999': out of range"));
  r = bglrun({"-np", "1", "--shape", "99999999999x1x1", "--dry-run"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("got 99999999999 (out of range)"));
  r = bglrun({"-np", "1", "--timeout", "1e999", "true"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("--timeout='1e999': out of range"));
  r = bglrun({"-np", "x", "true"});
  EXPECT_THAT(r.output, HasSubstr("-np='x': not a decimal integer"));
}

TEST(Messages, MalformedVariablesAreNamed) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"BGL_SHAPE=abc", "BGL_SHAPE='abc': shape \"abc\""},
      {"BGL_MESH=q", "BGL_MESH='q': mesh dimensions \"q\""},
      {"BGL_MAPPING=XYQ", "BGL_MAPPING='XYQ': mapping order \"XYQ\""},
      {"BGL_TRANSPORT=carrier-pigeon", "BGL_TRANSPORT='carrier-pigeon': expected shm, ofi or auto"},
  };
  for (const auto& [env, message] : cases) {
    const auto r = bglrun({"-np", "1", "--dry-run"}, 20, {env});
    EXPECT_EQ(r.exit_code, 2) << env;
    EXPECT_THAT(r.output, HasSubstr("bglrun: " + message)) << env;
  }
}

TEST(Messages, AnInterruptIsNotCalledAFailedTaskAndCountsAreRight) {
  TempDir dir;
  const auto log = dir / "job.log";
  const int launcher =
      spawn_process({kBglrun, "-np", "4", "--shape", "2x2x1", kScenarios, "hang"}, log);
  ASSERT_EQ(wait_for_pids(log, 4, 30).size(), 4u) << read_file(log);
  kill(launcher, SIGINT);
  EXPECT_EQ(wait_process(launcher, 10), 128 + SIGINT) << read_file(log);
  EXPECT_THAT(read_file(log),
              HasSubstr("received signal 2 (SIGINT: Interrupt): the job was interrupted; "
                        "stopping the 4 tasks"));
  EXPECT_THAT(read_file(log), Not(HasSubstr("the other 4")));

  const auto failed = bglrun({"-np", "4", "--shape", "2x2x1", kScenarios, "fail", "2", "3"});
  EXPECT_THAT(failed.output, HasSubstr("stopping the other 3 tasks"));
}

// The MPI path: bglrun passes the user's SIGINT to mpiexec, which passes it to the ranks; that
// they then die of SIGINT is the interrupt, not a rank's failure.
TEST(Messages, AnInterruptedMpiJobIsReportedAsInterrupted) {
  TempDir dir;
  const auto log = dir / "mpi.log";
  const int launcher =
      spawn_process({"env", std::string("BGL_MPIEXEC=") + FAKE_MPIEXEC_INTERRUPT_PATH, kBglrun,
                     "--launcher", "mpiexec", "-np", "2", "--timeout", "60", kScenarios, "hang"},
                    log);
  ASSERT_EQ(wait_for_pids(log, 2, 30).size(), 2u) << read_file(log);
  usleep(300'000);  // bglrun watches a rank within 5 ms of its pid line
  kill(launcher, SIGINT);
  EXPECT_EQ(wait_process(launcher, 20), 128 + SIGINT) << read_file(log);
  const auto out = read_file(log);
  EXPECT_THAT(out, HasSubstr("received signal 2 (SIGINT: Interrupt): the job was interrupted"));
  EXPECT_THAT(out, Not(HasSubstr("was killed by signal 2"))) << out;
}

}  // namespace
}  // namespace bgl::test
