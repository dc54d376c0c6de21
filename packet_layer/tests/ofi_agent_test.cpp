// The libfabric agent's inbound validation: a raw libfabric endpoint in this test plays host 1 of
// a two-host job and sends the agent (host 0) malformed messages and records next to valid ones.
// Valid packets must land in the right reception FIFO; every malformed one must be rejected and
// counted without touching the segment; a message out of sequence is a fault.
#include <gtest/gtest.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <thread>
#include <vector>

#include "../src/ofi/wire.hpp"
#include "bgl/job_runtime/agent_wake.hpp"
#include "bgl/job_runtime/job_config.hpp"
#include "bgl/packet_layer/machine.hpp"
#include "bgl/packet_layer/ofi_agent.hpp"

namespace bgl::packet_layer {
namespace {

// A bare RDM endpoint on 127.0.0.1 that sends byte strings to one peer.
class RawEndpoint {
 public:
  RawEndpoint() {
    fi_info* hints = fi_allocinfo();
    hints->ep_attr->type = FI_EP_RDM;
    hints->caps = FI_MSG;
    hints->mode = FI_CONTEXT | FI_CONTEXT2;
    hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_VIRT_ADDR;
    hints->tx_attr->msg_order = FI_ORDER_SAS;
    hints->fabric_attr->prov_name = strdup("tcp;ofi_rxm");
    EXPECT_EQ(fi_getinfo(FI_VERSION(1, 9), "127.0.0.1", nullptr, FI_SOURCE, hints, &info_), 0);
    fi_freeinfo(hints);
    EXPECT_EQ(fi_fabric(info_->fabric_attr, &fabric_, nullptr), 0);
    EXPECT_EQ(fi_domain(fabric_, info_, &domain_, nullptr), 0);
    fi_cq_attr cq_attr{};
    cq_attr.format = FI_CQ_FORMAT_MSG;
    EXPECT_EQ(fi_cq_open(domain_, &cq_attr, &cq_, nullptr), 0);
    fi_av_attr av_attr{};
    av_attr.type = FI_AV_TABLE;
    EXPECT_EQ(fi_av_open(domain_, &av_attr, &av_, nullptr), 0);
    EXPECT_EQ(fi_endpoint(domain_, info_, &ep_, nullptr), 0);
    EXPECT_EQ(fi_ep_bind(ep_, &av_->fid, 0), 0);
    EXPECT_EQ(fi_ep_bind(ep_, &cq_->fid, FI_TRANSMIT | FI_RECV), 0);
    EXPECT_EQ(fi_enable(ep_), 0);
    if (info_->domain_attr->mr_mode & FI_MR_LOCAL) {
      EXPECT_EQ(fi_mr_reg(domain_, buffer_.data(), buffer_.size(), FI_SEND | FI_RECV, 0, 0, 0, &mr_,
                          nullptr),
                0);
      desc_ = fi_mr_desc(mr_);
    }
    // Receives for the agent's heartbeats and credits (contents ignored).
    for (auto& r : receives_)
      fi_recv(ep_, r.data.data(), r.data.size(), desc_, FI_ADDR_UNSPEC, &r.ctx);
  }
  ~RawEndpoint() {
    fi_close(&ep_->fid);
    if (mr_) fi_close(&mr_->fid);
    fi_close(&av_->fid);
    fi_close(&cq_->fid);
    fi_close(&domain_->fid);
    fi_close(&fabric_->fid);
    fi_freeinfo(info_);
  }
  std::vector<std::byte> name() {
    std::vector<std::byte> out(256);
    std::size_t len = out.size();
    EXPECT_EQ(fi_getname(&ep_->fid, out.data(), &len), 0);
    out.resize(len);
    return out;
  }
  void connect(const std::vector<std::byte>& peer) {
    ASSERT_EQ(fi_av_insert(av_, peer.data(), 1, &peer_, 0, nullptr), 1);
  }
  void send(std::span<const std::byte> bytes) {
    std::memcpy(buffer_.data(), bytes.data(), bytes.size());
    fi_context2 ctx{};
    for (;;) {
      const auto r = fi_send(ep_, buffer_.data(), bytes.size(), desc_, peer_, &ctx);
      if (r == 0) break;
      ASSERT_EQ(r, -FI_EAGAIN);
      progress();
    }
    // Wait for the send completion (the buffer is reused).
    for (;;) {
      fi_cq_msg_entry e[8];
      const auto n = fi_cq_read(cq_, e, 8);
      bool mine = false;
      for (long i = 0; i < n; ++i) {
        if (e[i].op_context == &ctx) mine = true;
        for (auto& r : receives_)
          if (e[i].op_context == &r.ctx)
            fi_recv(ep_, r.data.data(), r.data.size(), desc_, FI_ADDR_UNSPEC, &r.ctx);
      }
      if (mine) break;
      ASSERT_TRUE(n > 0 || n == -FI_EAGAIN) << fi_strerror(static_cast<int>(-n));
    }
  }
  void progress() {
    fi_cq_msg_entry e[8];
    const auto n = fi_cq_read(cq_, e, 8);
    for (long i = 0; i < n; ++i)
      for (auto& r : receives_)
        if (e[i].op_context == &r.ctx)
          fi_recv(ep_, r.data.data(), r.data.size(), desc_, FI_ADDR_UNSPEC, &r.ctx);
  }

