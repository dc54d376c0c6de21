// Stray writes into a live job's segment: bglrun watches the control structures (the job
// description, the collective network's tree, the barrier, every reception FIFO's indices and
// sequence numbers) and stops the job naming what is corrupt, instead of leaving it hanging. The
// test maps the segment of a running job (tasks waiting for packets that never come) and
// overwrites one part.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <thread>

#include "bgl/collective_net_emu/region.hpp"
#include "bgl/packet_layer/machine.hpp"
#include "bgl/torus_emu/error.hpp"
#include "process_runner.hpp"

namespace bgl::test {
namespace {

using ::testing::HasSubstr;

const std::string kBglrun = BGLRUN_PATH;
const std::string kScenarios = SCENARIOS_PATH;

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "/" + name + "." + std::to_string(getpid());
}

// The segment of a running job, mapped read-write.
class MappedSegment {
 public:
  explicit MappedSegment(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDWR);
    if (fd < 0) throw std::runtime_error("cannot open " + path);
    struct stat st {};
    ::fstat(fd, &st);
    bytes_ = static_cast<std::size_t>(st.st_size);
    void* p = ::mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ::close(fd);
    if (p == MAP_FAILED) throw std::runtime_error("cannot map " + path);
    base_ = static_cast<std::byte*>(p);
  }
  MappedSegment(const MappedSegment&) = delete;
  MappedSegment& operator=(const MappedSegment&) = delete;
  ~MappedSegment() { ::munmap(base_, bytes_); }
  std::span<std::byte> bytes() const { return {base_, bytes_}; }

 private:
  std::byte* base_ = nullptr;
  std::size_t bytes_ = 0;
};

std::span<std::byte> writable(std::span<const std::byte> s) {
  return {const_cast<std::byte*>(s.data()), s.size()};
}

void scribble(std::span<std::byte> where, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  for (auto& b : where)
    b = static_cast<std::byte>(rng());
}

std::span<std::byte> part(const std::vector<job_runtime::ControlPart>& parts,
                          const std::string& name) {
  for (const auto& p : parts)
    if (p.name == name) return writable(p.bytes);
  ADD_FAILURE() << "no part named " << name;
  return {};
}

// Starts an 8-task job whose tasks wait for packets, corrupts its segment with `corrupt`, and
// expects bglrun to stop the job within 10 s naming `expected`.
void expect_named(const std::function<void(const packet_layer::Machine&)>& corrupt,
                  const std::string& expected) {
  static int job = 0;
  const std::string log = temp_path("integrity." + std::to_string(job++) + ".log");
  std::remove(log.c_str());
  const int launcher = spawn_process(
      {kBglrun, "--timeout", "120", "-np", "8", "--shape", "2x2x2", kScenarios, "hang"}, log);
  ASSERT_EQ(wait_for_pids(log, 8, 30).size(), 8u) << read_file(log);
  std::string path;
  for (const auto& s : bglemu_segments())
    if (s.find("bglemu." + std::to_string(launcher) + ".") != std::string::npos) path = s;
  ASSERT_FALSE(path.empty()) << "the job's segment";
  {
    MappedSegment segment(path);
    const auto machine = packet_layer::Machine::attach(segment.bytes());
    std::this_thread::sleep_for(std::chrono::milliseconds(500));  // a few clean checks first
    ASSERT_TRUE(process_alive(launcher)) << "the untouched job was stopped:\n" << read_file(log);
    const auto start = std::chrono::steady_clock::now();
    corrupt(machine);
    const int status = wait_process(launcher, 10);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const std::string output = read_file(log);
    EXPECT_EQ(status, 1) << output;
    EXPECT_LT(seconds, 10.0);
    EXPECT_THAT(output, HasSubstr("the job's shared-memory segment is corrupt: " + expected));
  }
  EXPECT_TRUE(path.empty() || ::access(path.c_str(), F_OK) != 0) << "segment left behind";
}

