// MPI programs on the emulated machine through MPICH with the bgl device: the test programs in
// adi3_device/tests/mpi are compiled with the installed mpicc/mpif90 (tools/build_mpich.sh) and
// run with bglrun (through Hydra's mpiexec) in heater, coprocessor and virtual-node mode, with
// mapping files; failures must end the whole job, name the rank, and leave nothing behind.
// Every test is skipped when MPICH with the bgl device is not installed.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "process_runner.hpp"

namespace bgl::test {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

const std::string kBglrun = BGLRUN_PATH;
const std::string kSources = MPI_TEST_SOURCES;
const std::string kExamples = MPI_EXAMPLES;
const std::string kBinDir = MPI_TEST_BIN_DIR;

// BGL_MPICH_PREFIX, else the prefix tools/build_mpich.sh builds for the current sources.
std::string prefix() {
  static const std::string cached = [] {
    if (const char* p = std::getenv("BGL_MPICH_PREFIX"); p && *p) return std::string(p);
    const auto r = run_process({BUILD_MPICH_SCRIPT, "--print-prefix"}, 30);
    std::string out = r.output;
    while (!out.empty() && (out.back() == '\n' || out.back() == ' '))
      out.pop_back();
    return out;
  }();
  return cached;
}

// Rebuilds `out` from `sources` with `compiler` when it is missing or older than a source or
// than libmpi. Serialised across test processes (ctest -j) by a lock file.
bool build(const std::string& compiler, const std::vector<std::string>& sources,
           const std::string& out, std::string& log) {
  fs::create_directories(kBinDir);
  const int lock = open((kBinDir + "/.lock").c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
  flock(lock, LOCK_EX);
  std::error_code ec;
  bool stale = !fs::exists(out);
  const auto built = stale ? fs::file_time_type::min() : fs::last_write_time(out, ec);
  for (const auto& s : sources)
    if (fs::last_write_time(s, ec) > built) stale = true;
  if (fs::last_write_time(prefix() + "/lib/libmpi.so", ec) > built) stale = true;
  // A program loads the libraries of the prefix that built it (its run path): one built by another
  // MPICH prefix (another BGL_CACHE_DIR) would test that prefix's libbglml.
  const std::string stamp = out + ".prefix";
  std::ifstream stamp_in(stamp);
  const std::string built_by((std::istreambuf_iterator<char>(stamp_in)),
                             std::istreambuf_iterator<char>());
  if (built_by != prefix()) stale = true;
  bool ok = true;
  if (stale) {
    std::vector<std::string> argv{prefix() + "/bin/" + compiler, "-O2", "-g", "-o", out + ".tmp"};
    argv.insert(argv.end(), sources.begin(), sources.end());
    const auto r = run_process(argv, 300);
    log = r.output;
    ok = r.exit_code == 0;
    if (ok) fs::rename(out + ".tmp", out, ec);
    if (ok) std::ofstream(stamp) << prefix();
  }
  flock(lock, LOCK_UN);
  close(lock);
  return ok;
}

class Mpi : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(prefix() + "/bin/mpicc"))
      GTEST_SKIP() << "MPICH with the bgl device is not installed at " << prefix()
                   << " (run tools/build_mpich.sh or `ninja mpich`)";
  }

  // A test program of tests/mpi, the examples' hello, or a benchmark ("bench/mpi_wait_cost").
  std::string program(const std::string& name) {
    static constexpr std::string_view kBench = "bench/";
    const bool bench = name.starts_with(kBench);
    const std::string out = kBinDir + "/" + (bench ? name.substr(kBench.size()) : name);
    std::string log;
    const bool fortran = name == "ftest" || name == "boz" || name == "fmpix";
    const std::string src = bench             ? kSources + "/../../" + name + ".c"
                            : name == "hello" ? kExamples + "/hello.c"
                            : name == "boz"   ? kSources + "/boz.f"
                            : name == "fmpix" ? kSources + "/fmpix.f90"
                            : fortran         ? kSources + "/ftest.f90"
                                              : kSources + "/" + name + ".c";
    std::vector<std::string> sources{src};
    if (!fortran && !bench && name != "hello") sources.push_back(kSources + "/mpitest.h");
    std::vector<std::string> compile{src};
    EXPECT_TRUE(build(fortran ? "mpif90" : "mpicc", compile, out, log)) << log;
    return out;
  }

  ProcessResult bglrun(std::vector<std::string> args, double timeout = 240) {
    args.insert(args.begin(), kBglrun);
    return run_process(args, timeout);
  }
};

// Processes running `path` (none may be left behind).
std::vector<int> processes_of(const std::string& path) {
  std::vector<int> out;
  std::error_code ec;
  const auto target = fs::canonical(path, ec);
  for (const auto& e : fs::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::error_code ec2;
    const auto exe = fs::read_symlink(e.path() / "exe", ec2);
    if (!ec2 && exe == target && process_alive(std::stoi(name))) out.push_back(std::stoi(name));
  }
  return out;
}

// Expects no process running `path` to be left within `rounds` tenths of a second, then kills any
// that are, so that one failing test does not disturb the next.
void expect_none_left(const std::string& path, int rounds = 20, const std::string& output = {}) {
  std::vector<int> left;
  for (int i = 0; i < rounds && !(left = processes_of(path)).empty(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_TRUE(left.empty()) << left.size() << " processes left behind"
                            << (output.empty() ? "" : ":\n") << output;
  for (int p : left)
    kill(p, SIGKILL);
}

bool segment_of(int launcher_pid) {
  for (const auto& s : bglemu_segments())
    if (s.find("bglemu." + std::to_string(launcher_pid) + ".") != std::string::npos) return true;
  return false;
}

TEST_F(Mpi, HelloInVirtualNodeModeWithMapfile) {
  const auto hello = program("hello");
  const auto r = bglrun({"-np", "16", "--shape", "2x2x2", "--mode", "vn", "--mapfile",
                         kExamples + "/map-2x2x2-vn.txt", "--timeout", "120", hello});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("hello from rank 0 of 16 on BGL <0,0,0,0> in 2x2x2 vn mode"));
  EXPECT_THAT(r.output, HasSubstr("hello from rank 8 of 16 on BGL <0,0,1,1>"));
  EXPECT_THAT(r.output, HasSubstr("hello from rank 15 of 16 on BGL <0,0,0,1>"));
}

// The netmod's former waiting variables are not silently ignored: rank 0 says what replaced them,
// and the job runs.
TEST_F(Mpi, RetiredWaitingVariablesAreReported) {
  const auto r = run_process({kBglrun, "-np", "2", "--timeout", "60", program("hello")}, 90,
                             {"BGL_NM_SPIN_US=5", "BGL_NM_OVERSUBSCRIBED=1"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("bgl netmod: BGL_NM_SPIN_US is no longer read: MPI ranks wait "
                                  "with the job's waiting policy (BGL_SPIN, BGL_YIELD, "
                                  "BGL_SLEEP_US)"));
  EXPECT_THAT(r.output, HasSubstr("bgl netmod: BGL_NM_OVERSUBSCRIBED is no longer read"));
  EXPECT_THAT(r.output, HasSubstr("hello from rank 1 of 2"));
}

TEST_F(Mpi, Pt2ptHeater2) {
  const auto r = bglrun({"-np", "2", "--mode", "heater", "--timeout", "200", program("pt2pt")});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("pt2pt: OK"));
}

TEST_F(Mpi, Pt2ptHeater2InjectedSendsOnAndOff) {
  // Sends whose only packet left inside bgl_msg_post complete at once by default, without a
  // request (the count is rank 0's, printed at finalize with MPICH's runtime debug output); with
  // BGL_NM_INJECT=0 every send gets a request that the layer's done callback completes, and both
  // pass the same checks.
  const std::vector<std::string> args{kBglrun, "-np", "2", "--timeout", "200", program("pt2pt")};
  const auto on = run_process(args, 240, {"MPIR_CVAR_CH4_RUNTIME_CONF_DEBUG=1"});
  EXPECT_EQ(on.exit_code, 0) << on.output;
  EXPECT_THAT(on.output, HasSubstr("pt2pt: OK"));
  EXPECT_THAT(on.output, ::testing::ContainsRegex("[1-9][0-9]* sends completed at injection"));
  const auto off =
      run_process(args, 240, {"MPIR_CVAR_CH4_RUNTIME_CONF_DEBUG=1", "BGL_NM_INJECT=0"});
  EXPECT_EQ(off.exit_code, 0) << off.output;
  EXPECT_THAT(off.output, HasSubstr("pt2pt: OK"));
  EXPECT_THAT(off.output, HasSubstr(" 0 sends completed at injection"));
}

TEST_F(Mpi, Pt2ptCoprocessor4) {
  const auto r = bglrun({"-np", "4", "--shape", "2x2x1", "--mode", "coprocessor", "--timeout",
                         "200", program("pt2pt")});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("pt2pt: OK"));
}

TEST_F(Mpi, Pt2ptVirtualNode4AdaptiveEager) {
  // Adaptive eager instead of eager (out-of-order packets), XYZT mapping in VN mode.
  const auto r = run_process({kBglrun, "-np", "4", "--shape", "2x1x1", "--mode", "vn", "--mapping",
                              "TXYZ", "--timeout", "200", program("pt2pt")},
                             240, {"BGL_ML_ADAPTIVE_EAGER=1"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("pt2pt: OK"));
}

TEST_F(Mpi, ForcedOnePacketProtocolRefusesLargerMessagesAndEndsTheJob) {
  // pt2pt runs under MPI_ERRORS_RETURN and does not check its sends' codes: a refused send that
  // returned an ordinary error left its peer waiting for the message forever. The refusal is
  // fatal, so the job ends at once (well within --deadlock's 3 s, never by it), naming the
  // message, the limit and the variable.
  const std::string refusal =
      "one-packet protocol forced for 217 bytes; at most 216 fit with this header "
      "(BGL_ML_PROTOCOL=one_packet takes only messages that fit one packet";
  const auto pt2pt = program("pt2pt");
  const auto one = run_process({kBglrun, "-np", "2", "--timeout", "60", pt2pt}, 90,
                               {"BGL_ML_PROTOCOL=one_packet"});
  EXPECT_NE(one.exit_code, 0) << one.output;
  EXPECT_NE(one.exit_code, 124) << one.output;
  EXPECT_THAT(one.output, ::testing::Not(HasSubstr("deadlock"))) << one.output;
  // Hydra's abort path can drop the rank's last output on one host (RankAbortEndsJob).
  if (one.output.find("Abort(") != std::string::npos) {
    EXPECT_THAT(one.output, HasSubstr(refusal)) << one.output;
  }
  // On two hosts bglrun serves the ranks' PMI itself: the report always arrives.
  const auto two = run_process(
      {kBglrun, "--hosts", "2", "-np", "4", "--shape", "2x2x1", "--timeout", "60", pt2pt}, 90,
      {"BGL_ML_PROTOCOL=one_packet"});
  EXPECT_NE(two.exit_code, 0) << two.output;
  EXPECT_NE(two.exit_code, 124) << two.output;
  EXPECT_THAT(two.output, HasSubstr(refusal)) << two.output;
  EXPECT_THAT(two.output, HasSubstr("bglrun: rank 0 on node (0,0,0) t=0 called MPI_Abort (or "
                                    "hit a fatal MPI error)"))
      << two.output;
  expect_none_left(pt2pt);
  // Collectives: MPICH's own algorithms note a failed step's error and go on to the next step
  // (the root of a bcast went on to the tree while its peer waited for the refused message); the
  // refusal stops the job at once instead.
  const auto coll = program("coll");
  const auto one_coll =
      run_process({kBglrun, "-np", "4", "--shape", "2x2x1", "--timeout", "60", coll}, 90,
                  {"BGL_ML_PROTOCOL=one_packet"});
  EXPECT_NE(one_coll.exit_code, 0) << one_coll.output;
  EXPECT_NE(one_coll.exit_code, 124) << one_coll.output;
  EXPECT_THAT(one_coll.output, ::testing::Not(HasSubstr("deadlock"))) << one_coll.output;
  const auto two_coll = run_process(
      {kBglrun, "--hosts", "2", "-np", "4", "--shape", "2x2x1", "--timeout", "60", coll}, 90,
      {"BGL_ML_PROTOCOL=one_packet"});
  EXPECT_NE(two_coll.exit_code, 0) << two_coll.output;
  EXPECT_NE(two_coll.exit_code, 124) << two_coll.output;
  EXPECT_THAT(two_coll.output, HasSubstr("BGL_ML_PROTOCOL=one_packet takes only messages that fit"))
      << two_coll.output;
  expect_none_left(coll);
}

TEST_F(Mpi, CollHeater8) {
  const auto r = bglrun({"-np", "8", "--shape", "2x2x2", "--timeout", "200", program("coll")});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("coll: OK"));
}

