#include "bgl/collectives/arrival_aware/arrival.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <numeric>
#include <stdexcept>

#include "bgl/torus_emu/error.hpp"

namespace bgl::collectives::arrival {

namespace {

std::optional<double> parse_time(std::string_view t) {
  struct Unit {
    std::string_view suffix;
    double scale;
  };
  for (const Unit u : {Unit{"ns", 1e-9}, Unit{"us", 1e-6}, Unit{"ms", 1e-3}, Unit{"s", 1.0}}) {
    if (t.size() > u.suffix.size() && t.substr(t.size() - u.suffix.size()) == u.suffix) {
      const std::string_view num = t.substr(0, t.size() - u.suffix.size());
      double v = 0;
      auto [p, ec] = std::from_chars(num.data(), num.data() + num.size(), v);
      if (ec != std::errc{} || p != num.data() + num.size() || !std::isfinite(v) || v < 0) {
        return std::nullopt;
      }
      return v * u.scale;
    }
  }
  return std::nullopt;
}

// SplitMix64: a stateless, portable hash of (seed, iteration, rank) into [0, 1).
double unit(std::uint64_t seed, std::uint64_t iteration, int rank) {
  std::uint64_t z = seed * 0x9E3779B97F4A7C15ull + iteration * 0xBF58476D1CE4E5B9ull +
                    static_cast<std::uint64_t>(rank) * 0x94D049BB133111EBull + 1;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-53;
}

}  // namespace

Imbalance parse_imbalance(std::string_view text, std::string_view what) {
  auto fail = [&](const std::string& why) {
    throw ConfigError(std::string(what) + "='" + std::string(text) + "': " + why);
  };
  Imbalance im;
  if (text.empty() || text == "none") return im;
  std::vector<std::string_view> parts;
  std::size_t pos = 0;
  while (true) {
    const std::size_t c = text.find(':', pos);
    parts.push_back(
        text.substr(pos, c == std::string_view::npos ? std::string_view::npos : c - pos));
    if (c == std::string_view::npos) break;
    pos = c + 1;
  }
  if (parts.size() < 2 || parts.size() > 3) {
    fail("expected none, uniform:<time>, exp:<time> or last:<time>, optionally :seed=<n>");
  }
  if (parts[0] == "uniform") {
    im.dist = Distribution::uniform;
  } else if (parts[0] == "exp") {
    im.dist = Distribution::exponential;
  } else if (parts[0] == "last") {
    im.dist = Distribution::last;
  } else {
    fail("unknown distribution \"" + std::string(parts[0]) + "\" (none, uniform, exp, last)");
  }
  const auto t = parse_time(parts[1]);
  if (!t) fail("\"" + std::string(parts[1]) + "\" is not a time >= 0 with a unit (s, ms, us, ns)");
  im.scale = *t;
  if (parts.size() == 3) {
    const std::string_view s = parts[2];
    std::uint64_t seed = 0;
    if (s.substr(0, 5) != "seed=") fail("third field must be seed=<n>");
    auto [p, ec] = std::from_chars(s.data() + 5, s.data() + s.size(), seed);
    if (ec != std::errc{} || p != s.data() + s.size()) fail("bad seed \"" + std::string(s) + "\"");
    im.seed = seed;
  }
  return im;
}

Imbalance imbalance_from_env() {
  const char* env = std::getenv("BGL_COLL_IMBALANCE");
  if (env == nullptr) return {};
  return parse_imbalance(env);
}

std::string to_string(const Imbalance& im) {
  const char* names[] = {"none", "uniform", "exp", "last"};
  if (im.dist == Distribution::none) return "none";
  char scale[32];
  std::snprintf(scale, sizeof scale, "%gus", im.scale * 1e6);
  return std::string(names[static_cast<int>(im.dist)]) + ":" + scale +
         ":seed=" + std::to_string(im.seed);
}

double delay(const Imbalance& im, int rank, int p, std::uint64_t iteration) {
  switch (im.dist) {
    case Distribution::none:
      return 0;
    case Distribution::uniform:
      return im.scale * unit(im.seed, iteration, rank);
    case Distribution::exponential:
      return -im.scale * std::log1p(-unit(im.seed, iteration, rank));
    case Distribution::last:
      return rank == p - 1 ? im.scale : 0;
  }
  return 0;
}

std::vector<double> delays(const Imbalance& im, int p, std::uint64_t iteration) {
  std::vector<double> out;
  for (int r = 0; r < p; ++r)
    out.push_back(delay(im, r, p, iteration));
  return out;
}

// ---- LocalBoard

void LocalBoard::publish(std::uint64_t iteration, int rank, double estimate) {
  {
    std::lock_guard lock(mu_);
    auto& v = published_[iteration];
    if (v.empty()) v.assign(static_cast<std::size_t>(p_), std::numeric_limits<double>::quiet_NaN());
    v.at(static_cast<std::size_t>(rank)) = estimate;
  }
  cv_.notify_all();
}

std::vector<double> LocalBoard::published(std::uint64_t iteration) {
  std::lock_guard lock(mu_);
  auto it = published_.find(iteration);
  if (it == published_.end()) {
    return std::vector<double>(static_cast<std::size_t>(p_),
                               std::numeric_limits<double>::quiet_NaN());
  }
  return it->second;
}

void LocalBoard::seal(std::uint64_t iteration, std::vector<double> arrivals) {
  {
    std::lock_guard lock(mu_);
    sealed_.emplace(iteration, std::move(arrivals));  // first seal wins
    published_.erase(iteration);
    // Keep a bounded history.
    while (sealed_.size() > 64)
      sealed_.erase(sealed_.begin());
  }
  cv_.notify_all();
}

std::optional<std::vector<double>> LocalBoard::sealed(std::uint64_t iteration,
                                                      std::chrono::nanoseconds timeout) {
  std::unique_lock lock(mu_);
  if (!cv_.wait_for(lock, timeout, [&] { return sealed_.count(iteration) != 0; })) {
    return std::nullopt;
  }
  return sealed_.at(iteration);
}

// ---- Predictor

Predictor::Predictor(int rank, int p, std::shared_ptr<Board> board, PredictorOptions options)
    : rank_(rank), p_(p), board_(std::move(board)), options_(options) {
  if (p < 1 || rank < 0 || rank >= p) throw std::invalid_argument("predictor: bad rank or size");
  if (!board_) throw std::invalid_argument("predictor: no board");
  if (options_.window < 1) throw std::invalid_argument("predictor: window must be >= 1");
  thread_ = std::thread([this] { run(); });
}

Predictor::~Predictor() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

double Predictor::now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double Predictor::estimate(double compute_start) const {
  std::lock_guard lock(mu_);
  if (durations_.empty()) return compute_start;
  const double sum = std::accumulate(durations_.begin(), durations_.end(), 0.0);
  return compute_start + sum / static_cast<double>(durations_.size());
}

void Predictor::compute_started(std::uint64_t iteration) {
  const double t = now();
  {
    std::lock_guard lock(mu_);
    started_[iteration] = t;
    work_.push_back({iteration, t});
  }
  cv_.notify_all();
}

std::vector<double> Predictor::arrived(std::uint64_t iteration) {
  const double t = now();
  {
    std::lock_guard lock(mu_);
    auto it = started_.find(iteration);
    if (it != started_.end()) {
      durations_.push_back(t - it->second);
      while (static_cast<int>(durations_.size()) > options_.window)
        durations_.pop_front();
      started_.erase(it);
    }
  }
  auto v = board_->sealed(iteration, options_.arrive_wait);
  if (!v) {
    throw std::runtime_error("arrival predictor: no sealed arrival vector for iteration " +
                             std::to_string(iteration) + " within " +
                             std::to_string(options_.arrive_wait.count()) +
                             " ms (did every rank call compute_started?)");
  }
  return *v;
}

void Predictor::run() {
  for (;;) {
    std::pair<std::uint64_t, double> job;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stop_ || !work_.empty(); });
      if (stop_) return;
      job = work_.front();
      work_.pop_front();
    }
    const auto [iteration, start] = job;
    const double mine = estimate(start);
    board_->publish(iteration, rank_, mine);
    if (rank_ != 0) continue;
    // Coordinator: wait (bounded, backing off) for every estimate, then seal; a missing rank is
    // assumed to arrive with the coordinator.
    const auto deadline = std::chrono::steady_clock::now() + options_.seal_wait;
    std::vector<double> v;
    auto sleep = std::chrono::microseconds(50);
    for (;;) {
      v = board_->published(iteration);
      const bool complete =
          std::none_of(v.begin(), v.end(), [](double x) { return std::isnan(x); });
      if (complete || std::chrono::steady_clock::now() >= deadline) break;
      {
        std::unique_lock lock(mu_);
        if (cv_.wait_for(lock, sleep, [&] { return stop_; })) return;
      }
      sleep = std::min(sleep * 2, std::chrono::microseconds(2000));
    }
    for (double& x : v) {
      if (std::isnan(x)) x = mine;
    }
    board_->seal(iteration, std::move(v));
  }
}

}  // namespace bgl::collectives::arrival

