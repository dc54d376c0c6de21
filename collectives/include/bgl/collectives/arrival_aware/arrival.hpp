#pragma once
// Process arrival patterns: an imbalance option for benchmarks (per-rank delays from a
// chosen distribution, BGL_COLL_IMBALANCE) and the background-thread arrival-time predictor that
// gives every rank the same predicted arrival vector before the collective (Params::arrival).
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace bgl::collectives::arrival {

// ---- Imbalance (benchmarks)

enum class Distribution { none, uniform, exponential, last };

struct Imbalance {
  Distribution dist = Distribution::none;
  double scale = 0;        // seconds: uniform max, exponential mean, last: the late rank's delay
  std::uint64_t seed = 1;  // delays are a pure function of (seed, iteration, rank)
};

// "none", "uniform:<time>", "exp:<time>", "last:<time>", optionally ":seed=<n>"; <time> is a
// number with s, ms, us or ns ("100us"). Throws ConfigError "<what>='<text>': <problem>".
Imbalance parse_imbalance(std::string_view text, std::string_view what = "BGL_COLL_IMBALANCE");
// BGL_COLL_IMBALANCE, or none when unset.
Imbalance imbalance_from_env();
std::string to_string(const Imbalance& im);

// Rank `rank`'s delay in seconds before entering the collective of `iteration`. Every process
// computes the same value for every rank (so a benchmark can also hand Clairvoyant the exact
// pattern as an oracle).
double delay(const Imbalance& im, int rank, int p, std::uint64_t iteration);
std::vector<double> delays(const Imbalance& im, int p, std::uint64_t iteration);

// ---- Prediction with a background thread

// Where helper threads publish estimates and where the coordinator (rank 0's helper) seals the
// vector of an iteration. Sealed vectors are what every rank uses, so all schedules agree.
class Board {
 public:
  virtual ~Board() = default;
  virtual void publish(std::uint64_t iteration, int rank, double estimate) = 0;
  // The estimates published so far for `iteration` (NaN where missing).
  virtual std::vector<double> published(std::uint64_t iteration) = 0;
  virtual void seal(std::uint64_t iteration, std::vector<double> arrivals) = 0;
  // Waits up to `timeout` for the sealed vector of `iteration`.
  virtual std::optional<std::vector<double>> sealed(std::uint64_t iteration,
                                                    std::chrono::nanoseconds timeout) = 0;
};

// A board shared by threads of one process (ranks as threads, tests, the benchmark).
class LocalBoard final : public Board {
 public:
  explicit LocalBoard(int p) : p_(p) {}
  void publish(std::uint64_t iteration, int rank, double estimate) override;
  std::vector<double> published(std::uint64_t iteration) override;
  void seal(std::uint64_t iteration, std::vector<double> arrivals) override;
  std::optional<std::vector<double>> sealed(std::uint64_t iteration,
                                            std::chrono::nanoseconds timeout) override;

 private:
  int p_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::uint64_t, std::vector<double>> published_;
  std::map<std::uint64_t, std::vector<double>> sealed_;
};

// A board in POSIX shared memory (`name` like "/bglemu.<job>.arrival"), for ranks that are
// processes of one host. Every rank opens the same name; the object is created on first open and
// unlinked when rank 0's board is destroyed. Iterations share kSlots slots round robin (ranks are
// never more than one collective apart). Waits back off from yielding to 1 ms sleeps.
class ShmBoard final : public Board {
 public:
  static constexpr int kSlots = 8;
  ShmBoard(const std::string& name, int p, int rank);
  ~ShmBoard() override;
  ShmBoard(const ShmBoard&) = delete;
  ShmBoard& operator=(const ShmBoard&) = delete;
  void publish(std::uint64_t iteration, int rank, double estimate) override;
  std::vector<double> published(std::uint64_t iteration) override;
  void seal(std::uint64_t iteration, std::vector<double> arrivals) override;
  std::optional<std::vector<double>> sealed(std::uint64_t iteration,
                                            std::chrono::nanoseconds timeout) override;

 private:
  struct Layout;
  Layout* slot(std::uint64_t iteration) const;
  std::string name_;
  int p_;
  int rank_;
  std::size_t bytes_ = 0;
  void* base_ = nullptr;
};

struct PredictorOptions {
  int window = 4;  // simple moving average over the last `window` compute durations
  // How long the coordinator waits for every estimate before sealing with fallbacks (the last
  // sealed value of a missing rank, else its compute start), and how long arrived() waits.
  std::chrono::milliseconds seal_wait{200};
  std::chrono::milliseconds arrive_wait{10'000};
};

class Predictor {
 public:
  // Clock: seconds of std::chrono::steady_clock (CLOCK_MONOTONIC: one clock for all processes of
  // a host).
  Predictor(int rank, int p, std::shared_ptr<Board> board, PredictorOptions options = {});
  ~Predictor();
  Predictor(const Predictor&) = delete;
  Predictor& operator=(const Predictor&) = delete;

  static double now();

  // Main thread: the compute phase of `iteration` starts (the helper estimates and publishes).
  void compute_started(std::uint64_t iteration);
  // Main thread: arrived at the collective of `iteration`. Returns the sealed predicted arrivals
  // (identical on every rank; pass as Params::arrival) and records the true compute duration.
  // Throws std::runtime_error if no vector was sealed within arrive_wait.
  std::vector<double> arrived(std::uint64_t iteration);

  // The helper's own estimate for an iteration (tests).
  double estimate(double compute_start) const;

 private:
  void run();
  int rank_;
  int p_;
  std::shared_ptr<Board> board_;
  PredictorOptions options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<std::uint64_t, double>> work_;  // (iteration, compute start)
  std::map<std::uint64_t, double> started_;
  std::deque<double> durations_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace bgl::collectives::arrival