TEST_F(Mpi, CollVirtualNode16Mapfile) {
  const auto r = bglrun({"-np", "16", "--shape", "2x2x2", "--mode", "vn", "--mapfile",
                         kExamples + "/map-2x2x2-vn.txt", "--timeout", "200", program("coll")});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("coll: OK"));
}

// The collective hooks see the communicator as job ranks, contiguous bytes and predefined types
// (a preloaded stand-in library, which takes precedence over libbglml's hooks, traces them and
// declines; MPICH computes, coll.c checks).
TEST_F(Mpi, CollectiveHooksGetTranslatedArguments) {
  const auto r =
      run_process({kBglrun, "-np", "4", "--shape", "2x2x1", "--timeout", "200", program("coll")},
                  240, {std::string("LD_PRELOAD=") + COLL_TRACE_LIB});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("coll: OK"));
  EXPECT_THAT(r.output, HasSubstr("bgl_coll_trace: init version=2 progress=yes"));
  EXPECT_THAT(r.output, HasSubstr("dtype=F64 op=SUM in_place=0 size=4 ranks=identity whole_job=1"));
  EXPECT_THAT(r.output, HasSubstr("dtype=F64 op=MAX in_place=1 size=4 ranks=identity whole_job=1"));
  EXPECT_THAT(r.output, HasSubstr("dtype=F64 op=SUM root=3 in_place=0 size=4"));
  // MPI_Comm_split(world, rank % 2, rank): rank 0's half is job ranks 0 and 2.
  EXPECT_THAT(r.output, HasSubstr("size=2 ranks=0,2 whole_job=0"));
  // MPI_Comm_split(world, 0, size - rank): the reversed order.
  EXPECT_THAT(r.output, HasSubstr("size=4 ranks=3,2,1,0 whole_job=1"));
  EXPECT_THAT(r.output, HasSubstr("bgl_coll_trace: allgather bytes="));
  EXPECT_THAT(r.output, HasSubstr("bgl_coll_trace: alltoall bytes="));
  EXPECT_THAT(r.output, HasSubstr("bgl_coll_trace: barrier size=4"));
}

// Unmodified MPI collectives run in bglemu's collectives library: on MPI_COMM_WORLD the
// collective network and the global interrupt, on a split communicator torus algorithms; with
// BGL_NM_COLL_HOOKS=0 MPICH's own algorithms run and the library is never asked.
TEST_F(Mpi, CollectivesRunInTheLibrary) {
  const auto r =
      run_process({kBglrun, "-np", "4", "--shape", "2x2x1", "--timeout", "200", program("coll")},
                  240, {"BGL_LOG_LEVEL=trace"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("coll: OK"));
  EXPECT_THAT(r.output,
              ::testing::ContainsRegex("collectives: barrier 0 B on communicator [0-9]+: gi"));
  EXPECT_THAT(r.output, ::testing::ContainsRegex("collectives: allreduce [0-9]+ B on "
                                                 "communicator [0-9]+: tree"));
  EXPECT_THAT(r.output, ::testing::ContainsRegex("collectives: bcast [0-9]+ B on communicator "
                                                 "[0-9]+: binomial"));
  EXPECT_THAT(r.output, HasSubstr("collectives: allgather"));
  EXPECT_THAT(r.output, HasSubstr("collectives: alltoall"));
  EXPECT_THAT(r.output, HasSubstr("collectives: reduce"));
  const auto off =
      run_process({kBglrun, "-np", "4", "--shape", "2x2x1", "--timeout", "200", program("coll")},
                  240, {"BGL_LOG_LEVEL=trace", "BGL_NM_COLL_HOOKS=0"});
  ASSERT_EQ(off.exit_code, 0) << off.output;
  EXPECT_THAT(off.output, HasSubstr("coll: OK"));
  EXPECT_THAT(off.output, Not(HasSubstr("collectives: ")));
}

// The line of sites.c that holds `text` (1-based), 0 when none does.
int line_of(const std::string& text) {
  std::istringstream in(read_file(kSources + "/sites.c"));
  int n = 0;
  for (std::string line; std::getline(in, line);) {
    ++n;
    if (line.find(text) != std::string::npos) return n;
  }
  return 0;
}

// bglrun --stats: an MPI program's collectives per call site, named by the program's function
// and line (above MPICH and the device's hooks), with the algorithm and rule the library chose,
// the calls of all tasks and their host and BG/L time.
TEST_F(Mpi, CollectiveCallSitesNameTheProgramsLines) {
  const auto stats = fs::temp_directory_path() / ("bgl_mpi_sites." + std::to_string(getpid()));
  const auto r = bglrun({"-np", "8", "--shape", "2x2x2", "--virtual-time", "--stats",
                         stats.string(), "--timeout", "200", program("sites")});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("sites: ok, 4 in my half"));
  EXPECT_THAT(r.output, HasSubstr("collective call sites"));
  const auto j = nlohmann::json::parse(read_file(stats.string()));
  fs::remove(stats);
  ASSERT_TRUE(j.contains("collective_sites")) << j.dump().substr(0, 500);
  const auto& sites = j["collective_sites"]["sites"];
  struct Want {
    const char* call;  // the text of the call's line in sites.c
    const char* function;
    const char* op;
    const char* algorithm;
    int comm_size;
    std::uint64_t bytes, calls;
  };
  for (const Want& w :
       {Want{"MPI_Allreduce(&mine", "exchange", "allreduce", "tree", 8, 8, 48},
        Want{"MPI_Bcast(data", "exchange", "bcast", "tree", 8, 3000, 16},
        Want{"MPI_Barrier(MPI_COMM_WORLD)", "main", "barrier", "gi", 8, 0, 24},
        Want{"MPI_Allreduce(&one", "main", "allreduce", "recursive_doubling", 4, 4, 8}}) {
    const int line = line_of(w.call);
    ASSERT_GT(line, 0) << w.call;
    const auto it = std::find_if(sites.begin(), sites.end(), [&](const nlohmann::json& s) {
      return s["line"] == line && s["op"] == w.op;
    });
    ASSERT_NE(it, sites.end()) << "no row for sites.c:" << line << " " << w.op << " in "
                               << sites.dump(1);
    const auto& s = *it;
    EXPECT_EQ(s["function"], w.function) << s.dump();
    EXPECT_EQ(s["site"], std::string(w.function) + " (sites.c:" + std::to_string(line) + ")");
    EXPECT_EQ(s["algorithm"], w.algorithm) << s.dump();
    EXPECT_FALSE(s["rule"].get<std::string>().empty());
    EXPECT_EQ(s["comm_size"], w.comm_size);
    EXPECT_EQ(s["bytes"], w.bytes);
    EXPECT_EQ(s["tasks"], 8);
    EXPECT_EQ(s["calls"], w.calls);
    EXPECT_GT(s["host_seconds"].get<double>(), 0.0);
    EXPECT_LE(s["host_seconds_slowest_task"].get<double>(), j["job"]["host_seconds"].get<double>());
    EXPECT_GT(s["virtual_seconds"].get<double>(), 0.0);
    EXPECT_LE(s["virtual_seconds_slowest_task"].get<double>(),
              j["virtual_time"]["predicted_seconds"].get<double>());
  }
  EXPECT_EQ(j["collective_sites"]["overflow"]["calls"], 0);
}

// A rendezvous send started before MPI_Allreduce / MPI_Barrier on MPI_COMM_WORLD (collective
// network, global interrupt) completes while its sender waits in them: the receiver needs the data
// before it joins (MPI's progress rule). In heater and virtual-node mode.
TEST_F(Mpi, SendsProgressDuringTreeCollectives) {
  for (const char* mode : {"heater", "vn"}) {
    const auto r = bglrun(
        {"-np", "4", "--shape", "2x2x1", "--mode", mode, "--timeout", "60", program("overlap")},
        90);
    EXPECT_EQ(r.exit_code, 0) << mode << "\n" << r.output;
    EXPECT_THAT(r.output, HasSubstr("overlap: OK")) << mode;
  }
}

TEST_F(Mpi, CollCoprocessor5) {
  // An odd number of ranks (non-power-of-two algorithms), a mesh dimension.
  const auto r = bglrun({"-np", "5", "--shape", "5x1x1", "--mesh", "x", "--mode", "coprocessor",
                         "--timeout", "200", program("coll")});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("coll: OK"));
}

// bglrun --trace of an MPI program: each task's MPI calls ("mpi" spans), in the order the program
// made them, with nothing else at the top; every message-layer event and collective span of the
// task inside one of them.
struct MpiCall {
  std::string name;
  double start = 0, end = 0;
  nlohmann::json args;
};
struct Timeline {
  std::vector<MpiCall> calls;                          // by start
  std::vector<std::pair<double, double>> spans;        // collective and step spans
  std::vector<std::pair<std::string, double>> points;  // message and step begins, ends, instants
};

