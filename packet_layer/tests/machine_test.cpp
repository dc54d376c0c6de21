#include "bgl/packet_layer/machine.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bgl/job_runtime/log.hpp"
#include "bgl/job_runtime/rate_limit.hpp"
#include "bgl/packet_layer/endpoint.hpp"
#include "bgl/packet_layer/virtual_fifo.hpp"
#include "bgl/test_support/environment.hpp"
#include "bgl/test_support/in_process_machine.hpp"
#include "bgl/torus_emu/error.hpp"
#include "bgl/torus_emu/route.hpp"

namespace bgl::packet_layer {
namespace {

using ::testing::HasSubstr;
using torus_emu::Direction;
using namespace std::chrono_literals;

#if defined(__SANITIZE_THREAD__)
constexpr bool kUnderTsan = true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
constexpr bool kUnderTsan = true;
#else
constexpr bool kUnderTsan = false;
#endif
#else
constexpr bool kUnderTsan = false;
#endif
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kUnderAsan = true;
#else
constexpr bool kUnderAsan = false;
#endif

using test_support::QuietLog;
using test_support::ScopedEnv;
using test_support::SharedMemory;
using Job = test_support::InProcessMachine;
using test_support::job_options;

std::byte pattern(std::uint32_t seed, std::size_t i) {
  return static_cast<std::byte>((seed * 29u + i * 13u + 5u) & 0xffu);
}
// Empty payloads and buffers elsewhere have a non-null data(), so that only
// EmptyPayloadAndBufferSpansAreAccepted exercises null spans.
constexpr std::array<std::byte, 1> kNoPayloadStorage{};
constexpr std::span<const std::byte> kNoPayload(kNoPayloadStorage.data(), 0);

std::vector<std::byte> bytes(std::uint32_t seed, std::size_t n) {
  std::vector<std::byte> v;
  v.reserve(n + 1);
  v.resize(n);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = pattern(seed, i);
  return v;
}

PacketSpec to(Destination dest, std::uint32_t word = 0, std::uint8_t dispatch = 1) {
  PacketSpec s;
  s.dest = dest;
  s.word = word;
  s.dispatch = dispatch;
  return s;
}

std::uint8_t last_hop_fifo(const torus_emu::Shape& shape, torus_emu::NodeId from,
                           torus_emu::NodeId dest) {
  const auto last = torus_emu::deterministic_route(shape, from, dest).last();
  return last ? static_cast<std::uint8_t>(torus_emu::index_of(*last)) : std::uint8_t{kLocalFifo};
}

template <class F>
std::string config_error(F&& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a ConfigError";
  return "";
}

// ---------------------------------------------------------------------------------------------
// Segment layout, format and attach

TEST(Machine, SegmentSizeIsPageAlignedAndGrowsWithTheJob) {
  const job_runtime::JobConfig small =
      job_runtime::JobConfig::resolve(job_options(8, "2x2x2", "heater", 4));
  const job_runtime::JobConfig deep =
      job_runtime::JobConfig::resolve(job_options(8, "2x2x2", "heater", 64));
  const job_runtime::JobConfig big =
      job_runtime::JobConfig::resolve(job_options(64, "4x4x4", "heater", 4));
  for (const auto* c : {&small, &deep, &big})
    EXPECT_EQ(Machine::segment_bytes(*c) % 4096, 0u);
  EXPECT_LT(Machine::segment_bytes(small), Machine::segment_bytes(deep));
  EXPECT_LT(Machine::segment_bytes(small), Machine::segment_bytes(big));
  // Every node has 2 groups of 8 FIFOs of at least fifo_packets packets.
  EXPECT_GE(Machine::segment_bytes(deep), 8u * kFifoGroups * kReceptionFifos * 64 * sizeof(Packet));
}

// What the launcher allocates up front: everything but other hosts' nodes' FIFOs, in order and
// without overlap.
TEST(Machine, UsedExtentsLeaveOutOtherHostsNodes) {
  job_runtime::JobConfig one =
      job_runtime::JobConfig::resolve(job_options(8, "2x2x2", "heater", 64));
  const auto whole = Machine::used_extents(one);
  ASSERT_EQ(whole.size(), 1u);
  EXPECT_EQ(whole[0].offset, 0u);
  EXPECT_EQ(whole[0].bytes, Machine::segment_bytes(one));

  job_runtime::JobConfig two = one;
  two.placement = job_runtime::Placement::single(two.shape);
  two.placement.hosts.push_back(two.placement.hosts.front());
  for (std::size_t n = 4; n < two.placement.node_host.size(); ++n)
    two.placement.node_host[n] = 1;  // nodes 4..7 live on the other host
  const auto mine = Machine::used_extents(two);
  ASSERT_EQ(mine.size(), 2u);
  EXPECT_EQ(mine[0].offset, 0u);
  EXPECT_LT(mine[0].bytes, mine[1].offset);
  EXPECT_EQ(mine[1].offset + mine[1].bytes, Machine::segment_bytes(two));
  // The other host's four nodes are the gap: half of the node FIFOs.
  const std::size_t gap = mine[1].offset - mine[0].bytes;
  EXPECT_EQ(Machine::segment_bytes(two) -
                job_runtime::Segment::allocated_bytes(Machine::segment_bytes(two), mine),
            gap);
  EXPECT_GE(gap, 4u * kFifoGroups * kReceptionFifos * 64 * sizeof(Packet));
}

TEST(Machine, AttachReproducesTheFormattedJob) {
  job_runtime::JobOptions o = job_options(8, "2x2x2", "heater", 16);
  o.mapping = "ZYXT";
  o.seed = 4242;
  Job job(o);
  const Machine view = Machine::attach(job.memory.span());
  EXPECT_EQ(view.shape(), job.config.shape);
  EXPECT_EQ(view.config().mode, job_runtime::NodeMode::heater);
  EXPECT_EQ(view.config().fifo_packets, 16u);
  EXPECT_EQ(view.config().seed, 4242u);
  EXPECT_EQ(view.config().mapping_source, "order ZYXT");
  EXPECT_EQ(view.mapping().locations(), job.config.mapping.locations());
  EXPECT_EQ(view.mapping().tasks_per_node(), 1);
  EXPECT_EQ(view.config().summary(), job.config.summary());
}

TEST(Machine, AttachReproducesAVirtualNodeJobOnAMesh) {
  job_runtime::JobOptions o = job_options(15, "4x2x1", "vn", 8);
  o.mesh = "x";
  o.mapping = "TXYZ";
  Job job(o);
  const Machine view = Machine::attach(job.memory.span());
  EXPECT_EQ(view.shape().to_string(), "4x2x1 mesh:x");
  EXPECT_EQ(view.config().mode, job_runtime::NodeMode::virtual_node);
  EXPECT_EQ(view.mapping().tasks_per_node(), 2);
  EXPECT_EQ(view.mapping().size(), 15);
  EXPECT_EQ(view.mapping().locations(), job.config.mapping.locations());
  EXPECT_EQ(view.mapping().location(1), (torus_emu::TaskLocation{0, 1}));
  EXPECT_EQ(view.config().fifo_packets, 8u);
}

TEST(Machine, ViewsShareFifosBarrierLinksAndTaskSlots) {
  Job job(job_options(8, "2x2x2", "heater", 4));
  const Machine view = Machine::attach(job.memory.span());
  PacketHeader h;
  h.dest = {1, 0, 0};
  h.chunks = 1;
  h.word = 77;
  h.seal();
  ASSERT_TRUE(job.machine.fifo(1, 0, 3).try_push(h, kNoPayload));
  ReceptionFifo consumer = view.fifo(1, 0, 3);
  consumer.attach_consumer();
  ASSERT_NE(consumer.front(), nullptr);
  EXPECT_EQ(consumer.front()->header.word, 77u);
  EXPECT_EQ(view.fifo(1, 0, 2).control().tail.load(), 0u) << "FIFOs are distinct";
  EXPECT_EQ(view.fifo(1, 1, 3).control().tail.load(), 0u) << "groups are distinct";
  EXPECT_EQ(view.fifo(1, 0, 3).capacity(), 4u);

  EXPECT_EQ(&view.job().barrier().arrived, &job.machine.job().barrier().arrived);
  EXPECT_EQ(&view.doorbell(5, 1), &job.machine.doorbell(5, 1));
  EXPECT_NE(&view.doorbell(5, 0), &view.doorbell(5, 1));
  EXPECT_EQ(view.links().size(), 8u * 6u);
  EXPECT_EQ(view.links().data(), job.machine.links().data());
  EXPECT_EQ(&view.job().task(7), &job.machine.job().task(7));
  EXPECT_EQ(view.job().task(7).published.load(), 0u);
}

TEST(Machine, ReservesNamedRegionsForUpperLayers) {
  job_runtime::JobConfig c = job_runtime::JobConfig::resolve(job_options(8, "2x2x2", "heater", 4));
  const std::size_t plain = Machine::segment_bytes(c);
  c.regions.push_back({"collective", 1000});
  c.regions.push_back({"x", 5000});
  EXPECT_GE(Machine::segment_bytes(c), plain + 1000 + 5000);
  EXPECT_EQ(Machine::segment_bytes(c) % 4096, 0u);
  SharedMemory memory(Machine::segment_bytes(c));
  const Machine m = Machine::format(memory.span(), c);
  const auto a = m.job().region("collective");
  const auto b = m.job().region("x");
  ASSERT_EQ(a.size(), 1000u);
  ASSERT_EQ(b.size(), 5000u);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(a.data()) % 64, 0u);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b.data()) % 64, 0u);
  EXPECT_GE(a.data(), memory.span().data());
  EXPECT_LE(b.data() + b.size(), memory.span().data() + memory.span().size());
  EXPECT_TRUE(a.data() + a.size() <= b.data() || b.data() + b.size() <= a.data()) << "disjoint";
  EXPECT_TRUE(std::all_of(a.begin(), a.end(), [](std::byte v) { return v == std::byte{0}; }));
  EXPECT_TRUE(m.job().region("other").empty());
  EXPECT_TRUE(m.job().region("").empty());

  // Regions do not overlap the packet layer's own structures: fill them and check a FIFO works.
  std::fill(a.begin(), a.end(), std::byte{0xff});
  std::fill(b.begin(), b.end(), std::byte{0xff});
  const Machine view = Machine::attach(memory.span());
  EXPECT_EQ(view.job().region("collective").data(), a.data());
  EXPECT_EQ(view.job().region("x").size(), 5000u);
  // The packet layer's own two regions come after the job's.
  ASSERT_EQ(view.config().regions.size(), 4u);
  EXPECT_EQ(view.config().regions[0].name, "collective");
  EXPECT_EQ(view.config().regions[1].bytes, 5000u);
  EXPECT_EQ(view.config().regions[2].name, kNodesRegion);
  EXPECT_TRUE(view.config().regions[2].per_node);
  EXPECT_EQ(view.config().regions[3].name, kTorusRegion);
  for (const auto& link : view.links())
    EXPECT_EQ(link.packets.load(), 0u);
  for (torus_emu::Rank r = 0; r < 8; ++r)
    EXPECT_EQ(view.job().task(r).published.load(), 0u);
  ReceptionFifo f = view.fifo(7, 1, kHighPriorityFifo);
  f.attach_consumer();
  EXPECT_EQ(f.front(), nullptr);
}