TEST(SegmentIntegrity, MappingTableOverwritten) {
  expect_named(
      [](const packet_layer::Machine& m) {
        scribble(part(m.job().description(), "mapping table"), 1);
      },
      "mapping table");
}

TEST(SegmentIntegrity, SegmentHeaderOverwritten) {
  expect_named(
      [](const packet_layer::Machine& m) {
        scribble(part(m.job().description(), "segment header").subspan(40, 16), 2);
      },
      "segment header");
}

TEST(SegmentIntegrity, CollectiveNetworkRegionHeaderOverwritten) {
  expect_named(
      [](const packet_layer::Machine& m) {
        scribble(
            part(collective_net_emu::constant_parts(m.job()), "collective network region header")
                .subspan(8, 8),
            3);
      },
      "collective network region header");
}

TEST(SegmentIntegrity, ReceptionFifoIndexOverwritten) {
  expect_named(
      [](const packet_layer::Machine& m) {
        auto& control = const_cast<packet_layer::FifoControl&>(m.fifo(3, 0, 2).control());
        control.tail.store(0x123456789abcull);
      },
      "reception FIFO +y of node (1,1,0) group 0");
}

TEST(SegmentIntegrity, ReceptionFifoSlotSequenceNumbersOverwritten) {
  expect_named(
      [](const packet_layer::Machine& m) {
        // The slots follow the FIFO's control block (a cache line's multiple): overwrite one
        // slot's sequence number through the FIFO's memory, 64-byte line by line.
        auto& control = const_cast<packet_layer::FifoControl&>(m.fifo(5, 1, 6).control());
        auto* bytes = reinterpret_cast<std::byte*>(&control);
        auto* slot = reinterpret_cast<std::atomic<std::uint64_t>*>(
            bytes + ((sizeof(packet_layer::FifoControl) + 63) / 64 * 64) +
            3 * sizeof(packet_layer::FifoSlot));
        slot->store(0xdeadbeefdeadbeefull);
      },
      "reception FIFO local of node (1,0,1) group 1");
}

TEST(SegmentIntegrity, BarrierCountOverwritten) {
  expect_named([](const packet_layer::Machine& m) { m.job().barrier().arrived.store(1000); },
               "job barrier");
}

// At attach, a task refuses a segment whose job description does not match its checksum.
TEST(SegmentIntegrity, AttachRefusesACorruptJobDescription) {
  job_runtime::JobOptions o;
  o.ntasks = 8;
  o.shape = "2x2x2";
  const auto config = job_runtime::JobConfig::resolve(o);
  std::vector<std::byte> memory(packet_layer::Machine::segment_bytes(config) + 4096);
  auto aligned = std::span(memory).subspan(
      (4096 - reinterpret_cast<std::uintptr_t>(memory.data()) % 4096) % 4096,
      packet_layer::Machine::segment_bytes(config));
  const auto machine = packet_layer::Machine::format(aligned, config);
  EXPECT_NO_THROW(packet_layer::Machine::attach(aligned));
  EXPECT_EQ(machine.job().check_description(), std::nullopt);
  // Ranks 3 and 4 swapped: still a valid mapping, only the checksum tells.
  auto table = part(machine.job().description(), "mapping table");
  std::byte entry[8];
  std::memcpy(entry, table.data() + 3 * 8, 8);
  std::memcpy(table.data() + 3 * 8, table.data() + 4 * 8, 8);
  std::memcpy(table.data() + 4 * 8, entry, 8);
  try {
    packet_layer::Machine::attach(aligned);
    ADD_FAILURE() << "attached a segment with a corrupt mapping";
  } catch (const std::exception& e) {
    EXPECT_THAT(std::string(e.what()), HasSubstr("checksum"));
  }
  EXPECT_NE(machine.job().check_description(), std::nullopt);
}

}  // namespace
}  // namespace bgl::test