std::map<int, Timeline> timelines(const nlohmann::json& trace) {
  std::map<int, Timeline> out;
  for (const auto& e : trace.at("traceEvents")) {
    if (e.at("ph") == "M") continue;
    auto& t = out[e.at("pid").get<int>()];
    const std::string ph = e.at("ph"), cat = e.at("cat");
    const double ts = e.at("ts");
    if (cat == "mpi") {
      EXPECT_EQ(ph, "X") << e.dump();
      t.calls.push_back({e.at("name"), ts, ts + e.at("dur").get<double>(),
                         e.value("args", nlohmann::json::object())});
    } else if (ph == "X") {
      t.spans.push_back({ts, ts + e.at("dur").get<double>()});
    } else {
      t.points.push_back({e.dump(), ts});
    }
  }
  for (auto& [pid, t] : out)
    std::stable_sort(t.calls.begin(), t.calls.end(),
                     [](const MpiCall& a, const MpiCall& b) { return a.start < b.start; });
  return out;
}

std::vector<std::string> names_of(const Timeline& t) {
  std::vector<std::string> names;
  for (const auto& c : t.calls)
    names.push_back(c.name);
  return names;
}

// The calls follow each other; everything else the task recorded lies inside one of them. Returns
// the end of the task's last call.
double check_nesting(int pid, const Timeline& t) {
  constexpr double eps = 1e-3;  // the format's resolution: 1 ns
  for (std::size_t i = 0; i + 1 < t.calls.size(); ++i)
    EXPECT_LE(t.calls[i].end, t.calls[i + 1].start + eps)
        << "task " << pid << ": " << t.calls[i].name << " overlaps " << t.calls[i + 1].name;
  const auto inside = [&](double from, double to) {
    return std::any_of(t.calls.begin(), t.calls.end(), [&](const MpiCall& c) {
      return c.start <= from + eps && to <= c.end + eps;
    });
  };
  for (const auto& [from, to] : t.spans)
    EXPECT_TRUE(inside(from, to)) << "task " << pid << ": a span at " << from << " outside MPI";
  for (const auto& [what, ts] : t.points)
    EXPECT_TRUE(inside(ts, ts)) << "task " << pid << ": outside MPI: " << what;
  return t.calls.empty() ? 0.0 : t.calls.back().end;
}

// The C program traced.c on 4 tasks, in host and in virtual time; with tracing off its output is
// the same.
TEST_F(Mpi, TraceShowsEveryTasksMpiCallsInOrderAroundTheirMessages) {
  const std::string exe = program("traced");
  const std::string tag = std::to_string(getpid());
  const auto stats = (fs::temp_directory_path() / ("bgl_mpi_traced." + tag + ".json")).string();
  const auto trace = (fs::temp_directory_path() / ("bgl_mpi_traced." + tag + ".trace")).string();
  std::string traced_line;
  for (const bool virtual_time : {false, true}) {
    std::vector<std::string> args{"-np", "4",       "--shape", "2x2x1",     "--stats",
                                  stats, "--trace", trace,     "--timeout", "120"};
    if (virtual_time) args.push_back("--virtual-time");
    args.push_back(exe);
    const auto r = bglrun(args, 180);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    ASSERT_THAT(r.output, HasSubstr("traced: OK, 4 ranks, sum 10"));
    traced_line = r.output.substr(r.output.find("traced: "));
    traced_line = traced_line.substr(0, traced_line.find('\n'));
    const auto s = nlohmann::json::parse(read_file(stats));
    const auto j = nlohmann::json::parse(read_file(trace));
    fs::remove(stats);
    fs::remove(trace);
    EXPECT_EQ(j["otherData"]["clock"], virtual_time ? "virtual" : "host");
    EXPECT_EQ(j["otherData"]["dropped"], 0);
    const auto tasks = timelines(j);
    ASSERT_EQ(tasks.size(), 4u);
    for (const auto& [pid, t] : tasks) {
      const bool even = pid % 2 == 0;
      const std::vector<std::string> ring = even ? std::vector<std::string>{"MPI_Send", "MPI_Recv"}
                                                 : std::vector<std::string>{"MPI_Recv", "MPI_Send"};
      std::vector<std::string> want{"MPI_Init", "MPI_Comm_rank", "MPI_Comm_size"};
      want.insert(want.end(), ring.begin(), ring.end());
      for (const char* n :
           {"MPI_Irecv", "MPI_Isend", "MPI_Wait", "MPI_Wait", "MPI_Allreduce", "MPI_Bcast",
            "MPI_Comm_split", "MPI_Allreduce", "MPI_Comm_free", "MPI_Barrier", "MPI_Finalize"})
        want.push_back(n);
      ASSERT_EQ(names_of(t), want) << "task " << pid;
      const double last = check_nesting(pid, t);
      // Times within the statistics: the task's BG/L clock, or the job's host time.
      double bound_us = s["job"]["host_seconds"].get<double>() * 1e6;
      for (const auto& task : s["tasks"])
        if (virtual_time && task["rank"] == pid)
          bound_us = task["virtual_clock"]["seconds"].get<double>() * 1e6;
      EXPECT_LE(last, bound_us + 1e-3) << "task " << pid;
      EXPECT_GE(t.calls.front().start, 0.0);
      // The arguments of the common calls.
      const int next = (pid + 1) % 4;
      const auto& send = t.calls[even ? 3 : 4];
      EXPECT_EQ(send.args, (nlohmann::json{{"peer", next}, {"bytes", 8000}, {"comm_size", 4}}))
          << send.args.dump();
      EXPECT_EQ(t.calls[6].args,
                (nlohmann::json{{"peer", next}, {"bytes", 8000}, {"comm_size", 4}}));
      EXPECT_EQ(t.calls[9].args, (nlohmann::json{{"bytes", 8}, {"comm_size", 4}}));
      // MPICH's node-aware broadcast hands the device a step from the node's first task: then
      // the root is not known.
      auto bcast = t.calls[10].args;
      if (bcast.contains("peer")) {
        EXPECT_EQ(bcast["peer"], 1) << "task " << pid;
      }
      bcast.erase("peer");
      EXPECT_EQ(bcast, (nlohmann::json{{"bytes", 8000}, {"comm_size", 4}})) << "task " << pid;
      EXPECT_EQ(t.calls[12].args, (nlohmann::json{{"bytes", 4}, {"comm_size", 2}}));
      EXPECT_EQ(t.calls[14].args, (nlohmann::json{{"comm_size", 4}}));
      // The blocking send's message-layer send begins inside it, to the same peer.
      const auto sent_inside = std::any_of(t.points.begin(), t.points.end(), [&](const auto& p) {
        const auto e = nlohmann::json::parse(p.first);
        return e["cat"] == "message" && e["ph"] == "b" && e["args"]["peer"] == next &&
               send.start <= p.second && p.second <= send.end;
      });
      EXPECT_TRUE(sent_inside) << "task " << pid;
      // The library's allreduce on the world runs inside MPI_Allreduce.
      const auto& allreduce = t.calls[9];
      EXPECT_TRUE(std::any_of(t.spans.begin(), t.spans.end(),
                              [&](const auto& sp) {
                                return allreduce.start <= sp.first &&
                                       sp.second <= allreduce.end + 1e-3;
                              }))
          << "task " << pid;
    }
  }
  // Tracing off: nothing recorded, the same output.
  const auto off = bglrun({"-np", "4", "--shape", "2x2x1", "--timeout", "120", exe}, 180);
  ASSERT_EQ(off.exit_code, 0) << off.output;
  EXPECT_THAT(off.output, HasSubstr(traced_line));
  EXPECT_FALSE(fs::exists(trace));
  EXPECT_THAT(off.output, Not(HasSubstr("trace written")));
}

// A Fortran program's calls (through MPICH's Fortran bindings) are on the timeline the same way.
TEST_F(Mpi, TraceShowsFortranMpiCalls) {
  const std::string exe = program("ftest");
  const auto trace =
      (fs::temp_directory_path() / ("bgl_mpi_ftrace." + std::to_string(getpid()))).string();
  const auto r = bglrun(
      {"-np", "4", "--shape", "2x1x1", "--mode", "vn", "--trace", trace, "--timeout", "120", exe});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("ftest: OK"));
  const auto j = nlohmann::json::parse(read_file(trace));
  fs::remove(trace);
  const auto tasks = timelines(j);
  ASSERT_EQ(tasks.size(), 4u);
  for (const auto& [pid, t] : tasks) {
    std::vector<std::string> want{
        "MPI_Init",       "MPI_Comm_rank", "MPI_Comm_size", "MPI_Get_processor_name",
        "MPI_Sendrecv",   "MPI_Allreduce", "MPI_Bcast",     "MPI_Type_vector",
        "MPI_Type_commit"};
    if (pid == 0) want.push_back("MPI_Send");
    if (pid == 1) want.push_back("MPI_Recv");
    for (const char* n : {"MPI_Type_free", "MPI_Allreduce", "MPI_Finalize"})
      want.push_back(n);
    EXPECT_EQ(names_of(t), want) << "task " << pid;
    check_nesting(pid, t);
    EXPECT_EQ(t.calls.at(4).args,
              (nlohmann::json{{"peer", (pid + 1) % 4}, {"bytes", 40000}, {"comm_size", 4}}));
  }
}

TEST_F(Mpi, FortranVirtualNode4) {
  const auto r = bglrun(
      {"-np", "4", "--shape", "2x1x1", "--mode", "vn", "--timeout", "120", program("ftest")});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("ftest: OK"));
}

// The Fortran wrappers pass -fallow-invalid-boz like Debian's mpif90.mpich: NPB's randi8.f-style
// BOZ constants compile (they did not), and the program runs.
TEST_F(Mpi, FortranBozConstantsCompileLikeWithDebiansWrapper) {
  const auto r = bglrun({"-np", "4", "--timeout", "120", program("boz")});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("boz: OK"));
}

// A program that does not load libmpi itself (a script around it) with --launcher mpiexec: the
// mpiexec comes from bglrun's own prefix (an installed bglrun beside the device's MPICH), else
// from the cache's mpich-current.
TEST_F(Mpi, MpiexecFromBglrunsOwnPrefixElseTheCache) {
  const auto hello = program("hello");
  const fs::path dir = fs::path(kBinDir) / "lookup";
  fs::remove_all(dir);
  fs::create_directories(dir / "installed" / "bin");
  for (const auto& e : fs::directory_iterator(prefix() + "/bin"))
    if (e.path().filename() != "bglrun")  // bglemu may be installed in the prefix too
      fs::create_symlink(e.path(), dir / "installed" / "bin" / e.path().filename());
  fs::create_symlink(prefix() + "/lib", dir / "installed" / "lib");
  fs::copy_file(kBglrun, dir / "installed" / "bin" / "bglrun");
  fs::create_directories(dir / "cache" / "mpich-current");
  fs::create_symlink(prefix(), dir / "cache" / "mpich-current" / "prefix");
  const std::string script = (dir / "hello.sh").string();
  std::ofstream(script) << "#!/bin/sh\nexec " << hello << "\n";
  fs::permissions(script, fs::perms::owner_all);
  const auto run = [&](const std::string& bglrun, const std::string& cache) {
    return run_process(
        {"env", "-u", "BGL_MPICH_PREFIX", "-u", "BGL_MPIEXEC", "BGL_CACHE_DIR=" + cache, bglrun,
         "-np", "4", "--launcher", "mpiexec", "--log-level", "info", "--timeout", "120", script},
        240);
  };
  auto r = run((dir / "installed" / "bin" / "bglrun").string(), "/nonexistent");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("started " + (dir / "installed" / "bin" / "mpiexec").string()));
  EXPECT_THAT(r.output, HasSubstr("hello from rank 3 of 4"));
  r = run(kBglrun, (dir / "cache").string());
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("started " + (dir / "cache").string()));
  EXPECT_THAT(r.output, HasSubstr("hello from rank 3 of 4"));
  r = run(kBglrun, "/nonexistent");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("use --mpich-prefix or set BGL_MPICH_PREFIX"));
  fs::remove_all(dir);
}