TEST(Machine, RejectsBadRegionRequests) {
  job_runtime::JobConfig c = job_runtime::JobConfig::resolve(job_options(8, "2x2x2", "heater", 4));
  job_runtime::JobConfig long_name = c;
  long_name.regions.push_back({"sixteen-chars-xx", 64});
  EXPECT_THAT(config_error([&] { Machine::segment_bytes(long_name); }), HasSubstr("1..15"));
  job_runtime::JobConfig no_name = c;
  no_name.regions.push_back({"", 64});
  EXPECT_THAT(config_error([&] { Machine::segment_bytes(no_name); }), HasSubstr("1..15"));
  job_runtime::JobConfig too_many = c;
  for (const char* name : {"r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8", "r9", "r10"})
    too_many.regions.push_back({name, 64});
  EXPECT_THAT(config_error([&] { Machine::segment_bytes(too_many); }), HasSubstr("too many"));
}

TEST(Machine, FormatRejectsASegmentTooSmallForTheJob) {
  const job_runtime::JobConfig c = job_runtime::JobConfig::resolve(job_options(8, "2x2x2"));
  SharedMemory memory(Machine::segment_bytes(c));
  EXPECT_THAT(config_error([&] { Machine::format(memory.span().first(4096), c); }),
              HasSubstr("too small"));
}

TEST(Machine, AttachRejectsAZeroedSegment) {
  SharedMemory memory(1 << 16);
  EXPECT_THAT(config_error([&] { Machine::attach(memory.span()); }), HasSubstr("not a bglemu job"));
}

TEST(Machine, AttachRejectsTooSmallAndTruncatedSegments) {
  Job job(job_options(8, "2x2x2"));
  const auto whole = job.memory.span();
  EXPECT_THAT(config_error([&] { Machine::attach(whole.first(64)); }), HasSubstr("too small"));
  EXPECT_THAT(config_error([&] { Machine::attach(whole.first(0)); }), HasSubstr("too small"));
  EXPECT_THAT(config_error([&] { Machine::attach(whole.first(whole.size() - 4096)); }),
              HasSubstr("truncated"));
  EXPECT_NO_THROW(Machine::attach(whole));
}

TEST(Machine, AttachRejectsAnotherVersion) {
  Job job(job_options(8, "2x2x2"));
  std::uint32_t version = 0;
  std::memcpy(&version, job.memory.span().data() + 8, sizeof version);  // after the magic
  ASSERT_EQ(version, 11u);
  version = 10;
  std::memcpy(job.memory.span().data() + 8, &version, sizeof version);
  EXPECT_THAT(config_error([&] { Machine::attach(job.memory.span()); }),
              HasSubstr("another bglemu version"));
}

// Regression: Machine::attach once trusted the job description after the magic and version (an
// out-of-range mode byte, a non-power-of-two FIFO size whose rounded layout happened to match, a
// negative task count escaping as std::length_error). The field offsets below follow SegmentHeader
// in machine.cpp and are checked before corrupting.
TEST(Machine, AttachRejectsACorruptedJobDescription) {
  constexpr std::size_t kModeOffset = 39, kNtasksOffset = 40, kFifoOffset = 44;
  const auto corrupted = [](auto offset, auto expected, auto value) {
    auto job = std::make_unique<Job>(job_options(8, "2x2x2", "heater", 4));
    std::byte* field = job->memory.span().data() + offset;
    decltype(expected) current{};
    std::memcpy(&current, field, sizeof current);
    EXPECT_EQ(current, expected) << "SegmentHeader layout changed; update the offsets";
    std::memcpy(field, &value, sizeof value);
    return job;
  };
  {
    auto job = corrupted(kModeOffset, std::uint8_t{0}, std::uint8_t{3});
    EXPECT_THROW(Machine::attach(job->memory.span()), ConfigError) << "mode byte 3";
  }
  {
    auto job = corrupted(kFifoOffset, std::uint32_t{4}, std::uint32_t{3});
    EXPECT_THROW(Machine::attach(job->memory.span()), ConfigError) << "FIFO size 3";
  }
  {
    auto job = corrupted(kNtasksOffset, std::int32_t{8}, std::int32_t{-1});
    EXPECT_THROW(Machine::attach(job->memory.span()), ConfigError) << "-1 tasks";
  }
}

// ---------------------------------------------------------------------------------------------
// Endpoints: inject, poll, peek, receive

class EndpointTest : public ::testing::Test {
 protected:
  void SetUp() override { env_.unset("BGL_INJ_FIFO_PACKETS"); }
  ScopedEnv env_;
};

TEST_F(EndpointTest, InjectedPacketArrivesAtTheNeighbour) {
  Job job(job_options(8, "2x2x2"));
  Endpoint& src = job.ep(0);
  Endpoint& dst = job.ep(1);
  EXPECT_EQ(src.node(), 0u);
  EXPECT_EQ(dst.node(), 1u);
  EXPECT_EQ(dst.rank(), 1u);
  EXPECT_EQ(dst.group(), 0);
  EXPECT_EQ(&dst.machine(), &job.machine);
  EXPECT_FALSE(dst.poll());

  const auto payload = bytes(1, 100);
  PacketSpec spec = to(src.destination_of(1), 0xabcdef01, 42);
  ASSERT_EQ(src.inject(0, spec, payload), InjectStatus::ok);
  EXPECT_TRUE(src.injection_idle());
  EXPECT_EQ(src.pending_packets(), 0u);
  EXPECT_FALSE(src.poll()) << "nothing comes back to the sender";

  const auto f = dst.poll();
  ASSERT_TRUE(f);
  EXPECT_EQ(f->index, torus_emu::index_of(Direction::x_plus));
  const PacketHeader& h = dst.peek(*f);
  EXPECT_EQ(h.word, 0xabcdef01u);
  EXPECT_EQ(h.dispatch, 42);
  EXPECT_EQ(h.source_rank(), 0u);
  EXPECT_EQ(h.payload_bytes, 100);
  EXPECT_EQ(h.chunks, chunks_for(100));
  EXPECT_EQ(h.destination(), (torus_emu::Coord{1, 0, 0}));
  EXPECT_EQ(h.dest_group, 0);
  EXPECT_FALSE(h.adaptive());
  EXPECT_FALSE(h.high_priority());
  EXPECT_FALSE(h.deposit());
  EXPECT_EQ(h.validate(job.machine.shape(), kFifoGroups), PacketHeader::Problem::none);

  const auto view = dst.payload(*f);
  ASSERT_EQ(view.size(), 100u);
  EXPECT_TRUE(std::equal(view.begin(), view.end(), payload.begin()));
  const auto again = dst.poll();
  ASSERT_TRUE(again) << "poll does not consume";
  EXPECT_EQ(again->index, f->index);

  std::vector<std::byte> out(240);
  dst.receive(*f, out);
  EXPECT_TRUE(std::equal(payload.begin(), payload.end(), out.begin()));
  EXPECT_FALSE(dst.poll());

  EXPECT_EQ(src.counters().packets_injected, 1u);
  EXPECT_EQ(src.counters().bytes_injected, 128u);  // 4 chunks
  EXPECT_EQ(dst.counters().packets_received, 1u);
  EXPECT_EQ(dst.counters().payload_bytes_received, 100u);
}

TEST_F(EndpointTest, HeaderOnlyPacketsCarryNoPayload) {
  Job job(job_options(8, "2x2x2"));
  ASSERT_EQ(job.ep(0).inject(0, to({1, 0}, 5), kNoPayload), InjectStatus::ok);
  const auto f = job.ep(1).poll();
  ASSERT_TRUE(f);
  EXPECT_EQ(job.ep(1).peek(*f).chunks, 1);
  EXPECT_EQ(job.ep(1).payload(*f).size(), 0u);
  std::array<std::byte, 1> buffer{};
  job.ep(1).receive(*f, std::span<std::byte>(buffer.data(), 0));
  EXPECT_FALSE(job.ep(1).poll());
  EXPECT_EQ(job.ep(0).counters().bytes_injected, 32u);
}

// Regression: an empty std::span (data() == nullptr) as payload or receive buffer must not reach
// memcpy(dst, nullptr, 0) / memcpy(nullptr, src, 0), undefined behaviour that UBSan reports.
// Header-only packets are legitimate (chunks_for(0) == 1), so {} must be accepted.
TEST_F(EndpointTest, EmptyPayloadAndBufferSpansAreAccepted) {
  Job job(job_options(8, "2x2x2", "heater", 2));
  for (std::uint32_t i = 0; i < 3; ++i)  // the third waits in the injection FIFO (enqueue)
    ASSERT_EQ(job.ep(0).inject(0, to({1, 0}, i), {}), InjectStatus::ok);
  for (std::uint32_t i = 0; i < 3; ++i) {
    job.ep(0).advance();
    const auto f = job.ep(1).poll();
    ASSERT_TRUE(f);
    EXPECT_EQ(job.ep(1).peek(*f).word, i);
    job.ep(1).receive(*f, {});
  }
  EXPECT_EQ(job.ep(1).counters().packets_received, 3u);
}

