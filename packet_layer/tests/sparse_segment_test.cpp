// A job with fewer tasks than nodes: the segment holds FIFOs only for the nodes with tasks and
// per-link storage only for the links packets can cross, so its size follows the job, not the
// shape; packets still travel through the empty nodes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "bgl/packet_layer/endpoint.hpp"
#include "bgl/packet_layer/machine.hpp"
#include "bgl/test_support/shared_memory.hpp"
#include "bgl/torus_emu/route.hpp"

namespace bgl::packet_layer {
namespace {

using ::testing::HasSubstr;
using torus_emu::Coord;
using torus_emu::Direction;

constexpr std::size_t kMiB = std::size_t{1} << 20;

// A mapping file placing rank r at coords[r].
class MapFile {
 public:
  explicit MapFile(const std::vector<Coord>& coords)
      : path_(std::filesystem::temp_directory_path() /
              ("bglemu-sparse-" + std::to_string(::getpid()) + "-" + std::to_string(++count_) +
               ".map")) {
    std::ofstream out(path_);
    for (const auto& c : coords)
      out << c.x << ' ' << c.y << ' ' << c.z << '\n';
  }
  MapFile(const MapFile&) = delete;
  MapFile& operator=(const MapFile&) = delete;
  ~MapFile() { std::filesystem::remove(path_); }
  std::string path() const { return path_.string(); }

 private:
  static inline int count_ = 0;
  std::filesystem::path path_;
};

job_runtime::JobOptions sparse(const std::string& shape, const MapFile& map, int ntasks,
                               bool virtual_time = false) {
  job_runtime::JobOptions o;
  o.ntasks = ntasks;
  o.shape = shape;
  o.mode = "heater";
  o.mapfile = map.path();
  o.virtual_time = virtual_time;
  return o;
}

class Job {
 public:
  explicit Job(const job_runtime::JobOptions& o)
      : config(job_runtime::JobConfig::resolve(o)),
        memory(Machine::segment_bytes(config)),
        machine(Machine::format(memory.span(), config)) {}
  Endpoint& ep(torus_emu::Rank r) {
    auto& e = endpoints_[r];
    if (!e) e = std::make_unique<Endpoint>(machine, r, 0, job_runtime::WaitPolicy{});
    return *e;
  }

  job_runtime::JobConfig config;
  test_support::SharedMemory memory;
  Machine machine;