// A million MPI_Test calls (and other non-blocking polls) on a receive that cannot complete yet
// while the sender waits in a synchronous send: each call returns at once instead of idling like
// a blocking wait, so the rounds take seconds (with a nap per call they took minutes). Heater and
// coprocessor mode with 2 ranks; virtual-node mode with 4, more ranks than the machine's 2 cores,
// where idle polls give the core away once and the two extra ranks sleep in a barrier.
TEST_F(Mpi, NonBlockingCallsReturnAtOnce) {
  const auto polling = program("polling");
  for (const char* mode : {"heater", "vn", "coprocessor"}) {
    const bool vn = std::string(mode) == "vn";
    const auto r = bglrun(
        {"-np", vn ? "4" : "2", "--shape", "2x1x1", "--mode", mode, "--timeout", "120", polling},
        150);
    EXPECT_EQ(r.exit_code, 0) << mode << "\n" << r.output;
    EXPECT_THAT(r.output, HasSubstr("polling: OK")) << mode << "\n" << r.output;
  }
}

// MPICH's MPI_Init loads the host's topology with hwloc; bglrun discovers it once and every rank
// reads the same XML file (docs/CONFIGURATION.md, "HWLOC_XMLFILE"), removed when the job ends. A
// user's own choice of hwloc's discovery wins: the ranks then get no file.
TEST_F(Mpi, RanksShareOneTopologyFileUnlessTheUserChoseHwlocsDiscovery) {
  const auto hwtopo = program("hwtopo");
  const auto r = bglrun({"-np", "4", "--shape", "2x2x1", "--timeout", "60", hwtopo});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("hwtopo: OK")) << r.output;
  const auto at = r.output.find("hwtopo: file ");
  ASSERT_NE(at, std::string::npos) << r.output;
  const auto start = at + std::string("hwtopo: file ").size();
  const std::string path = r.output.substr(start, r.output.find(' ', start) - start);
  EXPECT_THAT(path, HasSubstr("bglrun-topology.")) << r.output;
  EXPECT_THAT(r.output, HasSubstr("every rank topology")) << r.output;
  EXPECT_FALSE(fs::exists(path)) << path << " left behind";

  setenv("HWLOC_COMPONENTS", "-linuxio,-pci", 1);
  const auto own = bglrun({"-np", "2", "--shape", "2x1x1", "--timeout", "60", hwtopo});
  unsetenv("HWLOC_COMPONENTS");
  EXPECT_EQ(own.exit_code, 0) << own.output;
  EXPECT_THAT(own.output, HasSubstr("hwtopo: no file")) << own.output;
  EXPECT_THAT(own.output, HasSubstr("hwtopo: OK")) << own.output;
}

// bglrun's PMI server keeps the ranks' sockets in its own thread's descriptor table: the table
// fork() copies into each rank holds none of them (it held two per rank, so each of 1,024 ranks
// closed 2,048 inherited descriptors at exec).
TEST_F(Mpi, RanksDoNotInheritEachOthersPmiSockets) {
  const auto r =
      bglrun({"-np", "48", "--shape", "4x4x3", "--timeout", "120", program("launcher_fds")});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("launcher_fds: OK")) << r.output;
  const auto at = r.output.find("launcher descriptors ");
  ASSERT_NE(at, std::string::npos) << r.output;
  const int descriptors =
      std::atoi(r.output.c_str() + at + std::string("launcher descriptors ").size());
  EXPECT_GT(descriptors, 2) << r.output;
  EXPECT_LT(descriptors, 48) << "the launcher holds descriptors per rank: " << r.output;
}

// A rank alone in its communicator completes 400 non-blocking collectives without sleeping in
// their waits: MPICH's progress hooks finish them without a packet, and the device's blocking wait
// returns when MPICH has completed requests since its last round (a nap per wait made MPICH's
// coll/nonblocking3 at 1 rank take 18 s). The same program checks its results at 4 ranks.
TEST_F(Mpi, ARankAloneCompletesNonBlockingCollectivesWithoutSleeping) {
  const auto alone = program("alone");
  const auto stats = fs::temp_directory_path() / ("bgl_mpi_alone." + std::to_string(getpid()));
  const auto r =
      bglrun({"-np", "1", "--shape", "1x1x1", "--stats", stats.string(), "--timeout", "60", alone});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("alone: OK, 400 rounds"));
  const auto j = nlohmann::json::parse(read_file(stats.string()));
  fs::remove(stats);
  const auto sleeps = j["tasks"][0]["counters"]["sleeps"].get<std::uint64_t>();
  EXPECT_LT(sleeps, 40u) << "waits that slept for a packet that never comes";
  const auto four = bglrun({"-np", "4", "--shape", "2x2x1", "--timeout", "60", alone});
  EXPECT_EQ(four.exit_code, 0) << four.output;
  EXPECT_THAT(four.output, HasSubstr("alone: OK, 400 rounds")) << four.output;
}

// Virtual time: MPI_Wtime is the BG/L clock only when asked; a 1-byte round trip between torus
// neighbours is then twice the predicted one-packet half round trip (3.36 us, Table 1: 3.35).
TEST_F(Mpi, WtimeIsVirtualOnlyWhenAsked) {
  const auto wtime = program("wtime");
  const auto on = bglrun({"-np", "2", "--shape", "2x1x1", "--virtual-time", wtime});
  EXPECT_EQ(on.exit_code, 0) << on.output;
  EXPECT_THAT(on.output, HasSubstr("wtime: global=1 tick=1.429e-09")) << on.output;
  EXPECT_THAT(on.output, HasSubstr("round_trip_us=6.7")) << on.output;
  // The first MPI_Barrier is the global interrupt's 1.50 us (not a node-aware composition).
  EXPECT_THAT(on.output, HasSubstr("start=0.000001500")) << on.output;
  EXPECT_THAT(on.output, HasSubstr("predicted BG/L time")) << on.output;
  const auto off = bglrun({"-np", "2", "--shape", "2x1x1", wtime});
  EXPECT_EQ(off.exit_code, 0) << off.output;
  EXPECT_THAT(off.output, HasSubstr("wtime: global=0")) << off.output;
  EXPECT_THAT(off.output, Not(HasSubstr("predicted BG/L time"))) << off.output;
}

TEST_F(Mpi, VirtualTimeOnTwoHostsIsOneHostsTime) {
  // The same MPI program on one host and on two: MPI_Wtime's round trips and the predicted time
  // to the cycle (every packet between the ranks crosses the hosts' agents with its stamp, and
  // bglrun gives both the same collective selection; docs/VIRTUAL_TIME.md, "Several hosts").
  const auto wtime = program("wtime");
  const std::vector<std::string> job{"-np",       "2",   "--shape", "2x1x1", "--virtual-time",
                                     "--timeout", "120", wtime};
  auto two_args = job;
  two_args.insert(two_args.begin(), {"--hosts", "2"});
  const auto one = bglrun(job), two = bglrun(two_args);
  ASSERT_EQ(one.exit_code, 0) << one.output;
  ASSERT_EQ(two.exit_code, 0) << two.output;
  const std::regex trip("round_trip_us=[0-9.]+"),
      predicted("predicted BG/L time [0-9.]+ us \\(([0-9]+) cycles");
  std::smatch a, b;
  ASSERT_TRUE(std::regex_search(one.output, a, trip)) << one.output;
  ASSERT_TRUE(std::regex_search(two.output, b, trip)) << two.output;
  EXPECT_EQ(a.str(), b.str());
  ASSERT_TRUE(std::regex_search(one.output, a, predicted)) << one.output;
  ASSERT_TRUE(std::regex_search(two.output, b, predicted)) << two.output;
  EXPECT_EQ(a[1].str(), b[1].str());
}

// Oversubscribed: waiting ranks spin briefly, yield, then sleep on their doorbell, so the CPU
// time of 7 (63) ranks waiting for 3 s stays far below what busy polling would burn. idle.c sums
// the CPU time (user + system, getrusage) of the waiting rank processes themselves, so other
// processes on the machine do not count, and compares it with a fraction of cores x wall time.
TEST_F(Mpi, IdleRanksYieldTheCpu8) {
  // 7 waiting ranks take about 2% of the cores; the default limit is 25%.
  const auto r = bglrun({"-np", "8", "--shape", "2x2x2", "--timeout", "60", program("idle"), "2"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("idle: OK")) << r.output;
}
TEST_F(Mpi, IdleRanksYieldTheCpu64VirtualNode) {
  // The limit is 50% of the cores, between what the device costs and what polling costs, a
  // factor of about two from each (measured on the 2-core VM with build/bin/bglrun -np 64 --shape
  // 4x4x2 --mode vn idle 2):
  //  - the device: 63 sleepers wake up on their sleep timeouts (at most every 20 ms), and each
  //    wake-up costs some 100 us of CPU (the doorbell's memory barrier on every core, MPICH's
  //    progress loop): 14-21% of the cores with the machine otherwise idle or next to busy loops,
  //    25.3% next to a compiler (whose cache and memory traffic makes each wake-up dearer: the
  //    ranks' own CPU time grew, so 25% was no limit for a shared machine);
  //  - polling: the same ranks spinning instead of sleeping (the netmod's former BGL_NM_SPIN_US
  //    set to 100 s) took 145% (wall time counts from rank 0's view), only yielding 97%; stock
  //    MPICH polls.
  const auto r = bglrun({"-np", "64", "--shape", "4x4x2", "--mode", "vn", "--timeout", "120",
                         program("idle"), "2", "0.5"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("idle: OK")) << r.output;
}

// Oversubscribed (32 tasks a core: waits sleep at once), a task waiting on the global interrupt
// or the tree is woken by the operation's end, not by time-outs: rank 0 comes 0.6 s late to a
// barrier and an allreduce, and no other rank switches out more than a few times meanwhile (the
// wait policy's safety-net re-check is 200 ms here; re-checks every 20 ms were 30 switches, and
// with 1,024 tasks four of five context switches of an allreduce).
TEST_F(Mpi, TasksWaitingOnTheHardwareSleepUntilItsEnd) {
  const auto r =
      bglrun({"-np", "64", "--shape", "4x4x4", "--timeout", "120", program("late"), "0.6"}, 150);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("late: OK")) << r.output;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      r.output, m, std::regex("barrier_switches ([0-9]+) allreduce_switches ([0-9]+)")))
      << r.output;
  EXPECT_LE(std::stoi(m[1].str()), 8) << r.output;
  EXPECT_LE(std::stoi(m[2].str()), 10) << r.output;
}