TEST_F(EndpointTest, InjectSendsPayloadFollowedByMore) {
  Job job(job_options(8, "2x2x2", "heater", 2));
  const auto whole = bytes(11, 240);
  const std::span<const std::byte> all(whole);
  Endpoint& src = job.ep(0);
  Endpoint& dst = job.ep(1);
  // Two land directly, the others wait in the injection FIFO and are copied there.
  ASSERT_EQ(src.inject(0, to({1, 0}, 0), all.first(16), all.subspan(16, 84)), InjectStatus::ok);
  ASSERT_EQ(src.inject(0, to({1, 0}, 1), all.first(0), all.first(100)), InjectStatus::ok);
  ASSERT_EQ(src.inject(0, to({1, 0}, 2), all.first(99), all.subspan(99, 1)), InjectStatus::ok);
  ASSERT_EQ(src.inject(0, to({1, 0}, 3), all.first(200), all.subspan(200)), InjectStatus::ok);
  EXPECT_EQ(src.pending_packets(), 2u);
  for (std::uint32_t word = 0; word < 4; ++word) {
    src.advance();
    const auto f = dst.poll();
    ASSERT_TRUE(f) << word;
    EXPECT_EQ(dst.peek(*f).word, word);
    const std::size_t n = word == 3 ? 240 : 100;
    EXPECT_EQ(dst.peek(*f).payload_bytes, n);
    EXPECT_EQ(dst.peek(*f).chunks, chunks_for(n));
    const auto got = dst.payload(*f);
    ASSERT_EQ(got.size(), n);
    EXPECT_TRUE(std::equal(got.begin(), got.end(), all.begin())) << word;
    dst.discard(*f);
  }
  EXPECT_THROW(src.inject(0, to({1, 0}), all.first(200), all.first(41)), std::invalid_argument)
      << "241 bytes in two parts";
}

TEST_F(EndpointTest, PollPassesOverSkippedFifos) {
  Job job(job_options(8, "2x2x2"));
  Endpoint& dst = job.ep(1);
  PacketSpec urgent = to({1, 0}, 1);
  urgent.high_priority = true;
  ASSERT_EQ(job.ep(0).inject(0, urgent, kNoPayload), InjectStatus::ok);
  ASSERT_EQ(job.ep(0).inject(1, to({1, 0}, 2), kNoPayload), InjectStatus::ok);
  ASSERT_EQ(job.ep(1).inject(0, to({1, 0}, 3), kNoPayload), InjectStatus::ok);  // local FIFO

  constexpr std::uint32_t kSkipHigh = 1u << kHighPriorityFifo;
  constexpr std::uint32_t kSkipX = 1u << torus_emu::index_of(Direction::x_plus);
  constexpr std::uint32_t kSkipLocal = 1u << kLocalFifo;
  auto f = dst.poll(kSkipHigh | kSkipX);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->index, kLocalFifo);
  f = dst.poll(kSkipHigh | kSkipLocal);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->index, torus_emu::index_of(Direction::x_plus));
  EXPECT_FALSE(dst.poll(kSkipHigh | kSkipX | kSkipLocal));
  EXPECT_FALSE(dst.poll(0xffu));

  // Skipped packets stay where they are.
  std::vector<std::uint32_t> words;
  while (auto g = dst.poll()) {
    words.push_back(dst.peek(*g).word);
    dst.discard(*g);
  }
  ASSERT_EQ(words.size(), 3u);
  EXPECT_EQ(words[0], 1u) << "high priority first";
}

TEST_F(EndpointTest, ReceptionFifoIsTheDirectionOfTheLastHop) {
  Job job(job_options(64, "4x4x4", "heater", 4));
  const torus_emu::Shape& shape = job.machine.shape();
  std::map<int, int> fifos_seen;
  for (torus_emu::Rank from : {0u, 21u, 63u}) {
    for (torus_emu::Rank dest = 0; dest < 64; ++dest) {
      const auto d = job.ep(from).destination_of(dest);
      ASSERT_EQ(job.ep(from).inject(0, to(d, dest), bytes(dest, 8)), InjectStatus::ok);
      const auto f = job.ep(dest).poll();
      ASSERT_TRUE(f) << from << " -> " << dest;
      EXPECT_EQ(f->index, last_hop_fifo(shape, job.ep(from).node(), d.node))
          << torus_emu::to_string(shape.coord(job.ep(from).node())) << " -> "
          << torus_emu::to_string(shape.coord(d.node));
      EXPECT_EQ(job.ep(dest).peek(*f).word, dest);
      EXPECT_EQ(job.ep(dest).peek(*f).source_rank(), from);
      ++fifos_seen[f->index];
      job.ep(dest).discard(*f);
      EXPECT_FALSE(job.ep(dest).poll());
    }
  }
  // Every direction and the local FIFO were exercised.
  for (int i = 0; i <= kLocalFifo; ++i)
    EXPECT_GT(fifos_seen[i], 0) << "FIFO " << i;
  EXPECT_EQ(fifos_seen.count(kHighPriorityFifo), 0u);
}

TEST_F(EndpointTest, LastHopOfTheXYZRouteNamesTheFifo) {
  Job job(job_options(8, "2x2x2"));
  // (0,0,0) -> (1,1,0): +x then +y; the packet arrives on the y link.
  const auto dest = job.node({1, 1, 0});
  const auto route = torus_emu::deterministic_route(job.machine.shape(), 0, dest);
  ASSERT_EQ(route.last(), Direction::y_plus);
  ASSERT_EQ(job.ep(0).inject(0, to({dest, 0}), kNoPayload), InjectStatus::ok);
  const auto f = job.ep(dest).poll();
  ASSERT_TRUE(f);
  EXPECT_EQ(f->index, torus_emu::index_of(Direction::y_plus));
}

TEST_F(EndpointTest, PacketToOwnNodeLandsInTheLocalFifo) {
  Job job(job_options(8, "2x2x2"));
  ASSERT_EQ(job.ep(3).inject(2, to(job.ep(3).destination_of(3), 9), bytes(3, 3)), InjectStatus::ok);
  const auto f = job.ep(3).poll();
  ASSERT_TRUE(f);
  EXPECT_EQ(f->index, kLocalFifo);
  EXPECT_EQ(job.ep(3).peek(*f).word, 9u);
  EXPECT_EQ(job.ep(3).link_counters().total_packet_hops(), 0u) << "no link is used";
}

TEST_F(EndpointTest, VirtualNodeTasksOfOneNodeHaveSeparateFifoGroups) {
  Job job(job_options(16, "2x2x2", "vn"));  // XYZT: ranks 0..7 are t = 0, ranks 8..15 t = 1
  EXPECT_EQ(job.ep(0).destination_of(8).node, 0u);
  EXPECT_EQ(job.ep(0).destination_of(8).group, 1);
  EXPECT_EQ(job.ep(8).group(), 1);
  EXPECT_EQ(job.ep(8).node(), 0u);

  // To the node's other task: through the node's virtual FIFO, no torus link.
  ASSERT_EQ(job.ep(0).inject(0, to(job.ep(0).destination_of(8), 1), bytes(1, 50)),
            InjectStatus::ok);
  EXPECT_FALSE(job.ep(0).poll()) << "group 0 sees nothing";
  auto f = job.ep(8).poll();
  ASSERT_TRUE(f);
  EXPECT_EQ(f->index, kVirtualFifo);
  EXPECT_EQ(job.ep(8).peek(*f).word, 1u);
  EXPECT_EQ(job.ep(8).peek(*f).source_rank(), 0u);
  std::array<std::byte, 64> buffer{};
  job.ep(8).receive(*f, buffer);
  const auto expected = bytes(1, 50);
  EXPECT_TRUE(std::equal(expected.begin(), expected.end(), buffer.begin()));
  EXPECT_FALSE(job.ep(8).poll());
  EXPECT_EQ(job.ep(0).counters().virtual_packets, 1u);
  EXPECT_EQ(job.ep(0).link_counters().total_packet_hops(), 0u);

  // To itself: the local FIFO of its own group.
  ASSERT_EQ(job.ep(8).inject(0, to(job.ep(8).destination_of(8), 7), kNoPayload), InjectStatus::ok);
  f = job.ep(8).poll();
  ASSERT_TRUE(f);
  EXPECT_EQ(f->index, kLocalFifo);
  EXPECT_FALSE(job.ep(0).poll());
  job.ep(8).discard(*f);
  EXPECT_EQ(job.ep(8).counters().virtual_packets, 0u);

  ASSERT_EQ(job.ep(0).inject(0, to(job.ep(0).destination_of(9), 2), kNoPayload), InjectStatus::ok);
  EXPECT_FALSE(job.ep(1).poll()) << "the other task of node 1 sees nothing";
  f = job.ep(9).poll();
  ASSERT_TRUE(f);
  EXPECT_EQ(f->index, torus_emu::index_of(Direction::x_plus));
  EXPECT_EQ(job.ep(9).peek(*f).dest_group, 1);
  EXPECT_EQ(job.ep(9).peek(*f).word, 2u);
}