 private:
  struct Receive {
    fi_context2 ctx{};
    std::array<std::byte, wire::kBufferBytes> data{};
  };
  fi_info* info_ = nullptr;
  fid_fabric* fabric_ = nullptr;
  fid_domain* domain_ = nullptr;
  fid_cq* cq_ = nullptr;
  fid_av* av_ = nullptr;
  fid_ep* ep_ = nullptr;
  fid_mr* mr_ = nullptr;
  void* desc_ = nullptr;
  fi_addr_t peer_ = FI_ADDR_UNSPEC;
  std::array<std::byte, wire::kBufferBytes> buffer_{};
  std::array<Receive, 16> receives_;
};

// Builds one message as host 1 would.
class Message {
 public:
  Message(wire::Kind kind, std::uint32_t seq) {
    const wire::Header h{
        wire::kMagic, static_cast<std::uint8_t>(kind), wire::kVersion, 1, seq, 0, 0, 0};
    append(&h, sizeof h);
  }
  void record(std::uint32_t node, std::uint8_t group, std::uint8_t fifo, PacketHeader h,
              std::size_t payload, std::optional<std::uint16_t> bytes = std::nullopt) {
    const wire::Record r{node, group, fifo,
                         bytes.value_or(static_cast<std::uint16_t>(kHeaderBytes + payload))};
    const std::size_t start = data_.size();
    append(&r, sizeof r);
    append(&h, sizeof h);
    for (std::size_t i = 0; i < payload; ++i)
      data_.push_back(static_cast<std::byte>(i * 7 + 1));
    data_.resize(start + wire::record_bytes(payload));
    ++header().count;
  }
  void store(std::uint8_t region, std::uint64_t offset, std::size_t bytes, std::uint64_t word,
             std::uint64_t value, std::uint64_t bell = job_runtime::kNoOffset,
             std::optional<std::uint16_t> claimed = std::nullopt) {
    const wire::StoreRecord r{region, 0,      claimed.value_or(static_cast<std::uint16_t>(bytes)),
                              0,      offset, word,
                              value,  bell};
    const std::size_t start = data_.size();
    append(&r, sizeof r);
    for (std::size_t i = 0; i < bytes; ++i)
      data_.push_back(static_cast<std::byte>(i + 1));
    data_.resize(start + wire::store_record_bytes(bytes));
    ++header().count;
  }
  wire::Header& header() { return *reinterpret_cast<wire::Header*>(data_.data()); }
  std::span<const std::byte> bytes() const { return data_; }
  void truncate(std::size_t n) { data_.resize(n); }