// The blocking-call cost benchmark runs and reports each task's switches per call: at 32 tasks a
// core one sleep per hardware operation (a task that arrives last does not sleep at all), however
// many packets the operation takes. A sum of one double is one sleep although it takes two tree
// operations (the task that completes phase 1 injects everybody's phase 2); 512 doubles are 16
// packets a phase, two sleeps (each task slept 34 times per call when every result packet rang
// the doorbell); an allgather of 8 doubles a rank is one 16-packet tree operation. An alltoall of
// one double per peer (63 one-packet messages in, all sends posted at once) sleeps once: its
// messages are counted and wake the task at the last (it slept 5-6 times when each woke it).
TEST_F(Mpi, WaitCostBenchmarkCountsOneSleepPerOperation) {
  const auto cost = program("bench/mpi_wait_cost");
  const std::regex switches("voluntary_cs ([0-9.]+) ");
  struct Case {
    const char* op;
    const char* count;
    double most;
  };
  for (const auto& [op, count, most] :
       {Case{"barrier", "1", 1.2}, Case{"allreduce", "1", 1.2}, Case{"allreduce", "512", 2.2},
        Case{"allgather", "8", 1.2}, Case{"alltoall", "1", 1.5}}) {
    const auto r =
        bglrun({"-np", "64", "--shape", "4x4x4", "--timeout", "120", cost, "100", op, count}, 150);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    std::smatch m;
    ASSERT_TRUE(std::regex_search(r.output, m, switches)) << r.output;
    EXPECT_LE(std::stod(m[1].str()), most) << op << " of " << count << ": " << r.output;
  }
}

// Every rank blocked in MPI_Recv for a message nobody sends: bglrun stops the job within seconds
// as a deadlock and says that each rank waits for packets. The device waits through the message
// layer's wait, which publishes what the task sleeps for (a wait of its own would show only a
// doorbell).
TEST_F(Mpi, BlockedReceivesAreADeadlockWaitingForPackets) {
  const auto r = bglrun({"-np", "4", "--shape", "2x2x1", "--timeout", "120", "--deadlock", "2",
                         program("die"), "0", "hang"},
                        150);
  EXPECT_EQ(r.exit_code, 125) << r.output;
  EXPECT_THAT(r.output, HasSubstr("bglrun: deadlock: every task has been waiting for 2."));
  EXPECT_THAT(r.output, HasSubstr("ranks 0-3 wait for packets (asleep on its reception doorbell)"))
      << r.output;
  EXPECT_LT(r.seconds, 60) << r.output;
}

// A rank dies; bglrun ends the job, names the rank, and leaves no segment and no process.
std::string expect_death(const std::string& die, const std::string& how, int victim, int np,
                         const std::string& expect, const std::string& culprit = "",
                         const std::string& launcher = "auto", int* exit_code = nullptr) {
  const std::string log = ::testing::TempDir() + "/die-" + how + "." + std::to_string(getpid());
  const int pid =
      spawn_process({kBglrun, "--launcher", launcher, "-np", std::to_string(np), "--mode", "vn",
                     "--timeout", "60", die, std::to_string(victim), how},
                    log);
  const int code = wait_process(pid, 120);
  if (exit_code) *exit_code = code;
  const std::string out = read_file(log);
  EXPECT_NE(code, 0) << out;
  EXPECT_NE(code, -1) << "bglrun did not end: " << out;
  EXPECT_NE(code, 124) << "the job ran into its timeout instead of ending: " << out;
  EXPECT_THAT(out,
              HasSubstr(culprit.empty() ? "bglrun: rank " + std::to_string(victim) + " " : culprit))
      << out;
  EXPECT_THAT(out, HasSubstr(expect)) << out;
  EXPECT_FALSE(segment_of(pid)) << "segment left behind";
  expect_none_left(die);
  return out;
}

TEST_F(Mpi, RankKilledEndsJob) {
  expect_death(program("die"), "kill", 2, 4, "SIGKILL");
}
TEST_F(Mpi, RankKilledEndsJobThroughHydra) {
  expect_death(program("die"), "kill", 2, 4, "SIGKILL", "", "mpiexec");
}
TEST_F(Mpi, UnservedPmiCommandEndsJob) {
  int code = 0;
  const auto out = expect_death(program("die"), "publish", 1, 4,
                                "name publishing are not supported: the partition is fixed",
                                "bglrun: rank 1 on node (1,0,0) t=0 sent a PMI command bglrun "
                                "does not serve: 'cmd=publish_name",
                                "auto", &code);
  EXPECT_EQ(code, 1) << out;
}
TEST_F(Mpi, RankSegfaultEndsJob) {
  expect_death(program("die"), "segv", 1, 4, "SIGSEGV");
}
TEST_F(Mpi, RankExitEndsJob) {
  expect_death(program("die"), "exit", 3, 4, "exited with code 3");
}
TEST_F(Mpi, RankAbortEndsJob) {
  // bglrun serves the ranks' PMI: the abort comes to it from the rank itself, which it names, and
  // the job ends with MPI_Abort's error code.
  int code = 0;
  const auto out = expect_death(program("die"), "abort", 1, 4,
                                "called MPI_Abort (or hit a fatal MPI error) with code 4",
                                "bglrun: rank 1 on node (1,0,0) t=0 ", "auto", &code);
  EXPECT_EQ(code, 4) << out;
  EXPECT_THAT(out, ::testing::Not(::testing::ContainsRegex("bglrun: rank [023] "))) << out;
}
TEST_F(Mpi, RankAbortEndsJobThroughHydra) {
  // bglrun returns MPI_Abort's error code and names the rank from MPICH's report ("Abort(4) on
  // node 1 (rank 1 in comm 0)"). Hydra's abort path can drop the ranks' last output, the report
  // included (mpiexec kills its proxy within a second): then bglrun names no rank, never a wrong
  // one.
  const auto out = expect_death(program("die"), "abort", 1, 4, "mpiexec exited with code 4",
                                "mpiexec exited with code 4", "mpiexec");
  if (out.find("Abort(4) on node 1 ") != std::string::npos) {
    EXPECT_THAT(out, HasSubstr("bglrun: rank 1 on node (1,0,0) t=0")) << out;
  }
  EXPECT_THAT(out, ::testing::Not(::testing::ContainsRegex("bglrun: rank [023] "))) << out;
}

TEST_F(Mpi, TimeoutAndInterruptLeaveNothing) {
  const auto die = program("die");
  // "hang": nobody dies, everybody waits for a message that never comes.
  auto r = bglrun({"-np", "4", "--timeout", "3", die, "0", "hang"}, 60);
  EXPECT_EQ(r.exit_code, 124) << r.output;
  EXPECT_THAT(r.output, HasSubstr("timed out"));

  const std::string log = ::testing::TempDir() + "/die-int." + std::to_string(getpid());
  const int pid = spawn_process({kBglrun, "-np", "4", "--timeout", "60", die, "0", "hang"}, log);
  std::this_thread::sleep_for(std::chrono::seconds(3));
  kill(pid, SIGINT);
  const int code = wait_process(pid, 30);
  EXPECT_EQ(code, 128 + SIGINT) << read_file(log);
  EXPECT_FALSE(segment_of(pid));
  expect_none_left(die);
}

// ---- Topology: the Blue Gene extensions (mpix.h) and torus-aware Cartesian/graph placement ----

// A mapping file with every slot of the shape in a fixed pseudo-random order (t column when two
// tasks share a node), written into the test binaries' directory.
std::string scattered_mapfile(const std::string& name, int x, int y, int z, int tpn,
                              unsigned seed) {
  std::vector<std::array<int, 4>> slots;
  for (int t = 0; t < tpn; ++t)
    for (int k = 0; k < z; ++k)
      for (int j = 0; j < y; ++j)
        for (int i = 0; i < x; ++i)
          slots.push_back({i, j, k, t});
  std::mt19937 rng(seed);
  std::shuffle(slots.begin(), slots.end(), rng);
  fs::create_directories(kBinDir);
  const std::string path = kBinDir + "/" + name;
  std::ofstream out(path);
  out << "# scattered mapping, seed " << seed << "\n";
  for (const auto& s : slots) {
    out << s[0] << ' ' << s[1] << ' ' << s[2];
    if (tpn > 1) out << ' ' << s[3];
    out << '\n';
  }
  return path;
}

struct TopoLine {
  int members = -1, max_hops = -1, total_hops = -1;
};

// "<label>: N members, max hops M, total hops H" (cart) or "<label>: max hops M, total hops H".
TopoLine topo_line(const std::string& output, const std::string& label) {
  TopoLine t;
  const auto at = output.find(label + ": ");
  if (at == std::string::npos) return t;
  const auto line = output.substr(at + label.size() + 2, output.find('\n', at) - at);
  if (std::sscanf(line.c_str(), "%d members, max hops %d, total hops %d", &t.members, &t.max_hops,
                  &t.total_hops) != 3)
    std::sscanf(line.c_str(), "max hops %d, total hops %d", &t.max_hops, &t.total_hops);
  return t;
}

TEST_F(Mpi, MpixMatchesEveryOrderHeater) {
  const auto mpix = program("mpix");
  std::string order = "XYZ";  // every order: the 6 permutations
  do {
    const auto r = bglrun({"-np", "16", "--shape", "4x2x2", "--mapping", order, "--timeout", "120",
                           mpix, "4x2x2", "1", "-", "order:" + order});
    EXPECT_EQ(r.exit_code, 0) << order << "\n" << r.output;
    EXPECT_THAT(r.output, HasSubstr("mpix: OK (16 ranks, 0 errors)")) << order;
  } while (std::next_permutation(order.begin(), order.end()));
}

TEST_F(Mpi, MpixMatchesEveryOrderVirtualNodeAndMesh) {
  const auto mpix = program("mpix");
  std::string order = "TXYZ";  // every order: the 24 permutations
  do {
    const auto r =
        bglrun({"-np", "16", "--shape", "2x2x2", "--mode", "vn", "--mesh", "z", "--mapping", order,
                "--timeout", "120", mpix, "2x2x2", "2", "z", "order:" + order});
    EXPECT_EQ(r.exit_code, 0) << order << "\n" << r.output;
    EXPECT_THAT(r.output, HasSubstr("mpix: OK (16 ranks, 0 errors)")) << order;
  } while (std::next_permutation(order.begin(), order.end()));
}