TEST_F(EndpointTest, VirtualFifoCarriesBothWaysInOrderUnderBackpressure) {
  Job job(job_options(16, "2x2x2", "vn", 4));
  Endpoint& a = job.ep(3);   // node 3, t = 0
  Endpoint& b = job.ep(11);  // node 3, t = 1
  // The virtual FIFO holds kVirtualFifoPackets, then the injection FIFO fills, then "full".
  std::uint32_t sent = 0;
  while (a.inject(0, to(a.destination_of(11), sent), bytes(sent, sent % 241)) == InjectStatus::ok)
    ASSERT_LT(++sent, 10'000u);
  EXPECT_EQ(sent, kVirtualFifoPackets + kDefaultInjectionDepth);
  EXPECT_EQ(a.pending_packets(), kDefaultInjectionDepth);
  ASSERT_EQ(b.inject(0, to(b.destination_of(3), 4242), kNoPayload), InjectStatus::ok);
  auto back = a.poll();
  ASSERT_TRUE(back) << "the other direction is independent";
  EXPECT_EQ(back->index, kVirtualFifo);
  EXPECT_EQ(a.peek(*back).word, 4242u);
  a.discard(*back);

  for (std::uint32_t next = 0, idle = 0; next < sent;) {
    const auto f = b.poll();
    if (!f) {
      a.advance();
      ASSERT_LT(++idle, 100u);
      continue;
    }
    ASSERT_EQ(f->index, kVirtualFifo);
    ASSERT_EQ(b.peek(*f).word, next);
    const auto got = b.payload(*f);
    const auto expected = bytes(next, next % 241);
    ASSERT_EQ(got.size(), expected.size());
    ASSERT_TRUE(std::equal(got.begin(), got.end(), expected.begin())) << next;
    b.discard(*f);
    ++next;
  }
  EXPECT_TRUE(a.advance());
  EXPECT_FALSE(b.poll());
  EXPECT_EQ(a.counters().virtual_packets, sent);
}

// Regression: a high-priority packet for the node's other task in virtual-node mode once went
// through the virtual FIFO, behind normal packets, although poll() promises high priority first.
TEST_F(EndpointTest, HighPriorityToTheOtherVirtualNodeTaskIsPolledFirst) {
  Job job(job_options(16, "2x2x2", "vn"));
  Endpoint& a = job.ep(0);
  Endpoint& b = job.ep(8);  // same node, t = 1
  ASSERT_EQ(a.inject(0, to(a.destination_of(8), 1), kNoPayload), InjectStatus::ok);
  PacketSpec urgent = to(a.destination_of(8), 2);
  urgent.high_priority = true;
  ASSERT_EQ(a.inject(0, urgent, kNoPayload), InjectStatus::ok);
  const auto f = b.poll();
  ASSERT_TRUE(f);
  EXPECT_EQ(b.peek(*f).word, 2u) << "high priority first";
  EXPECT_EQ(f->index, kHighPriorityFifo);
}

TEST_F(EndpointTest, HighPriorityLandsInItsFifoAndPollReturnsItFirst) {
  Job job(job_options(8, "2x2x2"));
  Endpoint& src = job.ep(0);
  Endpoint& dst = job.ep(1);
  ASSERT_EQ(src.inject(0, to({1, 0}, 1), bytes(1, 10)), InjectStatus::ok);
  ASSERT_EQ(src.inject(0, to({1, 0}, 2), bytes(2, 10)), InjectStatus::ok);
  PacketSpec urgent = to({1, 0}, 3);
  urgent.high_priority = true;
  ASSERT_EQ(src.inject(1, urgent, bytes(3, 10)), InjectStatus::ok);

  auto f = dst.poll();
  ASSERT_TRUE(f);
  EXPECT_EQ(f->index, kHighPriorityFifo);
  EXPECT_EQ(dst.peek(*f).word, 3u);
  EXPECT_TRUE(dst.peek(*f).high_priority());
  dst.discard(*f);
  for (std::uint32_t word : {1u, 2u}) {
    f = dst.poll();
    ASSERT_TRUE(f);
    EXPECT_EQ(f->index, torus_emu::index_of(Direction::x_plus));
    EXPECT_EQ(dst.peek(*f).word, word);
    dst.discard(*f);
  }
  EXPECT_FALSE(dst.poll());
}

TEST_F(EndpointTest, HighPriorityOvertakesPacketsAlreadyWaiting) {
  Job job(job_options(8, "2x2x2"));
  Endpoint& dst = job.ep(0);
  for (torus_emu::Rank r = 1; r < 8; ++r)
    ASSERT_EQ(job.ep(r).inject(0, to({0, 0}, r), kNoPayload), InjectStatus::ok);
  auto f = dst.poll();
  ASSERT_TRUE(f);
  dst.discard(*f);
  PacketSpec urgent = to({0, 0}, 100);
  urgent.high_priority = true;
  ASSERT_EQ(job.ep(7).inject(0, urgent, kNoPayload), InjectStatus::ok);
  f = dst.poll();
  ASSERT_TRUE(f);
  EXPECT_EQ(dst.peek(*f).word, 100u);
}

TEST_F(EndpointTest, PollServesEveryFifoSoNoneStarves) {
  Job job(job_options(8, "2x2x2"));
  Endpoint& dst = job.ep(3);  // (1,1,0): rank 2 (0,1,0) arrives on +x, rank 1 (1,0,0) on +y
  constexpr std::uint32_t kEach = 40;
  for (std::uint32_t i = 0; i < kEach; ++i) {
    ASSERT_EQ(job.ep(2).inject(0, to({3, 0}, 1000 + i), kNoPayload), InjectStatus::ok);
    ASSERT_EQ(job.ep(1).inject(0, to({3, 0}, 2000 + i), kNoPayload), InjectStatus::ok);
  }
  std::map<std::uint32_t, std::uint32_t> next{{1000, 1000}, {2000, 2000}};
  std::map<std::uint32_t, std::uint32_t> left{{1000, kEach}, {2000, kEach}};
  std::uint32_t run = 0, longest_run = 0, previous = 0, switches = 0;
  while (auto f = dst.poll()) {
    const std::uint32_t word = dst.peek(*f).word;
    const std::uint32_t source = word / 1000 * 1000;
    EXPECT_EQ(word, next[source]++) << "each FIFO in order";
    EXPECT_EQ(f->index, source == 1000 ? torus_emu::index_of(Direction::x_plus)
                                       : torus_emu::index_of(Direction::y_plus));
    // Only runs taken while the other FIFO had packets waiting count as starving it.
    const bool other_waiting = left[source == 1000 ? 2000 : 1000] > 0;
    if (source == previous) {
      if (other_waiting) longest_run = std::max(longest_run, ++run);
    } else {
      run = 1;
      ++switches;
    }
    previous = source;
    --left[source];
    dst.discard(*f);
  }
  EXPECT_EQ(left[1000] + left[2000], 0u);
  EXPECT_GE(switches, 3u) << "polling moves between the FIFOs";
  EXPECT_LE(longest_run, 16u) << "one stream must not monopolise poll()";
}

TEST_F(EndpointTest, ReceiveCopiesExactlyThePayloadToAnyAlignment) {
  Job job(job_options(8, "2x2x2"));
  Endpoint& src = job.ep(0);
  Endpoint& dst = job.ep(1);
  constexpr std::byte kGuard{0xee};
  std::uint32_t seed = 0;
  for (std::size_t offset : {1u, 3u, 7u, 0u, 32u}) {
    for (std::size_t n : {1u, 7u, 13u, 64u, 239u, 240u}) {
      ++seed;
      const auto payload = bytes(seed, n);
      ASSERT_EQ(src.inject(0, to({1, 0}, seed), payload), InjectStatus::ok);
      alignas(64) std::array<std::byte, 320> buffer;
      buffer.fill(kGuard);
      const auto f = dst.poll();
      ASSERT_TRUE(f);
      // A destination larger than the payload: only payload_bytes are written.
      dst.receive(*f, std::span<std::byte>(buffer.data() + offset, 250));
      for (std::size_t i = 0; i < buffer.size(); ++i) {
        const bool inside = i >= offset && i < offset + n;
        ASSERT_EQ(buffer[i], inside ? payload[i - offset] : kGuard)
            << "offset " << offset << ", " << n << " bytes, byte " << i;
      }
    }
  }
  EXPECT_EQ(dst.counters().packets_received, seed);
}

TEST_F(EndpointTest, ReceiveIntoATooSmallBufferThrowsAndKeepsThePacket) {
  Job job(job_options(8, "2x2x2"));
  const auto payload = bytes(4, 50);
  ASSERT_EQ(job.ep(0).inject(0, to({1, 0}, 4), payload), InjectStatus::ok);
  Endpoint& dst = job.ep(1);
  auto f = dst.poll();
  ASSERT_TRUE(f);
  std::array<std::byte, 64> buffer{};
  EXPECT_THROW(dst.receive(*f, std::span<std::byte>(buffer.data(), 49)), std::invalid_argument);
  EXPECT_THROW(dst.receive(*f, {}), std::invalid_argument);
  EXPECT_EQ(dst.counters().packets_received, 0u);
  f = dst.poll();
  ASSERT_TRUE(f) << "the packet is still there";
  dst.receive(*f, std::span<std::byte>(buffer.data(), 50));
  EXPECT_TRUE(std::equal(payload.begin(), payload.end(), buffer.begin()));
  EXPECT_FALSE(dst.poll());
}

TEST_F(EndpointTest, DiscardUnloadsAndCountsThePacket) {
  Job job(job_options(8, "2x2x2"));
  ASSERT_EQ(job.ep(0).inject(0, to({1, 0}, 1), bytes(1, 33)), InjectStatus::ok);
  ASSERT_EQ(job.ep(0).inject(0, to({1, 0}, 2), bytes(2, 44)), InjectStatus::ok);
  Endpoint& dst = job.ep(1);
  auto f = dst.poll();
  ASSERT_TRUE(f);
  dst.discard(*f);
  f = dst.poll();
  ASSERT_TRUE(f);
  EXPECT_EQ(dst.peek(*f).word, 2u);
  dst.discard(*f);
  EXPECT_FALSE(dst.poll());
  EXPECT_EQ(dst.counters().packets_received, 2u);
  EXPECT_EQ(dst.counters().payload_bytes_received, 77u);
}

TEST_F(EndpointTest, InjectRejectsMalformedRequests) {
  Job job(job_options(8, "2x2x2"));
  Endpoint& src = job.ep(0);
  const auto big = bytes(0, 241);
  EXPECT_THROW(src.inject(0, to({1, 0}), big), std::invalid_argument);
  EXPECT_THROW(src.inject(0, to({8, 0}), kNoPayload), std::invalid_argument);
  EXPECT_THROW(src.inject(0, to({1000000, 0}), kNoPayload), std::invalid_argument);
  EXPECT_THROW(src.inject(0, to({1, 2}), kNoPayload), std::invalid_argument);
  EXPECT_THROW(src.inject(-1, to({1, 0}), kNoPayload), std::invalid_argument);
  EXPECT_THROW(src.inject(kInjectionFifos, to({1, 0}), kNoPayload), std::invalid_argument);

  PacketSpec diagonal = to({job.node({1, 1, 0}), 0});
  diagonal.deposit_line = Direction::x_plus;
  EXPECT_THROW(src.inject(0, diagonal, kNoPayload), std::invalid_argument);

  PacketSpec adaptive_line = to({1, 0});
  adaptive_line.deposit_line = Direction::x_plus;
  adaptive_line.routing = Routing::adaptive;
  EXPECT_THROW(src.inject(0, adaptive_line, kNoPayload), std::invalid_argument);

  PacketSpec wrong_dimension = to({1, 0});
  wrong_dimension.deposit_line = Direction::y_plus;
  EXPECT_THROW(src.inject(0, wrong_dimension, kNoPayload), std::invalid_argument);

  PacketSpec to_self = to({0, 0});
  to_self.deposit_line = Direction::x_plus;
  EXPECT_THROW(src.inject(0, to_self, kNoPayload), std::invalid_argument);

  // Nothing was sent, counted or routed.
  EXPECT_EQ(src.counters().packets_injected, 0u);
  EXPECT_EQ(src.link_counters().total_packet_hops(), 0u);
  EXPECT_TRUE(src.injection_idle());
  for (torus_emu::Rank r = 0; r < 8; ++r)
    EXPECT_FALSE(job.ep(r).poll()) << r;

  // 240 bytes is the largest payload.
  EXPECT_EQ(src.inject(0, to({1, 0}), std::span<const std::byte>(big).first(240)),
            InjectStatus::ok);
}

TEST_F(EndpointTest, ConstructorRejectsAFifoGroupOtherThan0Or1) {
  Job job(job_options(8, "2x2x2"));
  EXPECT_THROW(Endpoint(job.machine, 0, 2, job.policy), std::invalid_argument);
  EXPECT_THROW(Endpoint(job.machine, 0, -1, job.policy), std::invalid_argument);
}

TEST_F(EndpointTest, AdaptivePacketsTakeMinimalRoutesAndArriveOnAMinimalDirection) {
  Job job(job_options(64, "4x4x4", "heater", 64));
  const auto dest = job.node({1, 1, 1});
  std::map<int, int> seen;
  for (std::uint32_t i = 0; i < 60; ++i) {
    PacketSpec spec = to({dest, 0}, i);
    spec.routing = Routing::adaptive;
    ASSERT_EQ(job.ep(0).inject(0, spec, kNoPayload), InjectStatus::ok);
    const auto f = job.ep(dest).poll();
    ASSERT_TRUE(f);
    EXPECT_TRUE(job.ep(dest).peek(*f).adaptive());
    ++seen[f->index];
    job.ep(dest).discard(*f);
  }
  for (const auto& [index, count] : seen) {
    EXPECT_TRUE(index == torus_emu::index_of(Direction::x_plus) ||
                index == torus_emu::index_of(Direction::y_plus) ||
                index == torus_emu::index_of(Direction::z_plus))
        << index;
  }
  EXPECT_GT(seen.size(), 1u) << "adaptive routes vary";
  EXPECT_EQ(job.ep(0).link_counters().total_packet_hops(), 60u * 3u) << "always 3 hops";
}

// Along one dimension the only minimal route is the deterministic one: adaptive packets take the
// plain path there, and nothing a receiver or the link totals can see differs but the header flag.
TEST_F(EndpointTest, AdaptivePacketsAlongOneDimensionCrossTheDeterministicRoutesLinks) {
  Job job(job_options(64, "4x4x4", "heater", 64));
  const auto dest = job.node({2, 0, 0});  // two hops either way: ties go plus
  for (std::uint32_t i = 0; i < 10; ++i) {
    PacketSpec spec = to({dest, 0}, i);
    spec.routing = Routing::adaptive;
    const std::array<std::byte, 3> payload{std::byte{1}, std::byte(i), std::byte{3}};
    ASSERT_EQ(job.ep(0).inject(0, spec, payload), InjectStatus::ok);
    const auto f = job.ep(dest).poll();
    ASSERT_TRUE(f);
    EXPECT_EQ(f->index, torus_emu::index_of(Direction::x_plus));
    EXPECT_TRUE(job.ep(dest).peek(*f).adaptive());
    EXPECT_EQ(job.ep(dest).peek(*f).word, i);
    std::array<std::byte, 3> got{};
    job.ep(dest).receive(*f, got);
    EXPECT_EQ(got, payload);
  }
  const auto& links = job.ep(0).link_counters();
  EXPECT_EQ(links.total_packet_hops(), 20u);
  EXPECT_EQ(links.at({job.node({0, 0, 0}), Direction::x_plus}).packets, 10u);
  EXPECT_EQ(links.at({job.node({1, 0, 0}), Direction::x_plus}).packets, 10u);
}

// ---------------------------------------------------------------------------------------------
// Backpressure

TEST_F(EndpointTest, FullReceptionFifoBackpressuresIntoTheInjectionFifoWithoutLoss) {
  Job job(job_options(8, "2x2x2", "heater", 4));
  Endpoint& src = job.ep(0);
  Endpoint& dst = job.ep(1);
  std::uint32_t sent = 0;
  for (;;) {
    const auto size = static_cast<std::size_t>(sent * 11 % 241);
    const InjectStatus status = src.inject(0, to({1, 0}, sent), bytes(sent, size));
    if (status == InjectStatus::full) break;
    ++sent;
    ASSERT_LT(sent, 1000u) << "inject never reported full";
    EXPECT_EQ(src.pending_packets(), sent > 4 ? sent - 4 : 0) << sent;
  }
  EXPECT_EQ(sent, 4 + kDefaultInjectionDepth);
  EXPECT_EQ(src.pending_packets(), kDefaultInjectionDepth);
  EXPECT_FALSE(src.injection_idle());
  EXPECT_FALSE(src.advance());
  EXPECT_EQ(src.counters().injection_full, 1u);
  EXPECT_EQ(src.counters().packets_injected, sent) << "the refused packet is not counted";
  EXPECT_GT(src.counters().delivery_stalls, 0u);
  EXPECT_EQ(src.inject(0, to({1, 0}, sent), kNoPayload), InjectStatus::full) << "still full";
  EXPECT_EQ(src.counters().injection_full, 2u);

  // A packet for another node through another injection FIFO is not held up.
  ASSERT_EQ(src.inject(1, to({2, 0}, 999), kNoPayload), InjectStatus::ok);
  ASSERT_TRUE(job.ep(2).poll());

  std::uint32_t received = 0, idle_rounds = 0;
  while (received < sent) {
    const auto f = dst.poll();
    if (!f) {
      src.advance();
      ASSERT_LT(++idle_rounds, 100u) << "packets stuck after " << received;
      continue;
    }
    const PacketHeader& h = dst.peek(*f);
    ASSERT_EQ(h.word, received) << "in order, exactly once";
    const auto expected = bytes(received, received * 11 % 241);
    const auto got = dst.payload(*f);
    ASSERT_EQ(got.size(), expected.size());
    EXPECT_TRUE(std::equal(got.begin(), got.end(), expected.begin())) << received;
    dst.discard(*f);
    ++received;
  }
  EXPECT_TRUE(src.advance());
  EXPECT_TRUE(src.injection_idle());
  EXPECT_EQ(src.pending_packets(), 0u);
  EXPECT_FALSE(dst.poll()) << "no duplicates";

  // And the sender can go on.
  ASSERT_EQ(src.inject(0, to({1, 0}, sent), kNoPayload), InjectStatus::ok);
  const auto f = dst.poll();
  ASSERT_TRUE(f);
  EXPECT_EQ(dst.peek(*f).word, sent);
}

TEST_F(EndpointTest, InjectionDepthComesFromTheEnvironment) {
  env_.set("BGL_INJ_FIFO_PACKETS", "2");
  Job job(job_options(8, "2x2x2", "heater", 4));
  std::uint32_t sent = 0;
  while (job.ep(0).inject(0, to({1, 0}, sent), kNoPayload) == InjectStatus::ok)
    ASSERT_LT(++sent, 100u);
  EXPECT_EQ(sent, 4u + 2u);
  EXPECT_EQ(job.ep(0).pending_packets(), 2u);
}

TEST_F(EndpointTest, MalformedInjectionDepthVariableIsAConfigError) {
  env_.set("BGL_INJ_FIFO_PACKETS", "0");
  Job job(job_options(8, "2x2x2"));
  EXPECT_THAT(config_error([&] { job.ep(0); }), HasSubstr("BGL_INJ_FIFO_PACKETS='0'"));
}

// ---------------------------------------------------------------------------------------------
// Deposit bit

// Polls every rank and returns the words of the packets each received, in arrival order.
std::vector<std::vector<std::uint32_t>> drain_all(Job& job, int ranks, int expect_fifo) {
  std::vector<std::vector<std::uint32_t>> got(static_cast<std::size_t>(ranks));
  for (int r = 0; r < ranks; ++r) {
    Endpoint& ep = job.ep(static_cast<torus_emu::Rank>(r));
    while (auto f = ep.poll()) {
      EXPECT_EQ(f->index, expect_fifo) << "rank " << r;
      EXPECT_TRUE(ep.peek(*f).deposit());
      got[static_cast<std::size_t>(r)].push_back(ep.peek(*f).word);
      ep.discard(*f);
    }
  }
  return got;
}

TEST_F(EndpointTest, DepositLineDeliversOneCopyToEveryNodeUpToTheDestination) {
  Job job(job_options(8, "8x1x1"));
  PacketSpec spec = to({5, 0}, 1);
  spec.deposit_line = Direction::x_plus;
  ASSERT_EQ(job.ep(2).inject(0, spec, bytes(1, 20)), InjectStatus::ok);
  EXPECT_TRUE(job.ep(2).injection_idle());
  const auto got = drain_all(job, 8, torus_emu::index_of(Direction::x_plus));
  for (int r = 0; r < 8; ++r) {
    const std::size_t copies = (r >= 3 && r <= 5) ? 1 : 0;
    EXPECT_EQ(got[static_cast<std::size_t>(r)].size(), copies) << "node " << r;
  }
  EXPECT_EQ(job.ep(2).counters().deposit_copies, 2u) << "copies besides the destination's";
  EXPECT_EQ(job.ep(2).counters().packets_injected, 1u);
  for (torus_emu::NodeId n : {2u, 3u, 4u})
    EXPECT_EQ(job.ep(2).link_counters().at({n, Direction::x_plus}).packets, 1u) << n;
  EXPECT_EQ(job.ep(2).link_counters().total_packet_hops(), 3u);
}

TEST_F(EndpointTest, DepositLineMayGoTheLongWayRoundTheTorus) {
  Job job(job_options(8, "8x1x1"));
  PacketSpec spec = to({5, 0}, 2);
  spec.deposit_line = Direction::x_minus;
  ASSERT_EQ(job.ep(2).inject(0, spec, kNoPayload), InjectStatus::ok);
  const auto got = drain_all(job, 8, torus_emu::index_of(Direction::x_minus));
  for (int r = 0; r < 8; ++r) {
    const bool on_line = r == 1 || r == 0 || r == 7 || r == 6 || r == 5;
    EXPECT_EQ(got[static_cast<std::size_t>(r)].size(), on_line ? 1u : 0u) << "node " << r;
  }
  EXPECT_EQ(job.ep(2).counters().deposit_copies, 4u);
}

TEST_F(EndpointTest, DepositLineOnAMeshMustPointAtTheDestination) {
  job_runtime::JobOptions o = job_options(8, "8x1x1");
  o.mesh = "x";
  Job job(o);
  PacketSpec away = to({5, 0});
  away.deposit_line = Direction::x_minus;
  EXPECT_THROW(job.ep(2).inject(0, away, kNoPayload), std::invalid_argument);
  PacketSpec towards = to({5, 0});
  towards.deposit_line = Direction::x_plus;
  EXPECT_EQ(job.ep(2).inject(0, towards, kNoPayload), InjectStatus::ok);
}

TEST_F(EndpointTest, DepositLineBlockedHalfwayResumesWithoutDuplicates) {
  Job job(job_options(8, "8x1x1", "heater", 2));
  Endpoint& src = job.ep(0);
  // Two lines fill the 2-slot FIFOs of nodes 1..3; the third and fourth must wait.
  for (std::uint32_t i = 0; i < 4; ++i) {
    PacketSpec spec = to({3, 0}, i);
    spec.deposit_line = Direction::x_plus;
    ASSERT_EQ(src.inject(0, spec, bytes(i, 5)), InjectStatus::ok);
  }
  EXPECT_EQ(src.pending_packets(), 2u);

  // Node 1 takes its packets first: line 2 then reaches node 1 only (node 2 is still full).
  std::vector<std::vector<std::uint32_t>> got(4);
  const auto take = [&](torus_emu::Rank r) {
    while (auto f = job.ep(r).poll()) {
      got[r].push_back(job.ep(r).peek(*f).word);
      job.ep(r).discard(*f);
    }
  };
  take(1);
  EXPECT_FALSE(src.advance());
  take(1);
  take(2);
  EXPECT_FALSE(src.advance());
  take(3);
  for (int round = 0; round < 20 && !src.advance(); ++round) {
    take(1);
    take(2);
    take(3);
  }
  EXPECT_TRUE(src.advance());
  take(1);
  take(2);
  take(3);
  for (torus_emu::Rank r = 1; r <= 3; ++r)
    EXPECT_EQ(got[r], (std::vector<std::uint32_t>{0, 1, 2, 3})) << "node " << r;
  for (torus_emu::Rank r : {4u, 5u, 6u, 7u, 0u})
    EXPECT_FALSE(job.ep(r).poll()) << r;
  EXPECT_EQ(src.counters().deposit_copies, 8u);
}

// Regression: deposit-bit copies used to go to the line direction's normal FIFO even when the
// packet was high priority, so poll() did not give them priority although the header said so.
TEST_F(EndpointTest, HighPriorityDepositCopiesLandInTheHighPriorityFifo) {
  Job job(job_options(8, "8x1x1"));
  ASSERT_EQ(job.ep(0).inject(0, to({3, 0}, 1), kNoPayload),
            InjectStatus::ok);  // a normal packet first
  PacketSpec spec = to({3, 0}, 2);
  spec.deposit_line = Direction::x_plus;
  spec.high_priority = true;
  ASSERT_EQ(job.ep(0).inject(0, spec, kNoPayload), InjectStatus::ok);
  for (torus_emu::Rank r : {1u, 2u, 3u}) {
    const auto f = job.ep(r).poll();
    ASSERT_TRUE(f) << r;
    EXPECT_EQ(f->index, kHighPriorityFifo) << "node " << r;
    EXPECT_EQ(job.ep(r).peek(*f).word, 2u) << "node " << r;
  }
}

// ---------------------------------------------------------------------------------------------
// Counters and statistics

TEST_F(EndpointTest, LinkCountersShowThePacketOnEveryHopOfItsRoute) {
  Job job(job_options(64, "4x4x4", "heater", 4));
  const torus_emu::Shape& shape = job.machine.shape();
  const auto dest = job.node({3, 2, 1});
  Endpoint& src = job.ep(0);
  ASSERT_EQ(src.inject(0, to({dest, 0}), bytes(0, 100)), InjectStatus::ok);
  const auto route = torus_emu::deterministic_route(shape, 0, dest);
  ASSERT_EQ(route.hops(), 4);  // -x, +y, +y, +z
  int hops = 0;
  route.for_each_link(shape, [&](torus_emu::Link link) {
    EXPECT_EQ(src.link_counters().at(link).packets, 1u)
        << torus_emu::to_string(shape.coord(link.node)) << " " << torus_emu::to_string(link.dir);
    EXPECT_EQ(src.link_counters().at(link).bytes, 128u);
    ++hops;
  });
  EXPECT_EQ(hops, 4);
  EXPECT_EQ(src.link_counters().at({0, Direction::x_minus}).packets, 1u);
  EXPECT_EQ(src.link_counters().at({job.node({3, 0, 0}), Direction::y_plus}).packets, 1u);
  EXPECT_EQ(src.link_counters().at({job.node({3, 1, 0}), Direction::y_plus}).packets, 1u);
  EXPECT_EQ(src.link_counters().at({job.node({3, 2, 0}), Direction::z_plus}).packets, 1u);
  EXPECT_EQ(src.link_counters().total_packet_hops(), 4u);
  EXPECT_EQ(src.link_counters().total_bytes(), 4u * 128u);
}

// A peer that sends nothing but garbage gets ten full log lines, then a count at most once a
// second: the log does not grow with the number of bad packets.
TEST_F(EndpointTest, AFloodOfMalformedPacketsIsLoggedAsACount) {
  std::ostringstream out;
  const auto previous = spdlog::default_logger();
  const auto level = spdlog::get_level();
  spdlog::set_default_logger(std::make_shared<spdlog::logger>(
      "capture", std::make_shared<spdlog::sinks::ostream_sink_st>(out)));
  spdlog::set_level(spdlog::level::err);
  Job job(job_options(8, "2x2x2", "heater", 2048));
  Endpoint& dst = job.ep(1);
  const auto payload = bytes(5, 8);
  PacketHeader bad;
  bad.dest = {1, 0, 0};
  bad.chunks = 1;
  bad.payload_bytes = 8;
  bad.seal();
  bad.check ^= 0x10;
  for (int i = 0; i < 2000; ++i)
    ASSERT_TRUE(job.machine.fifo(1, 0, kHighPriorityFifo).try_push(bad, payload));
  while (dst.poll()) {
  }
  spdlog::set_default_logger(previous);
  spdlog::set_level(level);
  EXPECT_EQ(dst.counters().malformed, 2000u);
  const std::string log = out.str();
  const auto lines = std::count(log.begin(), log.end(), '\n');
  EXPECT_GE(lines, 11) << log;
  EXPECT_LE(lines, 13) << log;  // ten in full, the notice, a count if a second went by
  EXPECT_THAT(log, ::testing::HasSubstr("further malformed packets are only counted"));
}

TEST(RateLimit, LogsTheFirstInFullThenACountAtMostOncePerPeriod) {
  using namespace std::chrono_literals;
  job_runtime::log::RateLimit limit;
  const auto t0 = job_runtime::log::RateLimit::Clock::time_point{} + 100s;
  for (std::uint64_t i = 0; i < job_runtime::log::RateLimit::kInFull; ++i)
    EXPECT_TRUE(limit.note(t0).in_full);
  for (int i = 0; i < 5; ++i) {
    const auto v = limit.note(t0 + 500ms);
    EXPECT_FALSE(v.in_full);
    EXPECT_EQ(v.summarize, 0u);
  }
  auto v = limit.note(t0 + 1100ms);
  EXPECT_FALSE(v.in_full);
  EXPECT_EQ(v.summarize, 6u);  // the five above and this one
  EXPECT_EQ(limit.note(t0 + 1500ms).summarize, 0u);
  EXPECT_EQ(limit.note(t0 + 2200ms).summarize, 2u);
  EXPECT_EQ(limit.seen(), job_runtime::log::RateLimit::kInFull + 8);
  EXPECT_EQ(limit.unreported(), 0u);
}

TEST_F(EndpointTest, MalformedPacketsAreSkippedAndCounted) {
  QuietLog quiet;
  Job job(job_options(8, "2x2x2"));
  Endpoint& dst = job.ep(1);
  const auto payload = bytes(5, 8);

  PacketHeader bad;
  bad.dest = {1, 0, 0};
  bad.chunks = 1;
  bad.payload_bytes = 8;
  bad.word = 666;
  bad.seal();
  bad.check ^= 0x10;
  ASSERT_TRUE(
      job.machine.fifo(1, 0, torus_emu::index_of(Direction::x_plus)).try_push(bad, payload));
  ASSERT_EQ(job.ep(0).inject(0, to({1, 0}, 7), payload), InjectStatus::ok);  // behind it

  auto f = dst.poll();
  ASSERT_TRUE(f);
  EXPECT_EQ(dst.peek(*f).word, 7u);
  EXPECT_EQ(dst.counters().malformed, 1u);
  dst.discard(*f);

  // Only garbage: nothing to return.
  ASSERT_TRUE(job.machine.fifo(1, 0, kHighPriorityFifo).try_push(bad, payload));
  EXPECT_FALSE(dst.poll());
  EXPECT_EQ(dst.counters().malformed, 2u);
  EXPECT_FALSE(dst.poll());
  EXPECT_EQ(dst.counters().malformed, 2u);

  // Well-formed headers that do not belong here are discarded too.
  PacketHeader other_node = bad;
  other_node.dest = {0, 1, 0};
  other_node.seal();
  PacketHeader other_group = bad;
  other_group.dest_group = 1;
  other_group.seal();
  ASSERT_TRUE(job.machine.fifo(1, 0, kLocalFifo).try_push(other_node, payload));
  ASSERT_TRUE(job.machine.fifo(1, 0, kLocalFifo).try_push(other_group, payload));
  ASSERT_EQ(job.ep(0).inject(0, to({1, 0}, 8), payload), InjectStatus::ok);
  f = dst.poll();
  ASSERT_TRUE(f);
  EXPECT_EQ(dst.peek(*f).word, 8u);
  dst.discard(*f);
  EXPECT_FALSE(dst.poll());
  EXPECT_EQ(dst.counters().malformed, 4u);
  EXPECT_EQ(dst.counters().packets_received, 2u) << "garbage is not counted as received";
}

TEST_F(EndpointTest, PublishStatisticsWritesCountersAndLinkTotalsOnce) {
  Job job(job_options(8, "2x2x2"));
  Endpoint& a = job.ep(0);
  Endpoint& b = job.ep(7);
  for (std::uint32_t i = 0; i < 3; ++i)
    ASSERT_EQ(a.inject(0, to({7, 0}, i), bytes(i, 40)), InjectStatus::ok);
  ASSERT_EQ(b.inject(0, to({0, 0}, 9), bytes(9, 1)), InjectStatus::ok);
  while (auto f = b.poll())
    b.discard(*f);
  while (auto f = a.poll())
    a.discard(*f);

  EXPECT_EQ(job.machine.job().task(0).published.load(), 0u);
  a.publish_statistics();
  b.publish_statistics();
  a.publish_statistics();  // idempotent

  const job_runtime::TaskSlot& sa = job.machine.job().task(0);
  EXPECT_EQ(sa.published.load(), 1u);
  EXPECT_EQ(sa.pid, ::getpid());
  EXPECT_EQ(sa.counters.packets_injected, 3u);
  EXPECT_EQ(sa.counters.bytes_injected, 3u * 64u);
  EXPECT_EQ(sa.counters.packets_received, 1u);
  EXPECT_EQ(sa.counters.payload_bytes_received, 1u);
  const job_runtime::TaskSlot& sb = job.machine.job().task(7);
  EXPECT_EQ(sb.published.load(), 1u);
  EXPECT_EQ(sb.counters.packets_received, 3u);
  EXPECT_EQ(sb.counters.payload_bytes_received, 120u);
  EXPECT_EQ(job.machine.job().task(3).published.load(), 0u);

  std::uint64_t packets = 0, bytes_total = 0;
  const auto links = job.machine.links();
  for (std::size_t i = 0; i < links.size(); ++i) {
    const torus_emu::Link link{static_cast<torus_emu::NodeId>(i / 6),
                               static_cast<Direction>(i % 6)};
    EXPECT_EQ(links[i].packets.load(),
              a.link_counters().at(link).packets + b.link_counters().at(link).packets)
        << i;
    packets += links[i].packets.load();
    bytes_total += links[i].bytes.load();
  }
  EXPECT_EQ(packets, 3u * 3u + 3u);  // (0,0,0) <-> (1,1,1) is 3 hops each way
  EXPECT_EQ(bytes_total, 3u * 3u * 64u + 3u * 32u);
  EXPECT_EQ(links[0 * 6 + torus_emu::index_of(Direction::x_plus)].packets.load(), 3u);
}

// ---------------------------------------------------------------------------------------------
// Threads: barrier and wait()

TEST(JobBarrier, SynchronisesThreadsForManyGenerations) {
  Job job(job_options(4, "2x2x1"));
  constexpr int kThreads = 4;
  constexpr int kGenerations = kUnderTsan ? 200 : 1000;
  job_runtime::JobBarrier& barrier = job.machine.job().barrier();
  std::atomic<int> counter{0};
  std::atomic<int> inconsistencies{0};
  std::vector<std::thread> threads;
  const auto start = std::chrono::steady_clock::now();
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int g = 0; g < kGenerations; ++g) {
        counter.fetch_add(1, std::memory_order_relaxed);
        barrier.arrive_and_wait(kThreads, job.policy);
        if (counter.load(std::memory_order_relaxed) != kThreads * (g + 1)) ++inconsistencies;
        barrier.arrive_and_wait(kThreads, job.policy);
      }
    });
  }
  for (auto& t : threads)
    t.join();
  EXPECT_EQ(inconsistencies.load(), 0);
  EXPECT_EQ(counter.load(), kThreads * kGenerations);
  EXPECT_EQ(barrier.arrived.load(), 0u);
  EXPECT_EQ(barrier.bell.rings.load(), 2u * kGenerations) << "one generation per barrier";
  EXPECT_LT(std::chrono::steady_clock::now() - start, 30s);
}