 private:
  std::map<torus_emu::Rank, std::unique_ptr<Endpoint>> endpoints_;
};

TEST(SparseSegment, SizeFollowsTheTasksNotTheShape) {
  job_runtime::JobOptions o;
  o.ntasks = 2;
  o.shape = "64x64x64";
  o.mode = "heater";
  const auto big = Machine::segment_bytes(job_runtime::JobConfig::resolve(o));
  EXPECT_LT(big, 32 * kMiB) << "2 tasks on 64x64x64 (was 98 GiB when every node had FIFOs)";
  o.virtual_time = true;
  EXPECT_LT(Machine::segment_bytes(job_runtime::JobConfig::resolve(o)), 32 * kMiB)
      << "with virtual time";
  o.virtual_time = false;
  o.shape = "2x1x1";
  const auto small = Machine::segment_bytes(job_runtime::JobConfig::resolve(o));
  // Same FIFOs; the difference is the shape's small per-node tables.
  EXPECT_LT(big - small, 20 * kMiB);
}

TEST(SparseSegment, OnlyNodesWithTasksHaveFifos) {
  const MapFile map({{0, 0, 0}, {5, 9, 3}});
  Job job(sparse("16x16x16", map, 2));
  const auto occupied = job.machine.job().occupied_nodes();
  ASSERT_EQ(occupied.size(), 2u);
  const auto far = job.machine.shape().node_id({5, 9, 3});
  EXPECT_EQ(occupied[0], 0u);
  EXPECT_EQ(occupied[1], far);
  EXPECT_EQ(job.machine.node_slot(far), 1u);
  EXPECT_EQ(job.machine.node_slot(1), job_runtime::kNoNodeSlot);
  EXPECT_THROW(job.machine.fifo(1, 0, 0), std::invalid_argument);
  EXPECT_NE(&job.machine.doorbell(0, 0), &job.machine.doorbell(far, 0));
  // The two nodes' FIFOs are distinct storage.
  EXPECT_NE(&job.machine.fifo(0, 1, 7).control(), &job.machine.fifo(far, 0, 0).control());
  // A view of the segment finds the same layout.
  const Machine view = Machine::attach(job.memory.span());
  EXPECT_EQ(view.node_slot(far), 1u);
  EXPECT_EQ(&view.fifo(far, 1, 2).control(), &job.machine.fifo(far, 1, 2).control());
}

TEST(SparseSegment, InjectingForANodeWithoutTasksIsRefused) {
  const MapFile map({{0, 0, 0}, {3, 0, 0}});
  Job job(sparse("8x8x8", map, 2));
  PacketSpec spec;
  spec.dest = {job.machine.shape().node_id({1, 0, 0}), 0};
  const std::byte payload[8]{};
  try {
    job.ep(0).inject(0, spec, payload);
    FAIL() << "accepted a packet for a node without tasks";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("hosts no task"));
  }
  spec.routing = Routing::adaptive;
  EXPECT_THROW(job.ep(0).inject(0, spec, payload), std::invalid_argument);
}

// Every kind of packet between tasks far apart in a big, nearly empty torus arrives; a deposit-bit
// line through empty nodes leaves copies only where there are tasks; virtual time books the links
// on the way (so they have calendars) and the link totals add up.
TEST(SparseSegment, PacketsCrossEmptyNodes) {
  const std::vector<Coord> at{{0, 0, 0}, {5, 9, 3}, {15, 15, 15}, {8, 0, 12}, {7, 0, 0}};
  const MapFile map(at);
  Job job(sparse("16x16x16", map, 5, /*virtual_time=*/true));
  const std::byte payload[40]{};
  std::uint32_t word = 0;
  std::vector<int> expected(at.size(), 0);
  for (torus_emu::Rank from = 0; from < at.size(); ++from) {
    for (torus_emu::Rank to = 0; to < at.size(); ++to) {
      for (const auto routing : {Routing::deterministic, Routing::adaptive}) {
        for (const bool high : {false, true}) {
          PacketSpec spec;
          spec.dest = job.ep(from).destination_of(to);
          spec.routing = routing;
          spec.high_priority = high;
          spec.word = ++word;
          ASSERT_EQ(job.ep(from).inject(0, spec, payload), InjectStatus::ok);
          ++expected[to];
        }
      }
    }
  }
  // From (0,0,0) along +x to (15,0,0), where nobody is: rank 4 at (7,0,0) gets the only copy.
  PacketSpec line;
  line.dest = {job.machine.shape().node_id({15, 0, 0}), 0};
  line.deposit_line = Direction::x_plus;
  ASSERT_EQ(job.ep(0).inject(1, line, payload), InjectStatus::ok);
  ++expected[4];
  for (torus_emu::Rank r = 0; r < at.size(); ++r)
    EXPECT_TRUE(job.ep(r).advance()) << "rank " << r << " still has packets waiting";
  EXPECT_EQ(job.ep(0).counters().deposit_copies, 1u) << "copies delivered to empty nodes";
  for (torus_emu::Rank r = 0; r < at.size(); ++r) {
    int got = 0;
    while (auto f = job.ep(r).poll()) {
      job.ep(r).discard(*f);
      ++got;
    }
    EXPECT_EQ(got, expected[r]) << "rank " << r;
  }
  std::uint64_t hops = 0, totals = 0;
  for (torus_emu::Rank r = 0; r < at.size(); ++r) {
    hops += job.ep(r).link_counters().total_packet_hops();
    job.ep(r).publish_statistics();
  }
  for (const auto& link : job.machine.links())
    totals += link.packets.load();
  EXPECT_GT(hops, 0u);
  EXPECT_EQ(totals, hops) << "every hop is in the segment's link totals";
  std::uint64_t booked = 0;
  for (const auto& calendar : job.machine.calendars())
    booked += calendar.packets();
  EXPECT_EQ(booked, hops) << "every hop booked its link's calendar";
}

// Routes between tasks, minimal in each dimension, and deposit-bit lines from a task along one
// dimension cross only links that have storage; far fewer links have it than the shape has.
TEST(SparseSegment, EveryLinkAPacketCanCrossHasStorage) {
  struct Case {
    const char* shape;
    const char* mesh;
    std::vector<Coord> tasks;
    std::size_t most_links;  // with storage (the shape has node_count * 6)
  };
  const std::vector<Case> cases{
      // Minimal arcs between task coordinates: x 0..3, y 7..0 (wrapping), z 0..2. Links along a
      // dimension need the other two coordinates on those arcs: x-links 8*2*3*2, y-links 4*8*3*2,
      // z-links 4*2*8*2.
      {"8x8x8", nullptr, {{0, 0, 0}, {3, 0, 0}, {1, 7, 2}}, 96 + 192 + 128},
      {"9x5x4", nullptr, {{8, 0, 3}, {0, 4, 0}, {4, 2, 2}, {2, 2, 2}}, 9 * 5 * 4 * 6},
      {"6x6x6", "z", {{1, 1, 0}, {5, 4, 5}}, 6 * 6 * 6 * 6},
      {"16x1x16", "x", {{3, 0, 15}, {12, 0, 0}, {7, 0, 7}}, 16 * 16 * 6},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.shape);
    const MapFile map(c.tasks);
    job_runtime::JobOptions o = sparse(c.shape, map, static_cast<int>(c.tasks.size()));
    if (c.mesh) o.mesh = c.mesh;
    Job job(o);
    const auto& shape = job.machine.shape();
    const auto index = job.machine.link_index();
    ASSERT_EQ(index.size(), static_cast<std::size_t>(shape.node_count()) * torus_emu::kDirections);
    EXPECT_LE(job.machine.links().size(), c.most_links);
    const auto check = [&](const torus_emu::Route& route) {
      route.for_each_link(shape, [&](torus_emu::Link l) {
        const auto i =
            static_cast<std::size_t>(l.node) * torus_emu::kDirections + torus_emu::index_of(l.dir);
        ASSERT_NE(index[i], kNoLink) << "link from " << torus_emu::to_string(shape.coord(l.node))
                                     << " towards " << torus_emu::to_string(l.dir);
        ASSERT_LT(index[i], job.machine.links().size());
      });
    };
    std::vector<torus_emu::NodeId> nodes;
    for (const auto& t : c.tasks)
      nodes.push_back(shape.node_id(t));
    torus_emu::Rng rng(7);
    for (const auto a : nodes) {
      for (const auto b : nodes) {
        check(torus_emu::deterministic_route(shape, a, b));
        for (int k = 0; k < 20; ++k)
          check(torus_emu::adaptive_route(shape, a, b, rng));
      }
      for (int d = 0; d < torus_emu::kDirections; ++d) {
        const auto dir = static_cast<Direction>(d);
        for (torus_emu::NodeId n = 0; n < static_cast<torus_emu::NodeId>(shape.node_count()); ++n)
          if (const auto line = torus_emu::make_line(shape, a, n, dir).line)
            check(torus_emu::line_route(shape, *line));
      }
    }
  }
}

}  // namespace
}  // namespace bgl::packet_layer