// ---- ShmBoard

namespace bgl::collectives::arrival {

// One slot: per rank (tag, value) where tag = iteration + 1 once published, then the sealed
// vector with its tag. Values are written before their tag is released.
struct ShmBoard::Layout {
  std::atomic<std::uint64_t> sealed_tag;
  // followed by: std::atomic<std::uint64_t> tag[p]; double value[p]; double sealed[p];
};

namespace {
std::size_t slot_bytes(int p) {
  const auto n = static_cast<std::size_t>(p);
  return (sizeof(std::atomic<std::uint64_t>) * (1 + n) + sizeof(double) * 2 * n + 63) / 64 * 64;
}
std::atomic<std::uint64_t>* tags(void* slot) {
  return reinterpret_cast<std::atomic<std::uint64_t>*>(static_cast<std::byte*>(slot) +
                                                       sizeof(std::atomic<std::uint64_t>));
}
double* values(void* slot, int p) {
  return reinterpret_cast<double*>(reinterpret_cast<std::byte*>(tags(slot)) +
                                   sizeof(std::atomic<std::uint64_t>) *
                                       static_cast<std::size_t>(p));
}
double* sealed_values(void* slot, int p) {
  return values(slot, p) + p;
}
}  // namespace

ShmBoard::ShmBoard(const std::string& name, int p, int rank) : name_(name), p_(p), rank_(rank) {
  static_assert(std::atomic<std::uint64_t>::is_always_lock_free);
  if (p < 1 || rank < 0 || rank >= p) throw std::invalid_argument("shm board: bad rank or size");
  bytes_ = slot_bytes(p) * kSlots;
  const int fd = shm_open(name.c_str(), O_RDWR | O_CREAT, 0600);
  if (fd < 0) {
    throw std::runtime_error("shm board: shm_open(" + name + "): " + std::strerror(errno));
  }
  if (ftruncate(fd, static_cast<off_t>(bytes_)) != 0) {  // zero-filled on creation; idempotent
    const int e = errno;
    close(fd);
    throw std::runtime_error("shm board: ftruncate(" + name + "): " + std::strerror(e));
  }
  base_ = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (base_ == MAP_FAILED) {
    base_ = nullptr;
    throw std::runtime_error("shm board: mmap(" + name + "): " + std::strerror(errno));
  }
}

ShmBoard::~ShmBoard() {
  if (base_ != nullptr) munmap(base_, bytes_);
  if (rank_ == 0) shm_unlink(name_.c_str());
}

ShmBoard::Layout* ShmBoard::slot(std::uint64_t iteration) const {
  return reinterpret_cast<Layout*>(static_cast<std::byte*>(base_) +
                                   slot_bytes(p_) * (iteration % kSlots));
}

void ShmBoard::publish(std::uint64_t iteration, int rank, double estimate) {
  Layout* s = slot(iteration);
  values(s, p_)[rank] = estimate;
  tags(s)[rank].store(iteration + 1, std::memory_order_release);
}

std::vector<double> ShmBoard::published(std::uint64_t iteration) {
  Layout* s = slot(iteration);
  std::vector<double> out(static_cast<std::size_t>(p_), std::numeric_limits<double>::quiet_NaN());
  for (int r = 0; r < p_; ++r) {
    if (tags(s)[r].load(std::memory_order_acquire) == iteration + 1) {
      out[static_cast<std::size_t>(r)] = values(s, p_)[r];
    }
  }
  return out;
}

void ShmBoard::seal(std::uint64_t iteration, std::vector<double> arrivals) {
  Layout* s = slot(iteration);
  std::copy(arrivals.begin(), arrivals.end(), sealed_values(s, p_));
  s->sealed_tag.store(iteration + 1, std::memory_order_release);
}

std::optional<std::vector<double>> ShmBoard::sealed(std::uint64_t iteration,
                                                    std::chrono::nanoseconds timeout) {
  Layout* s = slot(iteration);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto pause = std::chrono::microseconds(1);
  while (s->sealed_tag.load(std::memory_order_acquire) != iteration + 1) {
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    if (pause < std::chrono::microseconds(16)) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(pause);
    }
    pause = std::min(pause * 2, std::chrono::microseconds(1000));
  }
  const double* v = sealed_values(s, p_);
  return std::vector<double>(v, v + p_);
}

}  // namespace bgl::collectives::arrival