TEST(JobBarrier, SleepingWaitersAreWokenByTheLastArrival) {
  Job job(job_options(2, "2x1x1"));
  job_runtime::WaitPolicy sleepy;
  sleepy.spin_rounds = 0;
  sleepy.yield_rounds = 0;
  sleepy.max_sleep = 20s;  // only a wake-up can end the sleep in time
  job_runtime::JobBarrier& barrier = job.machine.job().barrier();
  const auto start = std::chrono::steady_clock::now();
  std::thread late([&] {
    std::this_thread::sleep_for(50ms);
    barrier.arrive_and_wait(2, sleepy);
  });
  barrier.arrive_and_wait(2, sleepy);
  const auto elapsed = std::chrono::steady_clock::now() - start;
  late.join();
  EXPECT_GE(elapsed, 40ms);
  EXPECT_LT(elapsed, 5s);
}

using Clock = std::chrono::steady_clock;

// Runs `wait` on the calling thread; if it has not returned after `limit`, `rescue` (run on a
// watchdog thread) must make it return. Returns when `wait` returned.
template <class Wait, class Rescue>
Clock::time_point timed_wait(Wait&& wait, Rescue&& rescue, std::chrono::seconds limit) {
  std::atomic<bool> done{false};
  std::thread watchdog([&] {
    const auto deadline = Clock::now() + limit;
    while (!done.load() && Clock::now() < deadline)
      std::this_thread::sleep_for(5ms);
    if (!done.load()) rescue();
  });
  wait();
  const auto returned = Clock::now();
  done.store(true);
  watchdog.join();
  return returned;
}

