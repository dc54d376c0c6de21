// Virtual time in the packet layer: packets carry their BG/L arrival time, the receiver's clock
// waits for it, links contend by their calendars, and nothing changes with virtual time off.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <map>
#include <memory>
#include <stdexcept>

#include "bgl/packet_layer/endpoint.hpp"
#include "bgl/packet_layer/machine.hpp"
#include "bgl/test_support/in_process_machine.hpp"
#include "bgl/torus_emu/error.hpp"

namespace bgl::packet_layer {
namespace {

using ::testing::HasSubstr;
using virtual_time::Params;
using virtual_time::Tick;

using TimedJob = test_support::InProcessMachine;

job_runtime::JobOptions timed_options(int ntasks, const char* shape, const char* mode = "heater") {
  job_runtime::JobOptions o = test_support::job_options(ntasks, shape, mode);
  o.virtual_time = true;
  return o;
}

PacketSpec to(Destination d, Routing routing = Routing::deterministic) {
  PacketSpec s;
  s.dest = d;
  s.dispatch = 1;
  s.routing = routing;
  return s;
}

const Params kP;
const Tick kWrite = Params::ticks(kP.packet_write_cycles);
const Tick kRead = Params::ticks(kP.packet_read_cycles);
const Tick kHop = Params::ticks(kP.hop_cycles);

// Takes one packet; returns the receiver's clock afterwards.
Tick take(Endpoint& e) {
  FifoRef f;
  const Packet* p = e.next(f);
  if (!p) throw std::runtime_error("no packet");
  e.next(f);  // shown twice: taken once
  e.discard(f, *p);
  return e.clock().now();
}

TEST(PacketVirtualTime, APacketArrivesAfterWriteHopsWireAndRead) {
  TimedJob job(timed_options(64, "8x8x1"));
  std::array<std::byte, 240> payload{};
  // Rank 0 at (0,0,0); rank 3 at (3,0,0): three hops; a full packet.
  ASSERT_EQ(job.ep(0).inject(0, to(job.ep(0).destination_of(3)), payload), InjectStatus::ok);
  EXPECT_EQ(job.ep(0).clock().now(), kWrite);
  EXPECT_EQ(take(job.ep(3)), kWrite + 3 * kHop + kP.link_cycles(256) + kRead);
  EXPECT_EQ(job.ep(3).clock().waiting(), kWrite + 3 * kHop + kP.link_cycles(256));
  EXPECT_EQ(job.ep(3).clock().software(), kRead);
}

TEST(PacketVirtualTime, PacketsOnOneLinkSerialiseAtTheLinkRate) {
  TimedJob job(timed_options(8, "8x1x1"));
  std::array<std::byte, 240> payload{};
  constexpr int kPackets = 20;
  for (int i = 0; i < kPackets; ++i)
    ASSERT_EQ(job.ep(0).inject(0, to(job.ep(0).destination_of(1)), payload), InjectStatus::ok);
  Tick last = 0;
  for (int i = 0; i < kPackets; ++i)
    last = take(job.ep(1));
  // The writes (75 cycles each) are faster than the wire (1080): the link is the bottleneck.
  EXPECT_EQ(last,
            kWrite + (kPackets - 1) * kP.link_cycles(256) + kHop + kP.link_cycles(256) + kRead);
  EXPECT_EQ(job.machine.calendars()[0 * 6 + 0].busy(), kPackets * kP.link_cycles(256));
}

TEST(PacketVirtualTime, TheReceiversClockNeverGoesBack) {
  TimedJob job(timed_options(8, "8x1x1"));
  std::array<std::byte, 16> payload{};
  job.ep(1).clock().compute(1'000'000);  // the receiver is busy long after the packet arrives
  ASSERT_EQ(job.ep(0).inject(0, to(job.ep(0).destination_of(1)), payload), InjectStatus::ok);
  EXPECT_EQ(take(job.ep(1)), 1'000'000u + kRead);
  EXPECT_EQ(job.ep(1).clock().waiting(), 0u);
}

TEST(PacketVirtualTime, DepositLineCopiesArriveHopByHop) {
  TimedJob job(timed_options(8, "8x1x1"));
  std::array<std::byte, 240> payload{};
  PacketSpec s = to(job.ep(0).destination_of(4));
  s.deposit_line = torus_emu::Direction::x_plus;
  ASSERT_EQ(job.ep(0).inject(0, s, payload), InjectStatus::ok);
  for (torus_emu::Rank r = 1; r <= 4; ++r)
    EXPECT_EQ(take(job.ep(r)), kWrite + r * kHop + kP.link_cycles(256) + kRead) << "rank " << r;
}

TEST(PacketVirtualTime, AdaptiveRoutesAreTimedOverThePathTaken) {
  TimedJob job(timed_options(64, "4x4x4"));
  std::array<std::byte, 240> payload{};
  const auto dest = job.ep(0).destination_of(63);  // (3,3,3): one hop each way round the torus
  ASSERT_EQ(job.ep(0).inject(0, to(dest, Routing::adaptive), payload), InjectStatus::ok);
  EXPECT_EQ(take(job.ep(63)), kWrite + 3 * kHop + kP.link_cycles(256) + kRead);
}

TEST(PacketVirtualTime, VirtualNodeSiblingsUseTheScratchpadNotALink) {
  TimedJob job(timed_options(2, "1x1x1", "vn"));
  std::array<std::byte, 64> payload{};
  ASSERT_EQ(job.ep(0).inject(0, to(job.ep(0).destination_of(1)), payload), InjectStatus::ok);
  EXPECT_EQ(take(job.ep(1)), kWrite + Params::ticks(kP.vn_packet_cycles) + kRead);
}

TEST(PacketVirtualTime, OffMeansNoClockAndNoBlock) {
  job_runtime::JobOptions o = timed_options(8, "8x1x1");
  o.virtual_time = false;
  TimedJob job(o);
  EXPECT_EQ(job.machine.job().vt_params(), nullptr);
  EXPECT_TRUE(job.machine.calendars().empty());
  EXPECT_FALSE(job.ep(0).timed());
  std::array<std::byte, 16> payload{};
  ASSERT_EQ(job.ep(0).inject(0, to(job.ep(0).destination_of(1)), payload), InjectStatus::ok);
  EXPECT_EQ(take(job.ep(1)), 0u);
  EXPECT_EQ(job.ep(0).clock().now(), 0u);
}

TEST(PacketVirtualTime, TheParameterSetTravelsInTheSegment) {
  TimedJob job(timed_options(8, "2x2x2"));
  const Machine attached = Machine::attach(job.memory.span());
  ASSERT_NE(attached.job().vt_params(), nullptr);
  EXPECT_EQ(attached.job().vt_params()->hop_cycles, 63);
  EXPECT_EQ(attached.config().vt_params_source, "built-in defaults");
  EXPECT_EQ(attached.calendars().size(), 8u * 6u);
}

TEST(PacketVirtualTime, OptionsNeedVirtualTimeAndWorkOnSeveralHosts) {
  job_runtime::JobOptions o = timed_options(8, "2x2x2");
  o.virtual_time = false;
  o.vt_cpu_factor = 2;
  try {
    job_runtime::JobConfig::resolve(o);
    FAIL() << "accepted --vt-cpu-factor without virtual time";
  } catch (const ConfigError& e) {
    EXPECT_THAT(e.what(), HasSubstr("need virtual time"));
  }
  // Several hosts carry the clocks (docs/VIRTUAL_TIME.md, "Several hosts").
  o = timed_options(8, "2x2x2");
  o.hosts = 2;
  const auto config = job_runtime::JobConfig::resolve(o);
  EXPECT_TRUE(config.virtual_time.has_value());
  EXPECT_EQ(config.placement.host_count(), 2);
  EXPECT_THROW(job_runtime::parse_cpu_factor("-1", "--vt-cpu-factor"), ConfigError);
  EXPECT_THROW(job_runtime::parse_cpu_factor("x", "--vt-cpu-factor"), ConfigError);
  EXPECT_EQ(job_runtime::parse_cpu_factor("2.5", "--vt-cpu-factor"), 2.5);
}

}  // namespace
}  // namespace bgl::packet_layer
