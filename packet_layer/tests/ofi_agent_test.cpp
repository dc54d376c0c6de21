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
#include <thread>
#include <vector>

#include "../src/ofi/wire.hpp"
#include "bgl/pkt/job_config.hpp"
#include "bgl/pkt/machine.hpp"
#include "bgl/pkt/ofi_agent.hpp"

namespace bgl::pkt {
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

PacketHeader header_to(const torus::Shape& shape, torus::NodeId node, std::uint32_t source,
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

TEST(OfiAgent, ValidatesEveryInboundRecordAndDeliversOnlyValidOnes) {
  JobOptions o;
  o.ntasks = 8;
  o.shape = "2x2x2";
  o.hosts = 2;
  o.host_index = 0;
  auto config = JobConfig::resolve(o);
  ASSERT_EQ(config.placement.transport, Transport::ofi);
  const std::size_t bytes = Machine::segment_bytes(config);
  std::vector<std::byte> storage(bytes + 4096);
  auto* base = reinterpret_cast<std::byte*>(
      (reinterpret_cast<std::uintptr_t>(storage.data()) + 4095) / 4096 * 4096);
  const auto machine = Machine::format({base, bytes}, config);
  const auto& shape = machine.shape();

  OfiOptions options;
  options.timeout = std::chrono::milliseconds(60'000);
  OfiAgent agent(machine, config.placement, options);
  RawEndpoint host1;
  host1.connect(agent.address());
  agent.start({agent.address(), host1.name()});

  // Node 1 = (1,0,0) is on host 0; rank 5 on node 5 = (1,0,1) on host 1; its last hop is +z.
  constexpr torus::NodeId kNode = 1;
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
  for (torus::NodeId n = 0; n < 4; ++n)
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

TEST(OfiAgent, HexAddressesRoundTripAndRejectGarbage) {
  const std::vector<std::byte> a{std::byte{0}, std::byte{0x7f}, std::byte{0xff}};
  EXPECT_EQ(to_hex(a), "007fff");
  EXPECT_EQ(from_hex("007fff"), a);
  EXPECT_THROW(from_hex("0g"), std::exception);
  EXPECT_THROW(from_hex("123"), std::exception);
}

}  // namespace
}  // namespace bgl::pkt