// Runs `event` on another thread after 50 ms; returns when it started.
class DelayedEvent {
 public:
  template <class F>
  explicit DelayedEvent(F event)
      : thread_([this, event] {
          std::this_thread::sleep_for(50ms);
          started_.store(Clock::now().time_since_epoch().count());
          event();
        }) {}
  DelayedEvent(const DelayedEvent&) = delete;
  DelayedEvent& operator=(const DelayedEvent&) = delete;
  ~DelayedEvent() {
    if (thread_.joinable()) thread_.join();
  }
  Clock::time_point started() {
    if (thread_.joinable()) thread_.join();
    return Clock::time_point(Clock::duration(started_.load()));
  }

 private:
  std::atomic<Clock::rep> started_{0};
  std::thread thread_;
};

TEST_F(EndpointTest, WaitReturnsWhenAPacketArrivesFromAnotherThread) {
  Job job(job_options(8, "2x2x2"));
  Endpoint& sender = job.ep(0);
  Endpoint& receiver = job.ep(1);
  Endpoint& rescuer = job.ep(2);
  DelayedEvent send([&] { sender.inject(0, to({1, 0}, 1), bytes(1, 64)); });
  // wait() may return after a sleep without news (callers loop): loop until the packet is there.
  const auto returned = timed_wait(
      [&] {
        while (!receiver.poll_ready())
          receiver.wait();
      },
      [&] {
        rescuer.inject(0, to({1, 0}, 99), kNoPayload);
      },
      5s);
  const auto sent = send.started();
  EXPECT_GE(returned, sent) << "the wait loop ended before anything was sent";
  EXPECT_LT(returned - sent, 2s);
  const auto f = receiver.poll();
  ASSERT_TRUE(f);
  EXPECT_EQ(receiver.peek(*f).word, 1u) << "woken by the sender, not the watchdog";
}