TEST_F(Mpi, MpixMatchesScatteredMapfiles) {
  const auto mpix = program("mpix");
  const auto vn = scattered_mapfile("mpix-vn.map", 2, 2, 2, 2, 17);
  auto r = bglrun({"-np", "16", "--shape", "2x2x2", "--mode", "vn", "--mapfile", vn, "--timeout",
                   "120", mpix, "2x2x2", "2", "-", "file:" + vn});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("mpix: OK (16 ranks, 0 errors)"));
  const auto heater = scattered_mapfile("mpix-heater.map", 4, 2, 2, 1, 23);
  r = bglrun({"-np", "16", "--shape", "4x2x2", "--mode", "coprocessor", "--mesh", "x", "--mapfile",
              heater, "--timeout", "120", mpix, "4x2x2", "1", "x", "file:" + heater});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("mpix: OK (16 ranks, 0 errors)"));
}

TEST_F(Mpi, MpixPartialPartition) {
  // 12 tasks on a 16-slot partition: 4 places without a task, no MPIX_Cart_comm_create.
  const auto r = bglrun({"-np", "12", "--shape", "2x2x2", "--mode", "vn", "--mapping", "TXYZ",
                         "--timeout", "120", program("mpix"), "2x2x2", "2", "-", "order:TXYZ"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("mpix: OK (12 ranks, 0 errors)"));
}

TEST_F(Mpi, MpixFortran) {
  const auto f = program("fmpix");
  auto r =
      bglrun({"-np", "8", "--shape", "2x2x2", "--mapping", "ZYX", "--timeout", "120", f, "ZYX"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("fmpix: OK (8 ranks)"));
  r = bglrun({"-np", "16", "--shape", "2x2x2", "--mode", "vn", "--mapping", "TXYZ", "--timeout",
              "120", f, "TXYZ"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("fmpix: OK (16 ranks)"));
}

// The non-matching shapes of topo.c give correct communicators (topo.c checks them) and the
// reordered ones never more hops than MPI's identity placement.
void expect_nonmatching_shapes_correct(const std::string& output) {
  for (const std::string name : {"cart3x", "line"}) {
    const auto id = topo_line(output, name + " reorder=0");
    const auto re = topo_line(output, name + " reorder=1");
    EXPECT_GT(re.members, 0) << name << "\n" << output;
    EXPECT_EQ(re.members, id.members) << name;
    EXPECT_LE(re.total_hops, id.total_hops) << name;
  }
  for (const std::string ring : {"ring graph"}) {
    const auto re = topo_line(output, ring + " reorder=1");
    const auto id = topo_line(output, ring + " reorder=0");
    EXPECT_GE(re.total_hops, 0) << ring << "\n" << output;
    EXPECT_LE(re.total_hops, id.total_hops) << ring;
    // the job fills its torus partition: the ring follows one of its Hamiltonian cycles
    EXPECT_EQ(re.max_hops, 1) << ring << "\n" << output;
  }
}

TEST_F(Mpi, CartReorderIsNearestNeighbourOn8x8x4) {
  // A 3D periodic Cartesian communicator (MPI_Dims_create's 8x8x4) is all nearest-neighbour
  // after reorder, from an order and from a scattered mapping file.
  const auto topo = program("topo");
  const auto map = scattered_mapfile("topo-8x8x4.map", 8, 8, 4, 1, 29);
  for (const auto& mapping :
       {std::vector<std::string>{"--mapping", "XZY"}, std::vector<std::string>{"--mapfile", map}}) {
    std::vector<std::string> args{"-np", "256", "--shape", "8x8x4"};
    args.insert(args.end(), mapping.begin(), mapping.end());
    args.insert(args.end(), {"--timeout", "280", topo});
    const auto r = bglrun(args, 290);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_THAT(r.output, HasSubstr("topo: OK (256 ranks, 0 errors)"));
    EXPECT_THAT(r.output, HasSubstr("dims 8 8 4"));
    const auto re = topo_line(r.output, "cart3d reorder=1");
    EXPECT_EQ(re.members, 256) << r.output;
    EXPECT_EQ(re.max_hops, 1) << r.output;
    EXPECT_EQ(re.total_hops, 3 * 256);
    EXPECT_GT(topo_line(r.output, "cart3d reorder=0").max_hops, 1) << mapping[1];
    expect_nonmatching_shapes_correct(r.output);
  }
}

TEST_F(Mpi, CartReorderIsNearestNeighbourOn8x8x8) {
  // The case: 512 tasks on 8x8x8 with a scattered mapping file (about 110 s on the
  // loaded 2-core machine).
  const auto map = scattered_mapfile("topo-8x8x8.map", 8, 8, 8, 1, 41);
  const auto r = bglrun(
      {"-np", "512", "--shape", "8x8x8", "--mapfile", map, "--timeout", "280", program("topo")},
      290);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("topo: OK (512 ranks, 0 errors)"));
  EXPECT_THAT(r.output, HasSubstr("dims 8 8 8"));
  const auto re = topo_line(r.output, "cart3d reorder=1");
  EXPECT_EQ(re.members, 512);
  EXPECT_EQ(re.max_hops, 1) << r.output;
  EXPECT_EQ(re.total_hops, 3 * 512);
  expect_nonmatching_shapes_correct(r.output);
}

TEST_F(Mpi, CartReorderVirtualNodeFoldsTheNodesTasks) {
  // 4x4x2 in VN mode: 64 tasks, MPI_Dims_create 4x4x4 (x and t fold into one dimension); every
  // Cartesian neighbour on the same node or one hop away.
  const auto topo = program("topo");
  const auto map = scattered_mapfile("topo-vn.map", 4, 4, 2, 2, 31);
  for (const auto& mapping : {std::vector<std::string>{"--mapping", "TXYZ"},
                              std::vector<std::string>{"--mapfile", map}}) {
    std::vector<std::string> args{"-np", "64", "--shape", "4x4x2", "--mode", "vn"};
    args.insert(args.end(), mapping.begin(), mapping.end());
    args.insert(args.end(), {"--timeout", "200", topo});
    const auto r = bglrun(args);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_THAT(r.output, HasSubstr("topo: OK (64 ranks, 0 errors)"));
    EXPECT_THAT(r.output, HasSubstr("dims 4 4 4"));
    const auto re = topo_line(r.output, "cart3d reorder=1");
    EXPECT_EQ(re.members, 64);
    EXPECT_LE(re.max_hops, 1) << r.output;
    expect_nonmatching_shapes_correct(r.output);
  }
}

// One line of distgraph.c's report: hops of every process's declared out-edges, and of the
// graph numbered by the new ranks.
struct DistGraphLine {
  int max_hops = -1, total_hops = -1, new_max_hops = -1, new_total_hops = -1, renamed = -1;
};

DistGraphLine distgraph_line(const std::string& output, const std::string& label) {
  DistGraphLine l;
  const auto at = output.find("distgraph " + label + ":");
  if (at == std::string::npos) return l;
  std::sscanf(output.c_str() + at + label.size() + 11,
              " max hops %d, total hops %d; by new rank: max hops %d, total hops %d; renamed %d",
              &l.max_hops, &l.total_hops, &l.new_max_hops, &l.new_total_hops, &l.renamed);
  return l;
}

// distgraph.c under a scattered mapping: every process declares a ring and a periodic 3D stencil
// (4x4x4) in each of the three ways, and checks itself that after reorder it has exactly the
// edges and weights it declared, their ranks translated to the new communicator, and that
// neighbourhood traffic arrives. Here: with BGL_NM_TOPO_DIST_GRAPH=1 the graph numbered by the new
// ranks is placed (every stencil neighbour a torus neighbour or on the same node), the processes'
// own edges are as far apart as before (reorder renames, nothing moves); without it reorder keeps
// every rank.
void expect_dist_graph_placed(const std::string& out, bool heater) {
  for (const std::string how : {"adjacent", "create", "create-foreign"}) {
    const auto id = distgraph_line(out, "stencil " + how + " reorder=0");
    const auto re = distgraph_line(out, "stencil " + how + " reorder=1");
    ASSERT_GT(id.total_hops, 0) << how << "\n" << out;
    EXPECT_EQ(re.total_hops, id.total_hops) << how;
    EXPECT_GT(id.new_max_hops, 1) << how;
    EXPECT_EQ(re.new_max_hops, 1) << how << "\n" << out;
    // heater: 6 one-hop neighbours each; VN: the grid's third dimension folds z and t, its
    // neighbours alternately on the same node and one hop away
    EXPECT_EQ(re.new_total_hops, heater ? 6 * 64 : 5 * 64) << how;
    const auto ring_id = distgraph_line(out, "ring " + how + " reorder=0");
    const auto ring_re = distgraph_line(out, "ring " + how + " reorder=1");
    EXPECT_LT(ring_re.new_total_hops, ring_id.new_total_hops / 2) << how << "\n" << out;
    EXPECT_EQ(ring_re.new_max_hops, 1) << how << "\n" << out;  // a Hamiltonian cycle
  }
}

TEST_F(Mpi, DistGraphReorderKeepsEveryProcesssEdges) {
  const auto distgraph = program("distgraph");
  const auto heater_map = scattered_mapfile("dist-heater.map", 4, 4, 4, 1, 47);
  const auto vn_map = scattered_mapfile("dist-vn.map", 4, 4, 2, 2, 43);
  for (const bool heater : {true, false}) {
    const std::vector<std::string> args{kBglrun,
                                        "-np",
                                        "64",
                                        "--shape",
                                        heater ? "4x4x4" : "4x4x2",
                                        "--mode",
                                        heater ? "heater" : "vn",
                                        "--mapfile",
                                        heater ? heater_map : vn_map,
                                        "--timeout",
                                        "200",
                                        distgraph};
    const auto on = run_process(args, 240, {"BGL_NM_TOPO_DIST_GRAPH=1"});
    ASSERT_EQ(on.exit_code, 0) << on.output;
    EXPECT_THAT(on.output, HasSubstr("distgraph: OK (64 ranks, 0 errors)"));
    EXPECT_THAT(on.output, HasSubstr("dims 4 4 4"));
    expect_dist_graph_placed(on.output, heater);
    const auto off = run_process(args, 240);
    ASSERT_EQ(off.exit_code, 0) << off.output;
    EXPECT_THAT(off.output, HasSubstr("distgraph: OK (64 ranks, 0 errors)"));
    for (const std::string g : {"ring", "stencil"})
      for (const std::string how : {"adjacent", "create", "create-foreign"}) {
        const auto re = distgraph_line(off.output, g + " " + how + " reorder=1");
        EXPECT_EQ(re.new_total_hops, re.total_hops) << g << " " << how << "\n" << off.output;
      }
  }
}

TEST_F(Mpi, DistGraphReorderKeepsEveryRankWhenTheMappingIsAlreadyBest) {
  // 4x4x4 with the default mapping: the row-major 4x4x4 stencil already has every neighbour one
  // hop away, so reorder renames no process (the identity wins ties); the ring by world ranks has
  // 2-hop edges where x wraps, so it is placed, onto single hops.
  const auto r = run_process(
      {kBglrun, "-np", "64", "--shape", "4x4x4", "--timeout", "200", program("distgraph")}, 240,
      {"BGL_NM_TOPO_DIST_GRAPH=1"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("distgraph: OK (64 ranks, 0 errors)"));
  for (const std::string how : {"adjacent", "create", "create-foreign"}) {
    const auto stencil = distgraph_line(r.output, "stencil " + how + " reorder=1");
    EXPECT_EQ(stencil.renamed, 0) << how << "\n" << r.output;
    EXPECT_EQ(stencil.new_max_hops, 1) << how;
    const auto ring = distgraph_line(r.output, "ring " + how + " reorder=1");
    EXPECT_GT(ring.renamed, 0) << how;
    EXPECT_EQ(ring.new_max_hops, 1) << how;
    EXPECT_GT(distgraph_line(r.output, "ring " + how + " reorder=0").new_max_hops, 1) << how;
  }
}

TEST_F(Mpi, TopologySwitchesRejectUnreadableValues) {
  // A misspelt switch stops MPI_Init naming the variable and its value, instead of meaning "off".
  for (const std::string var : {"BGL_NM_TOPO_DIST_GRAPH", "BGL_NM_TOPO"}) {
    const auto r =
        run_process({kBglrun, "-np", "2", "--shape", "2x1x1", "--timeout", "60", program("hello")},
                    90, {var + "=maybe"});
    EXPECT_NE(r.exit_code, 0) << var << "\n" << r.output;
    EXPECT_THAT(r.output, HasSubstr(var + "=maybe: expected 0 or 1")) << r.output;
  }
  const auto ok =
      run_process({kBglrun, "-np", "2", "--shape", "2x1x1", "--timeout", "60", program("hello")},
                  90, {"BGL_NM_TOPO_DIST_GRAPH=yes", "BGL_NM_TOPO="});
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
}

TEST_F(Mpi, CartReorderOffWithBglNmTopo0) {
  // BGL_NM_TOPO=0 leaves MPICH's placement (the identity): a scattered mapping stays scattered.
  const auto map = scattered_mapfile("topo-off.map", 4, 2, 2, 1, 37);
  const auto r = run_process({kBglrun, "-np", "16", "--shape", "4x2x2", "--mapfile", map,
                              "--timeout", "120", program("topo")},
                             150, {"BGL_NM_TOPO=0"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("topo: OK"));
  const auto re = topo_line(r.output, "cart3d reorder=1");
  EXPECT_EQ(re.total_hops, topo_line(r.output, "cart3d reorder=0").total_hops) << r.output;
  EXPECT_GT(re.max_hops, 1) << r.output;
}

// ---- Several hosts: one bglrun per emulated host (Hydra), each the PMI server of its ranks ----

// The "hello from ..." lines of a run, sorted (hosts print in any order).
std::vector<std::string> hello_lines(const std::string& output) {
  std::vector<std::string> lines;
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);)
    if (line.starts_with("hello from rank ")) lines.push_back(line);
  std::sort(lines.begin(), lines.end());
  return lines;
}

// The remote stores the hosts' libfabric agents sent (the collective network's and the global
// interrupt's traffic between hosts; packets between nodes are counted apart), from
// --log-level info.
std::uint64_t remote_stores(const std::string& output) {
  std::uint64_t total = 0;
  const std::regex sent("([0-9]+) remote stores sent");
  for (auto it = std::sregex_iterator(output.begin(), output.end(), sent);
       it != std::sregex_iterator(); ++it)
    total += std::stoull((*it)[1]);
  return total;
}

// Every collective the test program calls on an algorithm without the tree or global interrupt.
const std::vector<std::string> kTreeOff = {
    "BGL_COLL_BCAST=binomial", "BGL_COLL_REDUCE=binomial", "BGL_COLL_ALLREDUCE=recursive_doubling",
    "BGL_COLL_ALLGATHER=recursive_doubling", "BGL_COLL_BARRIER=dissemination"};

// Segments that appeared since `before` and whose launcher is gone: left behind (segments of
// other jobs running meanwhile belong to live launchers; names are bglemu.<launcher pid>.<n>).
std::vector<std::string> leaked_segments(const std::vector<std::string>& before) {
  std::vector<std::string> out;
  for (const auto& s : bglemu_segments()) {
    if (std::find(before.begin(), before.end(), s) != before.end()) continue;
    const auto name = s.substr(s.rfind('/') + 1);
    if (!process_alive(std::atoi(name.c_str() + 7))) out.push_back(s);
  }
  return out;
}

// A rank of `die` on another host dies: the job ends with the rank's status, naming it, and leaves
// no process or segment on any host.
void expect_death_across_hosts(const std::string& die, const std::vector<std::string>& hosts,
                               const std::string& how, int victim, int status,
                               const std::string& expect) {
  const auto before = bglemu_segments();
  std::vector<std::string> argv{kBglrun};
  argv.insert(argv.end(), hosts.begin(), hosts.end());
  argv.insert(argv.end(), {"-np", "8", "--shape", "2x2x2", "--timeout", "60", die,
                           std::to_string(victim), how});
  const auto start = std::chrono::steady_clock::now();
  const auto r = run_process(argv, 120);
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(r.exit_code, status) << r.output;
  EXPECT_LT(took, 30.0) << r.output;
  EXPECT_THAT(r.output, HasSubstr(expect)) << r.output;
  EXPECT_THAT(r.output, HasSubstr("stopped its tasks with status " + std::to_string(status)))
      << r.output;
  EXPECT_THAT(leaked_segments(before), ::testing::IsEmpty());
  expect_none_left(die);
}

TEST_F(Mpi, FourHostsGiveTheSameRanksCoordinatesAndResults) {
  // Rank, size and MPI_Get_processor_name (the task's place in the partition) as on one host, in
  // virtual-node mode with a mapping file; the four hosts hold 2 nodes each.
  const auto hello = program("hello");
  const std::vector<std::string> vn{"-np",       "16", "--shape",   "2x2x2",
                                    "--mode",    "vn", "--mapfile", kExamples + "/map-2x2x2-vn.txt",
                                    "--timeout", "120"};
  auto one_args = vn, four_args = vn;
  one_args.push_back(hello);
  four_args.insert(four_args.begin(), {"--hosts", "4"});
  four_args.push_back(hello);
  const auto one = bglrun(one_args, 150);
  const auto four = bglrun(four_args, 150);
  ASSERT_EQ(one.exit_code, 0) << one.output;
  ASSERT_EQ(four.exit_code, 0) << four.output;
  EXPECT_EQ(hello_lines(four.output).size(), 16u) << four.output;
  EXPECT_EQ(hello_lines(four.output), hello_lines(one.output)) << four.output;
  EXPECT_THAT(four.output, HasSubstr("host 3 host3 (127.0.0.1): 2 nodes"));
  // Point-to-point (every size: one-packet, eager, rendezvous) with one node per host, and the
  // collectives over the four hosts' trees.
  const auto pt2pt = bglrun(
      {"--hosts", "4", "-np", "4", "--shape", "2x2x1", "--timeout", "200", program("pt2pt")}, 240);
  EXPECT_EQ(pt2pt.exit_code, 0) << pt2pt.output;
  EXPECT_THAT(pt2pt.output, HasSubstr("pt2pt: OK (4 ranks, 0 errors)"));
  const auto coll = bglrun({"--hosts", "4", "-np", "8", "--shape", "2x2x2", "--log-level", "info",
                            "--timeout", "200", program("coll")},
                           240);
  EXPECT_EQ(coll.exit_code, 0) << coll.output;
  EXPECT_THAT(coll.output, HasSubstr("coll: OK (8 ranks, 0 errors)"));
  EXPECT_GT(remote_stores(coll.output), 0u) << "the collectives did not use the tree across hosts";
}

// The summary table's row of one protocol ("  rendezvous    8    3,400  800,000  95.1%").
std::string summary_row(const std::string& output, const std::string& protocol) {
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);)
    if (line.starts_with("  " + protocol + " ")) return line;
  return "(no " + protocol + " row)";
}