 private:
  void append(const void* p, std::size_t n) {
    const auto* b = static_cast<const std::byte*>(p);
    data_.insert(data_.end(), b, b + n);
  }
  std::vector<std::byte> data_;
};

PacketHeader header_to(const torus_emu::Shape& shape, torus_emu::NodeId node, std::uint32_t source,
                       std::size_t payload) {
  PacketHeader h;
  const auto c = shape.coord(node);
  h.dest = {static_cast<std::uint8_t>(c.x), static_cast<std::uint8_t>(c.y),
            static_cast<std::uint8_t>(c.z)};
  h.chunks = chunks_for(payload);
  h.payload_bytes = static_cast<std::uint8_t>(payload);
  h.source = {static_cast<std::uint8_t>(source), 0, 0};
  h.word = 42;
  h.seal();
  return h;
}

// A job segment in aligned heap memory.
struct TestSegment {
  explicit TestSegment(const job_runtime::JobConfig& config)
      : bytes(Machine::segment_bytes(config)), storage(bytes + 4096) {
    auto* base = reinterpret_cast<std::byte*>(
        (reinterpret_cast<std::uintptr_t>(storage.data()) + 4095) / 4096 * 4096);
    span = {base, bytes};
  }
  std::size_t bytes;
  std::vector<std::byte> storage;
  std::span<std::byte> span;
};

// Host 0's agent, started, with the test playing host 1 through a raw endpoint.
struct AgentAndRawHost1 {
  AgentAndRawHost1(const Machine& machine, const job_runtime::Placement& placement)
      : agent(machine, placement, options()) {
    host1.connect(agent.address());
    agent.start({agent.address(), host1.name()});
  }
  static OfiOptions options() {
    OfiOptions o;
    o.timeout = std::chrono::milliseconds(60'000);
    return o;
  }
  OfiAgent agent;
  RawEndpoint host1;
};

TEST(OfiAgent, ValidatesEveryInboundRecordAndDeliversOnlyValidOnes) {
  job_runtime::JobOptions o;
  o.ntasks = 8;
  o.shape = "2x2x2";
  o.hosts = 2;
  o.host_index = 0;
  auto config = job_runtime::JobConfig::resolve(o);
  ASSERT_EQ(config.placement.transport, job_runtime::Transport::ofi);
  TestSegment seg(config);
  const auto machine = Machine::format(seg.span, config);
  const auto& shape = machine.shape();
  AgentAndRawHost1 job(machine, config.placement);
  OfiAgent& agent = job.agent;
  RawEndpoint& host1 = job.host1;

  // Node 1 = (1,0,0) is on host 0; rank 5 on node 5 = (1,0,1) on host 1; its last hop is +z.
  constexpr torus_emu::NodeId kNode = 1;
  constexpr std::uint8_t kFifo = 4;
  std::uint32_t seq = 0;

  // Garbage that is not a message of this job: discarded, no sequence number consumed.
  const std::array<std::byte, 10> shorty{};
  host1.send(shorty);
  Message alien(wire::Kind::data, 0);
  alien.header().magic = 0xdeadbeef;
  host1.send(alien.bytes());

  Message m(wire::Kind::data, seq++);
  m.record(kNode, 0, kFifo, header_to(shape, kNode, 5, 100), 100);  // valid
  m.record(99, 0, kFifo, header_to(shape, kNode, 5, 10), 10);       // node outside the partition
  m.record(5, 0, kFifo, header_to(shape, 5, 5, 10), 10);            // node on host 1, not here
  m.record(kNode, 3, kFifo, header_to(shape, kNode, 5, 10), 10);    // no FIFO group 3
  m.record(kNode, 0, 9, header_to(shape, kNode, 5, 10), 10);        // no reception FIFO 9
  auto bad_check = header_to(shape, kNode, 5, 10);
  bad_check.check ^= 0xff;
  m.record(kNode, 0, kFifo, bad_check, 10);                                   // check byte
  m.record(kNode, 0, kFifo, header_to(shape, 2, 5, 10), 10);                  // header for node 2
  m.record(kNode, 0, kFifo, header_to(shape, kNode, 1, 10), 10);              // source on host 0
  m.record(kNode, 0, kHighPriorityFifo, header_to(shape, kNode, 5, 10), 10);  // class mismatch
  m.record(kNode, 0, kLocalFifo, header_to(shape, kNode, 5, 10), 10);  // local FIFO, remote source
  // Last: a record whose length disagrees with its header (parsing cannot go on after it).
  m.record(kNode, 0, kFifo, header_to(shape, kNode, 5, 10), 10, 200);
  host1.send(m.bytes());

  // A message cut inside its second record: the first is delivered, the rest rejected.
  Message cut(wire::Kind::data, seq++);
  cut.record(kNode, 0, kFifo, header_to(shape, kNode, 5, 240), 240);
  cut.record(kNode, 0, kFifo, header_to(shape, kNode, 5, 240), 240);
  cut.record(kNode, 0, kFifo, header_to(shape, kNode, 5, 240), 240);
  cut.truncate(cut.bytes().size() - 300);
  host1.send(cut.bytes());

  // Both valid packets arrive, in order, in the one FIFO they were meant for; nothing else does.
  auto fifo = machine.fifo(kNode, 0, kFifo);
  fifo.attach_consumer();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  std::vector<std::size_t> sizes;
  while (sizes.size() < 2 && std::chrono::steady_clock::now() < deadline) {
    host1.progress();
    if (const Packet* p = fifo.front()) {
      EXPECT_EQ(p->header.source_rank(), 5u);
      EXPECT_EQ(p->payload[3], static_cast<std::byte>(22));
      sizes.push_back(p->header.payload_bytes);
      fifo.pop();
    }
  }
  ASSERT_EQ(sizes, (std::vector<std::size_t>{100, 240}));
  for (torus_emu::NodeId n = 0; n < 4; ++n)
    for (int g = 0; g < kFifoGroups; ++g)
      for (int i = 0; i < kReceptionFifos; ++i) {
        auto f = machine.fifo(n, g, i);
        f.attach_consumer();
        EXPECT_EQ(f.front(), nullptr) << "node " << n << " group " << g << " FIFO " << i;
      }
  EXPECT_FALSE(agent.fault().has_value());

  // A message out of sequence means the transport lost or reordered something: a fault.
  Message skipped(wire::Kind::heartbeat, seq + 5);
  host1.send(skipped.bytes());
  const auto fault_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!agent.fault() && std::chrono::steady_clock::now() < fault_deadline) {
    host1.progress();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_TRUE(agent.fault().has_value());
  EXPECT_NE(agent.fault()->find("arrived when 2 was expected"), std::string::npos)
      << *agent.fault();
  agent.finish(1);
  const auto stats = agent.stats();
  EXPECT_EQ(stats.rejected, 11u);  // ten bad records in the first message, one cut message
  EXPECT_EQ(stats.packets_received, 2u);
}

job_runtime::JobConfig two_host_config(int host) {
  job_runtime::JobOptions o;
  o.ntasks = 8;
  o.shape = "2x2x2";
  o.hosts = 2;
  o.host_index = host;
  auto config = job_runtime::JobConfig::resolve(o);
  config.regions.push_back({"other", 128});
  config.regions.push_back({"replica", 8192});
  return config;
}

std::uint64_t word_at(std::span<std::byte> region, std::size_t offset) {
  return reinterpret_cast<std::atomic<std::uint64_t>*>(region.data() + offset)
      ->load(std::memory_order_acquire);
}

TEST(OfiAgent, ValidatesInboundRemoteStoresAndAppliesOnlyValidOnes) {
  const auto config = two_host_config(0);
  TestSegment seg(config);
  const auto machine = Machine::format(seg.span, config);
  const int replica = machine.job().region_index("replica");
  ASSERT_EQ(replica, 1);
  const auto region = machine.job().region(replica);
  ASSERT_EQ(region.size(), 8192u);

  AgentAndRawHost1 job(machine, config.placement);
  OfiAgent& agent = job.agent;
  RawEndpoint& host1 = job.host1;

  Message m(wire::Kind::store, 0);
  m.store(1, 256, 100, 64, 7, 1024);                 // valid: bytes, word raised to 7, doorbell
  m.store(1, 512, 0, 72, 3);                         // valid: word only
  m.store(1, 8190, 16, job_runtime::kNoOffset, 0);   // bytes beyond the region
  m.store(5, 0, 16, job_runtime::kNoOffset, 0);      // no region 5
  m.store(1, 0, 16, 4, 9);                           // word not aligned
  m.store(1, 0, 16, 8, 9);                           // word inside the stored bytes
  m.store(1, 0, 0, 8192, 9);                         // word beyond the region
  m.store(1, 0, 8, job_runtime::kNoOffset, 0, 100);  // doorbell not aligned
  m.store(1, 0, 0, job_runtime::kNoOffset, 0);       // a store of nothing
  m.store(0, 64, 100, job_runtime::kNoOffset, 0);    // beyond the small region
  m.store(1, 0, 4, job_runtime::kNoOffset, 0, job_runtime::kNoOffset,
          4000);  // claims more bytes than the message has
  host1.send(m.bytes());
  Message lower(wire::Kind::store, 1);
  lower.store(1, 0, 0, 64, 5);  // lower than 7: the word keeps 7
  lower.store(1, 0, 0, 72, 2);
  lower.store(1, 0, 0, 80, 1);  // shows that this message was applied
  host1.send(lower.bytes());

  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  // (The agent's statistics may only be read once it has finished.)
  while (word_at(region, 80) != 1 && std::chrono::steady_clock::now() < deadline) {
    host1.progress();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(word_at(region, 64), 7u);
  EXPECT_EQ(word_at(region, 72), 3u);
  EXPECT_EQ(word_at(region, 80), 1u);
  for (std::size_t i = 0; i < 100; ++i)
    ASSERT_EQ(region[256 + i], static_cast<std::byte>(i + 1)) << i;
  for (std::size_t i = 0; i < region.size(); ++i) {
    if ((i < 256 || i >= 356) && (i < 64 || i >= 88)) {
      ASSERT_EQ(region[i], std::byte{0}) << "byte " << i << " written";
    }
  }
  for (auto b : machine.job().region(0))
    ASSERT_EQ(b, std::byte{0});
  EXPECT_FALSE(agent.fault().has_value());
  Message bye(wire::Kind::bye, 2);
  host1.send(bye.bytes());
  agent.finish(0);
  const auto stats = agent.stats();
  EXPECT_EQ(stats.stores_applied, 5u);
  EXPECT_EQ(stats.rejected, 9u);
}

// Two hosts in one process: each with its segment, its machine and its agent, started and
// connected to each other.
struct TwoHosts {
  explicit TwoHosts(const OfiOptions& options)
      : a0(m0, c0.placement, options), a1(m1, c1.placement, options) {
    const std::vector<std::vector<std::byte>> addresses{a0.address(), a1.address()};
    a0.start(addresses);
    a1.start(addresses);
  }
  const job_runtime::JobConfig c0 = two_host_config(0), c1 = two_host_config(1);
  TestSegment s0{c0}, s1{c1};
  const Machine m0 = Machine::format(s0.span, c0), m1 = Machine::format(s1.span, c1);
  OfiAgent a0, a1;
};

TEST(OfiAgent, RemoteStoresTravelBetweenTwoAgentsInOrderUnderCredits) {
  // Two hosts in one process: rank 0 (host 0) streams stores into host 1's replica through the
  // store ring, its agent and host 1's agent, with 2 credits so that the sender must wait.
  OfiOptions options;
  options.timeout = std::chrono::milliseconds(60'000);
  options.credits = 2;
  options.batch = 3;
  TwoHosts hosts(options);
  const Machine &m0 = hosts.m0, &m1 = hosts.m1;
  OfiAgent &a0 = hosts.a0, &a1 = hosts.a1;

  const int replica = m0.job().region_index("replica");
  const auto target = m1.job().region(replica);
  // Bursts of 8 stores into slots 0..7, each followed by the word at 4096 raised to its number;
  // the next burst starts when the receiver has checked this one (`checked`). Within a burst the
  // 2 credits run out, so the sender's agent must wait for credits coming back.
  constexpr int kBursts = 150;
  std::atomic<int> checked{0};
  const auto policy = job_runtime::WaitPolicy::for_job(2);
  std::thread sender([&] {
    std::array<std::byte, job_runtime::kMaxStoreBytes> bytes{};
    for (int burst = 0; burst < kBursts; ++burst) {
      while (checked.load(std::memory_order_acquire) < burst)
        std::this_thread::yield();
      for (int k = 0; k < 8; ++k) {
        const int i = burst * 8 + k + 1;
        bytes.fill(static_cast<std::byte>(i));
        const job_runtime::StoreRequest r{
            1,
            static_cast<std::uint8_t>(replica),
            static_cast<std::uint64_t>(k) * job_runtime::kMaxStoreBytes,
            4096,
            static_cast<std::uint64_t>(i),
            4160};
        m0.job().remote_store(0, r, bytes, policy);
      }
    }
  });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (int burst = 0; burst < kBursts && std::chrono::steady_clock::now() < deadline;) {
    const auto last = static_cast<std::uint64_t>(burst * 8 + 8);
    const std::uint64_t now = word_at(target, 4096);
    ASSERT_LE(now, last);
    if (now < last) continue;
    // The word shows the burst's last store: every store of the burst is in (bytes before word,
    // stores in ring order).
    for (int k = 0; k < 8; ++k)
      for (std::size_t b = 0; b < job_runtime::kMaxStoreBytes; ++b)
        ASSERT_EQ(target[static_cast<std::size_t>(k) * job_runtime::kMaxStoreBytes + b],
                  static_cast<std::byte>(burst * 8 + k + 1))
            << "burst " << burst << " slot " << k;
    checked.store(++burst, std::memory_order_release);
  }
  sender.join();
  EXPECT_EQ(word_at(target, 4096), static_cast<std::uint64_t>(kBursts * 8));
  // A store with a bad region is refused before it leaves the task.
  EXPECT_THROW(m0.job().try_remote_store(0, job_runtime::StoreRequest{1, 7, 0, 0, 1}, {}),
               std::invalid_argument);
  EXPECT_THROW(
      m0.job().try_remote_store(0, job_runtime::StoreRequest{1, 1, 8000, job_runtime::kNoOffset, 0},
                                std::span<const std::byte>(target.data(), 300)),
      std::invalid_argument);
  std::thread finish1([&] { a1.finish(0); });
  a0.finish(0);
  finish1.join();
  EXPECT_FALSE(a0.fault().has_value());
  EXPECT_FALSE(a1.fault().has_value());
  EXPECT_EQ(a0.stats().stores_sent, static_cast<std::uint64_t>(kBursts * 8));
  EXPECT_EQ(a1.stats().stores_applied, static_cast<std::uint64_t>(kBursts * 8));
  EXPECT_GT(a0.stats().credit_stalls, 0u);
}

TEST(OfiAgent, IdleAgentsWakeForEachPacketAndReturnCreditsWithoutMessagesOfTheirOwn) {
  // Two hosts in one process: rank 0 (node 0, host 0) and rank 4 (node 4, host 1) play ping-pong
  // through their outbound rings and the two agents, pausing 20 ms before each ping, so that both
  // agents fall asleep between round trips. The agents' nap is one second: a sleeping agent must
  // be woken by its task's ring and by the other agent's message, not wait for the nap to end.
  // The replies carry the credits back: no credit-only message per packet.
  OfiOptions options;
  options.timeout = std::chrono::milliseconds(60'000);
  options.sleep = std::chrono::microseconds(1'000'000);
  options.spin = std::chrono::microseconds(0);
  TwoHosts hosts(options);
  const Machine &m0 = hosts.m0, &m1 = hosts.m1;
  OfiAgent &a0 = hosts.a0, &a1 = hosts.a1;

  constexpr torus_emu::NodeId kNode0 = 0, kNode4 = 4;
  constexpr std::uint8_t kFifo = 4;
  constexpr int kRounds = 10;
  const auto& shape = m0.shape();
  const auto send = [](const Machine& m, torus_emu::Rank from, torus_emu::NodeId to,
                       const PacketHeader& h, std::byte value) {
    std::array<std::byte, 32> payload;
    payload.fill(value);
    while (!m.outbound(from).try_push(to, 0, kFifo, h, payload, {}))
      std::this_thread::yield();
    job_runtime::ring_agent(m.job().agent_bell());
  };
  // Waits (bounded) for the next packet in `fifo` and returns its first payload byte.
  const auto receive = [](ReceptionFifo& fifo) -> std::optional<std::byte> {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline) {
      if (const Packet* p = fifo.front()) {
        const std::byte b = p->payload[0];
        fifo.pop();
        return b;
      }
      std::this_thread::yield();
    }
    return std::nullopt;
  };
  ReceptionFifo at4 = m1.fifo(kNode4, 0, kFifo);
  ReceptionFifo at0 = m0.fifo(kNode0, 0, kFifo);
  at4.attach_consumer();
  at0.attach_consumer();
  std::thread pong([&] {
    for (int i = 0; i < kRounds; ++i) {
      const auto b = receive(at4);
      if (!b) return;
      send(m1, 4, kNode0, header_to(shape, kNode0, 4, 32), *b);
    }
  });
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kRounds; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    send(m0, 0, kNode4, header_to(shape, kNode4, 0, 32), static_cast<std::byte>(i + 1));
    const auto b = receive(at0);
    ASSERT_TRUE(b.has_value()) << "round " << i << ": no reply within 10 s";
    EXPECT_EQ(*b, static_cast<std::byte>(i + 1));
  }
  const auto took = std::chrono::steady_clock::now() - start;
  pong.join();
  // 10 pauses of 20 ms, plus the round trips: far below one nap per message.
  EXPECT_LT(took, std::chrono::milliseconds(2'000));
  std::thread finish1([&] { a1.finish(0); });
  a0.finish(0);
  finish1.join();
  EXPECT_FALSE(a0.fault().has_value());
  EXPECT_FALSE(a1.fault().has_value());
  EXPECT_EQ(a0.stats().packets_received, static_cast<std::uint64_t>(kRounds));
  EXPECT_EQ(a1.stats().packets_received, static_cast<std::uint64_t>(kRounds));
  // Each agent sends its 10 packets (one message each), its end and maybe a heartbeat or two;
  // returning credits on their own would add a message per packet.
  EXPECT_LT(a0.stats().messages_sent, static_cast<std::uint64_t>(kRounds + 5));
  EXPECT_LT(a1.stats().messages_sent, static_cast<std::uint64_t>(kRounds + 5));
}

TEST(OfiAgent, ACreditStarvedAgentSleepsUntilCreditsComeBack) {
  // Rank 0 streams 200 packets to node 4 on host 1 with 2 credits, and the receiver takes one
  // packet a millisecond: the sender's agent runs out of credits for nearly every packet. While it
  // waits for them it must sleep (the returning credits' message wakes it), not poll: each poll
  // that finds no credit counts a credit stall.
  OfiOptions options;
  options.timeout = std::chrono::milliseconds(60'000);
  options.credits = 2;
  options.spin = std::chrono::microseconds(0);
  TwoHosts hosts(options);
  const Machine &m0 = hosts.m0, &m1 = hosts.m1;
  OfiAgent &a0 = hosts.a0, &a1 = hosts.a1;

  constexpr torus_emu::NodeId kNode4 = 4;
  constexpr std::uint8_t kFifo = 4;
  constexpr int kPackets = 200;
  std::thread sender([&] {
    const auto h = header_to(m0.shape(), kNode4, 0, 32);
    for (int i = 0; i < kPackets; ++i) {
      std::array<std::byte, 32> payload;
      payload.fill(static_cast<std::byte>(i));
      while (!m0.outbound(0).try_push(kNode4, 0, kFifo, h, payload, {}))
        std::this_thread::sleep_for(std::chrono::microseconds(100));
      job_runtime::ring_agent(m0.job().agent_bell());
    }
  });
  ReceptionFifo at4 = m1.fifo(kNode4, 0, kFifo);
  at4.attach_consumer();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  int got = 0;
  while (got < kPackets && std::chrono::steady_clock::now() < deadline) {
    if (const Packet* p = at4.front()) {
      ASSERT_EQ(p->payload[0], static_cast<std::byte>(got)) << "packets out of order";
      at4.pop();
      ++got;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    } else {
      std::this_thread::yield();
    }
  }
  sender.join();
  EXPECT_EQ(got, kPackets);
  std::thread finish1([&] { a1.finish(0); });
  a0.finish(0);
  finish1.join();
  EXPECT_FALSE(a0.fault().has_value());
  EXPECT_GT(a0.stats().credit_stalls, 0u);
  EXPECT_LT(a0.stats().credit_stalls, static_cast<std::uint64_t>(10 * kPackets));
}

TEST(OfiAgent, HexAddressesRoundTripAndRejectGarbage) {
  const std::vector<std::byte> a{std::byte{0}, std::byte{0x7f}, std::byte{0xff}};
  EXPECT_EQ(to_hex(a), "007fff");
  EXPECT_EQ(from_hex("007fff"), a);
  EXPECT_THROW(from_hex("0g"), std::exception);
  EXPECT_THROW(from_hex("123"), std::exception);
}

}  // namespace
}  // namespace bgl::packet_layer
