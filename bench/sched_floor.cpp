// The scheduler's floor for many processes on few cores: what one wake-up per process costs on
// this machine, with nothing of bglemu in the way. Forks N processes over an anonymous shared
// mapping and times
//   token  N processes pass a token round a ring; each sleeps on its own futex and the holder
//          wakes exactly the next one (one targeted wake-up and one context switch per hop);
//   yield  the same ring, but waiting processes poll their word and sched_yield (Open MPI's
//          oversubscribed policy: never sleep, give the core away when idle);
//   release one process releases N sleepers at once (FUTEX_WAKE of all on one word); each runs
//          once and the last one wakes the releaser (a barrier whose every task must run once).
// Variants are interleaved in each repetition; min and median over repetitions are reported, per
// hop (token, yield) or per release and per task (release). Usage:
//   sched_floor [--tasks 8,64,1024] [--reps 5] [--budget-ms 300] [--variants token,yield,release]
#include <linux/futex.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct alignas(64) Word {
  std::atomic<std::uint32_t> value{0};
};

void futex_wait(std::atomic<std::uint32_t>& w, std::uint32_t expected) {
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&w), FUTEX_WAIT, expected, nullptr, nullptr,
          0);
}

void futex_wake(std::atomic<std::uint32_t>& w, int n) {
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&w), FUTEX_WAKE, n, nullptr, nullptr, 0);
}

// Shared between the processes of one measurement: per-process words, a generation for the
// release, an arrival count and the parent's word.
class Shared {
 public:
  explicit Shared(int n) : bytes_(sizeof(Word) * (static_cast<std::size_t>(n) + 4)) {
    void* p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::runtime_error("mmap failed");
    words_ = static_cast<Word*>(p);
    for (std::size_t i = 0; i < static_cast<std::size_t>(n) + 4; ++i)
      new (&words_[i]) Word();
    n_ = n;
  }
  Shared(const Shared&) = delete;
  Shared& operator=(const Shared&) = delete;
  ~Shared() { munmap(words_, bytes_); }
  std::atomic<std::uint32_t>& task(int i) { return words_[i].value; }
  std::atomic<std::uint32_t>& generation() { return words_[n_].value; }
  std::atomic<std::uint32_t>& arrived() { return words_[n_ + 1].value; }
  std::atomic<std::uint32_t>& parent() { return words_[n_ + 2].value; }
  std::atomic<std::uint32_t>& stop() { return words_[n_ + 3].value; }

 private:
  std::size_t bytes_;
  Word* words_ = nullptr;
  int n_ = 0;
};

enum class Variant { token, yield, release };

const char* name(Variant v) {
  switch (v) {
    case Variant::token:
      return "token";
    case Variant::yield:
      return "yield";
    case Variant::release:
      return "release";
  }
  return "?";
}

// Waits until w != seen, sleeping (token, release) or yielding (yield).
void await_change(std::atomic<std::uint32_t>& w, std::uint32_t seen, Variant v) {
  for (;;) {
    const std::uint32_t now = w.load(std::memory_order_acquire);
    if (now != seen) return;
    if (v == Variant::yield)
      sched_yield();
    else
      futex_wait(w, seen);
  }
}

// Process i of the ring: waits for its word to change, passes the token (a hop count) plus one to
// i+1. The parent stops everyone by raising `stop` and bumping every word.
void ring_member(Shared& s, int i, int n, Variant v) {
  std::uint32_t round = 0;
  for (;;) {
    await_change(s.task(i), round, v);
    if (s.stop().load(std::memory_order_acquire)) return;
    round = s.task(i).load(std::memory_order_acquire);
    const int next = (i + 1) % n;
    s.task(next).store(round + 1, std::memory_order_release);
    if (v != Variant::yield) futex_wake(s.task(next), 1);
  }
}

void release_member(Shared& s, int n) {
  std::uint32_t gen = 0;
  for (;;) {
    await_change(s.generation(), gen, Variant::release);
    if (s.stop().load(std::memory_order_acquire)) return;
    gen = s.generation().load(std::memory_order_acquire);
    if (s.arrived().fetch_add(1, std::memory_order_acq_rel) + 1 == static_cast<std::uint32_t>(n)) {
      s.parent().fetch_add(1, std::memory_order_release);
      futex_wake(s.parent(), 1);
    }
  }
}

// One measurement of `v` with n processes for about `budget`: nanoseconds per hop (rings) or per
// release, and how many there were.
struct Result {
  double per_event_ns = 0;
  long events = 0;
};