TEST_F(Mpi, StatisticsReportAndTraceOfTwoHostsAreOneJobsResult) {
  // Each host's bglrun counts its own tasks, the links along the routes of its tasks' packets, its
  // nodes' FIFOs and its tasks' rows of the communication matrix; host 0 merges the hosts' parts
  // into one statistics file, report and trace: for a deterministic program the same counts as
  // the same job on one host.
  const auto exchange = program("exchange");
  const fs::path dir = fs::path(kBinDir) / ("two-host-stats." + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::vector<std::string> job{"-np", "8", "--shape", "2x2x2", "--timeout", "120"};
  auto one_args = job, two_args = job;
  one_args.insert(one_args.end(), {"--stats", (dir / "one.json").string(), exchange});
  two_args.insert(two_args.begin(), {"--hosts", "2"});
  two_args.insert(two_args.end(),
                  {"--stats", (dir / "two.json").string(), "--report", (dir / "two.html").string(),
                   "--trace", (dir / "two.trace.json").string(), exchange});
  const auto one = bglrun(one_args, 150);
  const auto two = bglrun(two_args, 150);
  ASSERT_EQ(one.exit_code, 0) << one.output;
  ASSERT_EQ(two.exit_code, 0) << two.output;
  EXPECT_THAT(two.output, HasSubstr("exchange: OK (8 ranks, 0 errors)"));
  const auto a = nlohmann::json::parse(read_file((dir / "one.json").string()));
  const auto b = nlohmann::json::parse(read_file((dir / "two.json").string()));
  ASSERT_EQ(b["tasks"].size(), 8u);
  std::uint64_t received_a = 0, received_b = 0;
  for (std::size_t r = 0; r < 8; ++r) {
    const auto &ta = a["tasks"][r], &tb = b["tasks"][r];
    ASSERT_TRUE(tb.value("published", false)) << "rank " << r << " has no counters:\n" << tb;
    for (const char* counter : {"packets_injected", "bytes_injected"})
      EXPECT_EQ(ta["counters"][counter], tb["counters"][counter]) << "rank " << r << " " << counter;
    EXPECT_EQ(ta["message_layer"]["protocols"], tb["message_layer"]["protocols"]) << "rank " << r;
    received_a += ta["counters"]["packets_received"].get<std::uint64_t>();
    received_b += tb["counters"]["packets_received"].get<std::uint64_t>();
  }
  // What the tasks received agrees with their FIFOs' counts, whichever host held them (the
  // packets left over when the tasks end, e.g. a last acknowledgement, vary from run to run).
  EXPECT_GT(received_a, 0u);
  EXPECT_EQ(a["links"], b["links"]);      // every link, both hosts' packets on it
  EXPECT_EQ(a["traffic"], b["traffic"]);  // the communication matrix: messages and bytes
  EXPECT_EQ(b["traffic"]["messages"], 24);
  const auto fifo_total = [](const nlohmann::json& stats, int z) {
    std::uint64_t total = 0;
    for (const auto& f : stats["fifos"])
      if (z < 0 || f["node"][2] == z) total += f["received"].get<std::uint64_t>();
    return total;
  };
  EXPECT_EQ(fifo_total(b, -1), received_b);
  EXPECT_GT(fifo_total(b, 0), 0u);  // host 0's nodes (z = 0) and host 1's
  EXPECT_GT(fifo_total(b, 1), 0u);
  EXPECT_FALSE(b["job"].contains("hosts_missing"));
  // Every task's collective calls, in the same algorithms as on one host: MPICH's node-aware
  // compositions (a host is a "node" to MPICH) would hand the hooks per-host communicators.
  EXPECT_EQ(b["collective_sites"]["tasks_reporting"], 8);
  const auto site_rows = [](const nlohmann::json& stats) {
    std::multiset<std::string> rows;
    for (const auto& row : stats["collective_sites"]["sites"])
      rows.insert(row["site"].get<std::string>() + " " + row["op"].get<std::string>() + " " +
                  row["algorithm"].get<std::string>() + " size " + row["comm_size"].dump() +
                  " tasks " + row["tasks"].dump() + " calls " + row["calls"].dump());
    return rows;
  };
  EXPECT_EQ(site_rows(b), site_rows(a));
  EXPECT_THAT(site_rows(b),
              ::testing::Contains("main (exchange.c:21) allreduce tree size 8 tasks 8 calls 8"));
  // The terminal summary and the report are made from the merged statistics.
  for (const std::string protocol : {"one_packet", "eager", "rendezvous"})
    EXPECT_EQ(summary_row(two.output, protocol), summary_row(one.output, protocol)) << two.output;
  EXPECT_TRUE(fs::file_size(dir / "two.html") > 0);
  // The trace holds every rank's events, each host's ranks from that host.
  const auto trace = nlohmann::json::parse(read_file((dir / "two.trace.json").string()));
  EXPECT_EQ(trace["otherData"]["tasks_without_events"], 0);
  std::set<int> ranks_with_events;
  for (const auto& e : trace["traceEvents"])
    if (e["ph"] != "M") ranks_with_events.insert(e["pid"].get<int>());
  EXPECT_EQ(ranks_with_events.size(), 8u);
  // Host 1's part was taken and removed.
  for (const auto& e : fs::directory_iterator(dir))
    EXPECT_EQ(e.path().filename().string().find(".host"), std::string::npos) << e.path();
  fs::remove_all(dir);
}

TEST_F(Mpi, RankDeathsOnAnotherHostEndTheJobAndNameTheRank) {
  // Rank 5 runs on host 1; host 0's bglrun is the one the user started.
  const auto die = program("die");
  const std::vector<std::string> hosts{"--hosts", "2"};
  expect_death_across_hosts(die, hosts, "kill", 5, 137, "bglrun: rank 5 on node (1,0,1) t=0 (pid ");
  expect_death_across_hosts(die, hosts, "exit", 5, 3, "exited with code 3");
  expect_death_across_hosts(
      die, hosts, "abort", 6, 4,
      "bglrun: rank 6 on node (0,1,1) t=0 called MPI_Abort (or hit a fatal MPI error) with code 4");
  expect_death_across_hosts(die, hosts, "segv", 1, 139, "bglrun: rank 1 on node (1,0,0) t=0");
}

TEST_F(Mpi, EveryHostNeedsARank) {
  // 2 ranks fill host 0's two nodes of a 2x2x1 partition: host 1 would take no part in MPI_Init.
  const auto r = bglrun(
      {"--hosts", "2", "-np", "2", "--shape", "2x2x1", "--timeout", "60", program("hello")}, 90);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("an MPI program needs a rank on every host, but host 1 (host1)"));
}