TEST_F(EndpointTest, WaitSleepingOnTheDoorbellIsWokenByInject) {
  job_runtime::WaitPolicy sleepy;
  sleepy.spin_rounds = 0;
  sleepy.yield_rounds = 0;
  sleepy.max_sleep = 20s;  // only the doorbell can end the sleep in time
  Job job(job_options(8, "2x2x2"), sleepy);
  Endpoint& sender = job.ep(0);
  Endpoint& receiver = job.ep(1);
  Endpoint& rescuer = job.ep(2);
  DelayedEvent send([&] { sender.inject(0, to({1, 0}, 1), kNoPayload); });
  const auto returned = timed_wait([&] { receiver.wait(); },
                                   [&] {
                                     rescuer.inject(0, to({1, 0}, 99), kNoPayload);
                                   },
                                   5s);
  const auto sent = send.started();
  EXPECT_GE(returned, sent);
  EXPECT_LT(returned - sent, 2s);
  EXPECT_GE(receiver.counters().sleeps, 1u);
  RecordProperty("asymmetric_fences",
                 job_runtime::asymmetric_fences_enabled() ? "membarrier" : "fences");
  const auto f = receiver.poll();
  ASSERT_TRUE(f);
  EXPECT_EQ(receiver.peek(*f).word, 1u) << "woken by the sender, not the watchdog";
}

// A wait on two events at once (the global interrupt's wire and the task's packets) must wake for
// either; the 30 s timeout means only the ring can end the sleep in time.
TEST(DoorbellTest, SleepOnEitherWakesForEachBell) {
  for (int which = 0; which < 2; ++which) {
    job_runtime::Doorbell a, b;
    std::atomic<bool> rung{false};
    std::thread ringer([&] {
      std::this_thread::sleep_for(20ms);
      rung.store(true);
      (which == 0 ? a : b).ring();
    });
    const auto start = std::chrono::steady_clock::now();
    while (!rung.load())
      job_runtime::sleep_on_either(
          a, b, [&] { return rung.load(); }, 30s);
    EXPECT_LT(std::chrono::steady_clock::now() - start, 10s) << "not woken by bell " << which;
    ringer.join();
  }
}

// A burst of packets for a task that was woken but has not run yet costs one futex wake, not one
// per packet: a ring wakes only when a sleeper armed the bell since the last wake.
TEST(DoorbellTest, RingsWakeOncePerArming) {
  job_runtime::Doorbell bell;
  bell.ring();
  EXPECT_EQ(bell.rings.load(), 0u) << "nobody armed: no wake";
  const std::uint32_t seen = bell.arm();
  for (int i = 0; i < 10; ++i)
    bell.ring();
  EXPECT_EQ(bell.rings.load(), seen + 1) << "one wake for one arming";
  bell.arm();
  bell.ring();
  EXPECT_EQ(bell.rings.load(), seen + 2);
}

// A sleeper that only waits for its last messages (a collective's receives) is woken by the
// count'th counted ring, or at once by any other ring: one wake per arming either way.
TEST(DoorbellTest, CountedRingsWakeAtTheCountAndOtherRingsAtOnce) {
  job_runtime::Doorbell bell;
  const std::uint32_t seen = bell.arm(3);
  bell.ring_counted();
  bell.ring_counted();
  EXPECT_EQ(bell.rings.load(), seen) << "two of three counted rings: still asleep";
  bell.ring_counted();
  EXPECT_EQ(bell.rings.load(), seen + 1) << "the third wakes";
  bell.ring_counted();
  EXPECT_EQ(bell.rings.load(), seen + 1) << "nobody armed: no wake";
  bell.arm(3);
  bell.ring_counted();
  bell.ring();
  EXPECT_EQ(bell.rings.load(), seen + 2) << "any other ring wakes at once";
  bell.ring_counted();
  bell.ring();
  EXPECT_EQ(bell.rings.load(), seen + 2) << "one wake per arming";
}