Result measure(Variant v, int n, std::chrono::milliseconds budget) {
  Shared s(n);
  std::vector<pid_t> pids;
  for (int i = 0; i < n; ++i) {
    const pid_t pid = fork();
    if (pid < 0) throw std::runtime_error(std::string("fork failed: ") + std::strerror(errno));
    if (pid == 0) {
      if (v == Variant::release)
        release_member(s, n);
      else
        ring_member(s, i, n, v);
      _exit(0);
    }
    pids.push_back(pid);
  }
  Result r;
  if (v == Variant::release) {
    const auto release = [&] {
      const std::uint32_t seen = s.parent().load(std::memory_order_acquire);
      s.arrived().store(0, std::memory_order_relaxed);
      s.generation().fetch_add(1, std::memory_order_release);
      futex_wake(s.generation(), INT_MAX);
      await_change(s.parent(), seen, Variant::release);
    };
    release();  // warm-up: every process has run and sleeps on the generation
    const auto start = Clock::now();
    auto end = start;
    do {
      release();
      ++r.events;
      end = Clock::now();
    } while (end - start < budget);
    r.per_event_ns = std::chrono::duration<double, std::nano>(end - start).count() /
                     static_cast<double>(r.events);
    s.stop().store(1, std::memory_order_release);
    s.generation().fetch_add(1, std::memory_order_release);
    futex_wake(s.generation(), INT_MAX);
  } else {
    // The token is the hop count: each member passes what it received plus one, so after the
    // budget the largest word is the number of hops so far.
    const auto hops = [&] {
      std::uint32_t most = 0;
      for (int i = 0; i < n; ++i)
        most = std::max(most, s.task(i).load(std::memory_order_acquire));
      return most;
    };
    s.task(0).store(1, std::memory_order_release);
    if (v == Variant::token) futex_wake(s.task(0), 1);
    // Warm-up lap: every process has run once.
    while (hops() < static_cast<std::uint32_t>(n) + 1)
      usleep(1000);
    const std::uint32_t first = hops();
    const auto start = Clock::now();
    usleep(static_cast<useconds_t>(budget.count() * 1000));
    const std::uint32_t last = hops();
    const auto end = Clock::now();
    r.events = last - first;
    r.per_event_ns = std::chrono::duration<double, std::nano>(end - start).count() /
                     static_cast<double>(std::max<long>(1, r.events));
    s.stop().store(1, std::memory_order_release);
    for (int i = 0; i < n; ++i) {
      s.task(i).fetch_add(1u << 30, std::memory_order_release);
      futex_wake(s.task(i), 1);
    }
  }
  for (pid_t p : pids)
    waitpid(p, nullptr, 0);
  return r;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at <= s.size()) {
    const auto comma = s.find(',', at);
    out.push_back(s.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return out;
}

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr,
               "sched_floor: %s\nusage: sched_floor [--tasks 8,64,1024] [--reps 5] "
               "[--budget-ms 300] [--variants token,yield,release]\n",
               why.c_str());
  std::exit(2);
}

long parse_count(const std::string& what, const std::string& text, long lo, long hi) {
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0 || v < lo || v > hi)
    usage(what + " must be an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) +
          "], not '" + text + "'");
  return v;
}

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(q * static_cast<double>(v.size() - 1) + 0.5)];
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> tasks{8, 64, 1024};
  std::vector<Variant> variants{Variant::token, Variant::yield, Variant::release};
  int reps = 5;
  std::chrono::milliseconds budget{300};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) usage("option " + a + " needs a value");
    const std::string value = argv[++i];
    if (a == "--tasks") {
      tasks.clear();
      for (const auto& t : split(value))
        tasks.push_back(static_cast<int>(parse_count("--tasks", t, 2, 65536)));
    } else if (a == "--reps") {
      reps = static_cast<int>(parse_count("--reps", value, 1, 1000));
    } else if (a == "--budget-ms") {
      budget = std::chrono::milliseconds(parse_count("--budget-ms", value, 1, 600'000));
    } else if (a == "--variants") {
      variants.clear();
      for (const auto& t : split(value)) {
        if (t == "token")
          variants.push_back(Variant::token);
        else if (t == "yield")
          variants.push_back(Variant::yield);
        else if (t == "release")
          variants.push_back(Variant::release);
        else
          usage("unknown variant '" + t + "' (token, yield, release)");
      }
    } else {
      usage("unknown option " + a);
    }
  }
  std::printf("# %ld online cores; %d repetitions of %lld ms, variants interleaved\n",
              sysconf(_SC_NPROCESSORS_ONLN), reps, static_cast<long long>(budget.count()));
  std::printf("%-7s %-8s %12s %12s %14s %10s\n", "tasks", "variant", "min_ns", "median_ns",
              "median/task_ns", "events");
  for (int n : tasks) {
    std::vector<std::vector<double>> ns(variants.size());
    std::vector<long> events(variants.size());
    for (int rep = 0; rep < reps; ++rep)
      for (std::size_t k = 0; k < variants.size(); ++k) {
        const Result r = measure(variants[k], n, budget);
        ns[k].push_back(r.per_event_ns);
        events[k] += r.events;
      }
    for (std::size_t k = 0; k < variants.size(); ++k) {
      const double med = quantile(ns[k], 0.5);
      // Per task: a ring hop is one task's turn already; a release is n tasks' turns.
      const double per_task = variants[k] == Variant::release ? med / n : med;
      std::printf("%-7d %-8s %12.0f %12.0f %14.0f %10ld\n", n, name(variants[k]),
                  *std::min_element(ns[k].begin(), ns[k].end()), med, per_task, events[k]);
      std::fflush(stdout);
    }
  }
}