// Two network namespaces joined by a veth pair (as tests/multihost_test.cpp): every packet and
// remote store between the hosts crosses the veth link.
class MpiTwoNamespaces : public Mpi {
 protected:
  void SetUp() override {
    Mpi::SetUp();
    if (IsSkipped()) return;
    pair_.emplace("M", "10.214.0",
                  kBinDir + "/netns-hosts." + std::to_string(getpid() % 100000) + ".txt");
    ASSERT_EQ(pair_->error(), "");
  }
  void TearDown() override { pair_.reset(); }
  ProcessResult across(std::vector<std::string> args, const std::vector<std::string>& env = {},
                       double timeout = 240) {
    args.insert(args.begin(), {kBglrun, "--hostfile", pair_->hostfile()});
    return run_process(args, timeout, env);
  }
  const std::string& ns(int host) const { return pair_->ns(host); }

  std::optional<NamespacePair> pair_;
};

TEST_F(MpiTwoNamespaces, PointToPointInEveryProtocolAcrossTheVeth) {
  const auto pt2pt = program("pt2pt");
  const std::vector<std::string> args{"-np", "4", "--shape", "2x2x1", "--timeout", "200", pt2pt};
  auto by_size = args;
  by_size.insert(by_size.begin(), {"--log-level", "info"});
  const auto r = across(by_size, {"MPIR_CVAR_CH4_RUNTIME_CONF_DEBUG=1"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("pt2pt: OK (4 ranks, 0 errors)"));
  EXPECT_THAT(r.output, HasSubstr("entered network namespace " + ns(1)));
  EXPECT_THAT(r.output, HasSubstr("fi_sockaddr_in://10.214.0.2"));  // bound to the veth
  EXPECT_THAT(r.output, ::testing::ContainsRegex("[1-9][0-9]* sends completed at injection"));
  for (const std::string protocol : {"eager", "rendezvous", "adaptive_eager"}) {
    const auto forced = across(args, {"BGL_ML_PROTOCOL=" + protocol});
    EXPECT_EQ(forced.exit_code, 0) << protocol << ":\n" << forced.output;
    EXPECT_THAT(forced.output, HasSubstr("pt2pt: OK (4 ranks, 0 errors)")) << protocol;
  }
}

TEST_F(MpiTwoNamespaces, VirtualNodeModeWithAScatteredMapping) {
  // The two tasks of a node share a host (the virtual-node protocol between them); the scattered
  // mapping puts neighbouring ranks on different hosts.
  const auto map = scattered_mapfile("hosts-vn.map", 2, 2, 1, 2, 19);
  const std::vector<std::string> args{"-np", "8",         "--shape", "2x2x1",     "--mode",
                                      "vn",  "--mapfile", map,       "--timeout", "200"};
  auto pt2pt_args = args, coll_args = args, hello_args = args;
  pt2pt_args.push_back(program("pt2pt"));
  coll_args.push_back(program("coll"));
  hello_args.push_back(program("hello"));
  const auto pt2pt = across(pt2pt_args);
  EXPECT_EQ(pt2pt.exit_code, 0) << pt2pt.output;
  EXPECT_THAT(pt2pt.output, HasSubstr("pt2pt: OK (8 ranks, 0 errors)"));
  const auto coll = across(coll_args);
  EXPECT_EQ(coll.exit_code, 0) << coll.output;
  EXPECT_THAT(coll.output, HasSubstr("coll: OK (8 ranks, 0 errors)"));
  const auto two = across(hello_args);
  hello_args.insert(hello_args.begin(), kBglrun);
  const auto one = run_process(hello_args, 150);
  ASSERT_EQ(two.exit_code, 0) << two.output;
  EXPECT_EQ(hello_lines(two.output).size(), 8u) << two.output;
  EXPECT_EQ(hello_lines(two.output), hello_lines(one.output));
}

TEST_F(MpiTwoNamespaces, CollectivesWithTheTreeOnAndOff) {
  const std::vector<std::string> args{"-np",  "8",         "--shape", "2x2x2",        "--log-level",
                                      "info", "--timeout", "200",     program("coll")};
  const auto on = across(args);
  EXPECT_EQ(on.exit_code, 0) << on.output;
  EXPECT_THAT(on.output, HasSubstr("coll: OK (8 ranks, 0 errors)"));
  EXPECT_GT(remote_stores(on.output), 0u) << on.output;
  const auto off = across(args, kTreeOff);
  EXPECT_EQ(off.exit_code, 0) << off.output;
  EXPECT_THAT(off.output, HasSubstr("coll: OK (8 ranks, 0 errors)"));
  EXPECT_EQ(remote_stores(off.output), 0u) << off.output;
  // MPICH's own algorithms (the hooks off): point-to-point only.
  const auto mpich = across(args, {"BGL_NM_COLL_HOOKS=0"});
  EXPECT_EQ(mpich.exit_code, 0) << mpich.output;
  EXPECT_THAT(mpich.output, HasSubstr("coll: OK (8 ranks, 0 errors)"));
  EXPECT_EQ(remote_stores(mpich.output), 0u) << mpich.output;
}

// The PMI rank of a rank process (its environment), or -1.
int pmi_rank_of(int pid) {
  std::istringstream env(read_file("/proc/" + std::to_string(pid) + "/environ"));
  for (std::string var; std::getline(env, var, '\0');)
    if (var.starts_with("PMI_RANK=")) return std::atoi(var.c_str() + 9);
  return -1;
}

TEST_F(MpiTwoNamespaces, AKilledHostEndsTheJobEverywhere) {
  const auto die = program("die");
  const auto before = bglemu_segments();
  const std::string log = kBinDir + "/hostkill." + std::to_string(getpid()) + ".log";
  setenv("BGL_OFI_TIMEOUT_MS", "4000", 1);
  const int launcher = spawn_process({kBglrun, "--hostfile", pair_->hostfile(), "-np", "8",
                                      "--shape", "2x2x2", "--timeout", "100", die, "0", "hang"},
                                     log);
  unsetenv("BGL_OFI_TIMEOUT_MS");
  // Wait for the 8 ranks; host B (ranks 4..7) is their parent bglrun.
  std::vector<int> ranks;
  for (int i = 0; i < 300 && (ranks = processes_of(die)).size() < 8; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_EQ(ranks.size(), 8u) << read_file(log);
  int host_b = -1;
  for (int pid : ranks)
    if (pmi_rank_of(pid) >= 4) host_b = parent_of(pid);
  ASSERT_GT(host_b, 1) << read_file(log);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // every rank in its receive
  const auto start = std::chrono::steady_clock::now();
  ASSERT_EQ(kill(host_b, SIGKILL), 0);
  const int code = wait_process(launcher, 60);
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::string out = read_file(log);
  EXPECT_NE(code, 0) << out;
  EXPECT_NE(code, -1) << "the job did not end after its host died:\n" << out;
  EXPECT_LT(took, 25.0) << out;
  EXPECT_THAT(out, ::testing::ContainsRegex(
                       "host 1 \\(hostB, 10.214.0.2\\) has not been heard from|lost the "
                       "connection to host 1 \\(hostB, 10.214.0.2\\)"))
      << out;
  expect_none_left(die, 30, out);
  EXPECT_THAT(leaked_segments(before), ::testing::IsEmpty()) << out;
}

}  // namespace
}  // namespace bgl::test