// Counted rings from several threads: exactly one of them wakes, the one that takes the last.
TEST(DoorbellTest, ConcurrentCountedRingsWakeOnce) {
  for (int round = 0; round < 200; ++round) {
    job_runtime::Doorbell bell;
    const std::uint32_t seen = bell.arm(4);
    std::vector<std::thread> ringers;
    for (int i = 0; i < 4; ++i)
      ringers.emplace_back([&] { bell.ring_counted(); });
    for (auto& t : ringers)
      t.join();
    ASSERT_EQ(bell.rings.load(), seen + 1) << "round " << round;
    ASSERT_EQ(bell.armed.load(), 0u) << "round " << round;
  }
}

// Two sleepers armed once between them: one wake ends both sleeps.
TEST(DoorbellTest, OneWakeEndsEveryArmedSleep) {
  job_runtime::Doorbell bell;
  std::atomic<bool> rung{false};
  std::atomic<int> awake{0};
  auto sleeper = [&] {
    while (!rung.load())
      bell.sleep_unless([&] { return rung.load(); }, 30s);
    ++awake;
  };
  std::thread a(sleeper), b(sleeper);
  std::this_thread::sleep_for(50ms);
  const auto start = std::chrono::steady_clock::now();
  rung.store(true);
  bell.ring();
  a.join();
  b.join();
  EXPECT_EQ(awake.load(), 2);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s) << "a sleeper missed the wake";
}

// Counted packets count their receiver's armed sleep down without waking it; a packet that finds
// the receiver's FIFO full wakes it whatever the count, since a count may exceed what the FIFO
// holds (the senders would wait for room that only the sleeper can make).
TEST_F(EndpointTest, CountedPacketsCountDownAndAFullFifoWakes) {
  Job job(job_options(8, "2x2x2", "heater", 2));
  Endpoint& sender = job.ep(0);
  job.ep(1);
  job_runtime::Doorbell& bell = job.machine.doorbell(1, 0);
  PacketSpec counted = to({1, 0});
  counted.ring = Ring::count;
  const std::uint32_t seen = bell.arm(100);
  for (int i = 0; i < 2; ++i)
    ASSERT_EQ(sender.inject(0, counted, kNoPayload), InjectStatus::ok);
  EXPECT_EQ(bell.armed.load(), 98u);
  EXPECT_EQ(bell.rings.load(), seen) << "counted packets do not wake";
  ASSERT_EQ(sender.inject(0, counted, kNoPayload), InjectStatus::ok);
  EXPECT_EQ(sender.pending_packets(), 1u) << "the FIFO of 2 packets is full";
  EXPECT_EQ(bell.rings.load(), seen + 1) << "a full FIFO wakes its reader";
}

TEST_F(EndpointTest, WaitReturnsWhenWaitingInjectedPacketsMoveOn) {
  Job job(job_options(8, "2x2x2", "heater", 2));
  Endpoint& sender = job.ep(0);
  Endpoint& receiver = job.ep(1);
  Endpoint& rescuer = job.ep(2);
  for (std::uint32_t i = 0; i < 3; ++i)
    ASSERT_EQ(sender.inject(0, to({1, 0}, i), kNoPayload), InjectStatus::ok);
  ASSERT_EQ(sender.pending_packets(), 1u);
  DelayedEvent make_room([&] {
    if (const auto f = receiver.poll()) receiver.discard(*f);
  });
  // wait() may return early (after one doorbell sleep: something may have happened); callers
  // loop. The loop must end once the packet moved on, without spinning meanwhile.
  int waits = 0;
  const auto returned = timed_wait(
      [&] {
        while (sender.pending_packets() != 0) {
          sender.wait();
          ++waits;
        }
      },
      [&] {
        rescuer.inject(0, to({0, 0}, 99), kNoPayload);
      },
      5s);
  const auto room = make_room.started();
  EXPECT_GE(returned, room) << "the wait loop ended before there was room";
  EXPECT_LT(returned - room, 2s);
  EXPECT_LT(waits, 2000) << "waiting spun instead of sleeping";
  EXPECT_EQ(sender.pending_packets(), 0u);
  EXPECT_FALSE(sender.poll()) << "returned because the packet moved on, not by rescue";
}

TEST_F(EndpointTest, ThreadsExchangingPacketsUnderBackpressureLoseNothing) {
  Job job(job_options(8, "2x2x2", "heater", 4));
  constexpr std::uint32_t kPackets = kUnderTsan ? 1'000 : kUnderAsan ? 5'000 : 20'000;
  Endpoint& sender = job.ep(0);
  Endpoint& receiver = job.ep(7);
  std::thread producer([&] {
    for (std::uint32_t i = 0; i < kPackets;) {
      const auto size = static_cast<std::size_t>(i % 241);
      if (sender.inject(0, to({7, 0}, i), bytes(i, size)) == InjectStatus::ok) {
        ++i;
      } else {
        sender.wait();
      }
    }
    while (!sender.advance())
      sender.wait();
  });
  std::uint32_t next = 0, errors = 0;
  while (next < kPackets) {
    const auto f = receiver.poll();
    if (!f) {
      receiver.wait();
      continue;
    }
    const auto got = receiver.payload(*f);
    const auto expected = bytes(next, next % 241);
    if (receiver.peek(*f).word != next || got.size() != expected.size() ||
        !std::equal(got.begin(), got.end(), expected.begin())) {
      if (++errors <= 5) ADD_FAILURE() << "packet " << next << ": " << receiver.peek(*f).describe();
    }
    receiver.discard(*f);
    ++next;
  }
  producer.join();
  EXPECT_EQ(errors, 0u);
  EXPECT_FALSE(receiver.poll());
  EXPECT_EQ(receiver.counters().packets_received, kPackets);
  EXPECT_EQ(sender.counters().packets_injected, kPackets);
  RecordProperty("receiver_sleeps", static_cast<int>(receiver.counters().sleeps));
  RecordProperty("sender_sleeps", static_cast<int>(sender.counters().sleeps));
  RecordProperty("injection_full", static_cast<int>(sender.counters().injection_full));
}

// ---------------------------------------------------------------------------------------------
// Which side of the doorbell handshake fences

TEST(FenceMode, ChosenByTasksPerCoreUnlessBglFencesSaysOtherwise) {
  ScopedEnv env;
  env.unset("BGL_FENCES");
  const int cores = static_cast<int>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
  EXPECT_EQ(job_runtime::fence_mode_for_host(cores), job_runtime::FenceMode::asymmetric);
  EXPECT_EQ(job_runtime::fence_mode_for_host(cores + 1), job_runtime::FenceMode::symmetric);
  env.set("BGL_FENCES", "auto");
  EXPECT_EQ(job_runtime::fence_mode_for_host(cores + 1), job_runtime::FenceMode::symmetric);
  env.set("BGL_FENCES", "asymmetric");
  EXPECT_EQ(job_runtime::fence_mode_for_host(cores + 1), job_runtime::FenceMode::asymmetric);
  env.set("BGL_FENCES", "symmetric");
  EXPECT_EQ(job_runtime::fence_mode_for_host(1), job_runtime::FenceMode::symmetric);
  env.set("BGL_FENCES", "sometimes");
  EXPECT_THAT(config_error([] { job_runtime::fence_mode_for_host(1); }),
              ::testing::AllOf(HasSubstr("BGL_FENCES=sometimes"),
                               HasSubstr("auto, asymmetric or symmetric")));
}

// The launcher decides once; every process that attaches reads the segment, whatever its own
// environment says, so that producers and sleepers of one job always agree.
TEST(FenceMode, RecordedInTheSegmentAndReadByEveryProcess) {
  for (const job_runtime::FenceMode mode :
       {job_runtime::FenceMode::asymmetric, job_runtime::FenceMode::symmetric}) {
    ScopedEnv env;
    env.set("BGL_FENCES", std::string(to_string(mode)).c_str());
    Job job(job_options(8, "2x2x2"));
    EXPECT_EQ(job.machine.job().fences(), mode);
    env.set("BGL_FENCES", mode == job_runtime::FenceMode::symmetric ? "asymmetric" : "symmetric");
    EXPECT_EQ(Machine::attach(job.memory.span()).job().fences(), mode);
  }
}

// Two tasks hand a packet back and forth, each sleeping at once on its doorbell with only a 20 s
// safety net: one lost wake-up would cost 20 s, so the whole exchange finishing in seconds shows
// that neither fence mode loses a ring.
TEST(FenceMode, NoWakeUpIsLostInEitherMode) {
  constexpr int kRounds = 500;
  job_runtime::WaitPolicy sleepy;
  sleepy.spin_rounds = 0;
  sleepy.yield_rounds = 0;
  sleepy.max_sleep = 20s;
  for (const job_runtime::FenceMode mode :
       {job_runtime::FenceMode::asymmetric, job_runtime::FenceMode::symmetric}) {
    ScopedEnv env;
    env.set("BGL_FENCES", std::string(to_string(mode)).c_str());
    Job job(job_options(2, "2x1x1"), sleepy);
    ASSERT_EQ(job.machine.job().fences(), mode);
    Endpoint& zero = job.ep(0);
    Endpoint& one = job.ep(1);
    const auto start = std::chrono::steady_clock::now();
    const auto receive = [](Endpoint& ep) {
      std::optional<FifoRef> f;
      while (!(f = ep.poll()))
        ep.wait();
      ep.discard(*f);
    };
    const auto send = [](Endpoint& ep, Destination peer) {
      while (ep.inject(0, to(peer), kNoPayload) != InjectStatus::ok)
        ep.advance();
    };
    std::thread other([&] {
      for (int i = 0; i < kRounds; ++i) {
        receive(one);
        send(one, {0, 0});
      }
    });
    for (int i = 0; i < kRounds; ++i) {
      send(zero, {1, 0});
      receive(zero);
    }
    other.join();
    EXPECT_LT(std::chrono::steady_clock::now() - start, 10s) << to_string(mode);
  }
}

}  // namespace
}  // namespace bgl::packet_layer
