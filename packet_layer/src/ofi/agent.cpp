#include "bgl/packet_layer/ofi_agent.hpp"

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <utility>

#include "bgl/job_runtime/agent_wake.hpp"
#include "bgl/job_runtime/backoff.hpp"
#include "bgl/job_runtime/env.hpp"
#include "bgl/job_runtime/log.hpp"
#include "bgl/packet_layer/backend.hpp"
#include "bgl/torus_emu/error.hpp"
#include "bgl/virtual_time/torus_timing.hpp"
#include "wire.hpp"

namespace bgl::packet_layer {
namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void fail(const std::string& what, int rc) {
  throw ConfigError("libfabric: " + what + ": " + fi_strerror(-rc));
}

template <class T>
void close_fid(T*& p) {
  if (p) fi_close(&p->fid);
  p = nullptr;
}

// One message buffer. The libfabric context comes first so that a completion's op_context leads
// back to its buffer.
struct Buffer {
  fi_context2 ctx{};
  int index = 0;
  int host = -1;  // send buffers: the destination host
  bool send = false;
  std::uint32_t records = 0;  // data messages: packets in it
  std::size_t used = 0;       // bytes written
  alignas(64) std::array<std::byte, wire::kBufferBytes> data{};

  wire::Header& header() { return *reinterpret_cast<wire::Header*>(data.data()); }
};

// Inbound packets waiting for room in a reception FIFO (bounded by the credits).
struct Pending {
  Target to;
  std::uint16_t src_host = 0;
  int next = -1;
  virtual_time::Stamp stamp;  // virtual time only
  Packet packet;
};

constexpr int kRecvBuffers = 64;
constexpr std::chrono::milliseconds kHousekeeping{20};
constexpr int kLoggedRejections = 20;  // per host, then every 1000th
// The longest sleep of an idle agent that the network or its tasks wake: a bound for what
// nobody rings for (a task that lost the agent's eventfd), at a cost of 1000 polls a second.
constexpr std::chrono::milliseconds kLongestSleep{1};
constexpr std::chrono::microseconds kDefaultSpin{100};

}  // namespace

OfiOptions OfiOptions::from_environment() {
  OfiOptions o;
  if (auto p = job_runtime::env::get("FI_PROVIDER")) o.provider = *p;
  if (auto p = job_runtime::env::get("BGL_OFI_PROGRESS")) {
    if (*p != "default" && *p != "manual" && *p != "auto")
      throw ConfigError("BGL_OFI_PROGRESS='" + *p + "': expected default, manual or auto");
    o.progress = *p;
  }
  if (auto v = job_runtime::env::get_int("BGL_OFI_CREDITS", 1, 1 << 16))
    o.credits = static_cast<std::uint32_t>(*v);
  if (auto v = job_runtime::env::get_int("BGL_OFI_BATCH", 1, 32))
    o.batch = static_cast<std::uint32_t>(*v);
  if (auto v = job_runtime::env::get_int("BGL_OFI_SLEEP_US", 0, 1'000'000))
    o.sleep = std::chrono::microseconds(*v);
  if (auto v = job_runtime::env::get_int("BGL_OFI_SPIN_US", 0, 10'000'000))
    o.spin = std::chrono::microseconds(*v);
  if (auto v = job_runtime::env::get_int("BGL_OFI_TIMEOUT_MS", 100, 3'600'000)) {
    o.timeout = std::chrono::milliseconds(*v);
    o.heartbeat = std::min(o.heartbeat, o.timeout / 5);
  }
  return o;
}

std::string to_hex(const std::vector<std::byte>& bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s;
  for (auto b : bytes) {
    s.push_back(kDigits[static_cast<unsigned>(b) >> 4]);
    s.push_back(kDigits[static_cast<unsigned>(b) & 15]);
  }
  return s;
}

std::vector<std::byte> from_hex(const std::string& text) {
  const auto digit = [&](char c) -> unsigned {
    if (c >= '0' && c <= '9') return static_cast<unsigned>(c - '0');
    if (c >= 'a' && c <= 'f') return static_cast<unsigned>(c - 'a' + 10);
    throw ConfigError("malformed libfabric address '" + text + "'");
  };
  if (text.empty() || text.size() % 2)
    throw ConfigError("malformed libfabric address '" + text + "'");
  std::vector<std::byte> out;
  for (std::size_t i = 0; i < text.size(); i += 2)
    out.push_back(static_cast<std::byte>(digit(text[i]) << 4 | digit(text[i + 1])));
  return out;
}

struct OfiAgent::Impl {
  struct Peer {
    std::uint32_t credits = 0;  // packets we may still send it
    std::uint32_t owed = 0;     // credits we owe it (its packets we deposited)
    // Stores have credits of their own: applying one never waits, so they can never be stuck
    // behind packets that wait for a full reception FIFO.
    std::uint32_t store_credits = 0, store_owed = 0;
    int store_batch = -1;  // open store buffer
    std::uint32_t tx_seq = 0, rx_seq = 0;
    int batch = -1;          // open data buffer
    std::deque<int> queued;  // buffers ready to post, in order
    Clock::time_point last_sent, last_heard;
    bool bye = false;
    int status = 0;
    SlowestTask slowest;  // virtual time: its slowest task, from its farewell
    std::uint64_t rejected = 0;
  };

  const Machine& machine;
  job_runtime::Placement placement;
  OfiOptions options;
  int hosts;
  int me;

  fi_info* info = nullptr;
  fid_fabric* fabric = nullptr;
  fid_domain* domain = nullptr;
  fid_av* av = nullptr;
  fid_cq* cq = nullptr;
  fid_ep* ep = nullptr;
  fid_mr* mr = nullptr;
  void* desc = nullptr;
  int wait_fd = -1;  // the completion queue's wait descriptor; -1: the provider has none
  int wake_fd = -1;  // eventfd the tasks write when they ring the sleeping agent

  std::vector<Buffer> buffers;
  std::vector<int> free_send;
  std::vector<fi_addr_t> addresses;
  std::vector<Peer> peers;

  std::vector<Pending> pool;
  int free_pending = -1;
  std::vector<int> queue_head, queue_tail;  // per (node, group, fifo)
  std::vector<int> blocked;                 // keys with waiting packets

  std::vector<torus_emu::Rank> local_ranks;
  std::size_t next_ring = 0;
  job_runtime::WaitPolicy policy;

  // Barrier across hosts.
  std::uint32_t generation = 0;
  bool arrival_sent = false;
  std::array<int, 2> arrivals{};
  // Virtual time: the latest clock the other hosts' tasks arrived with, per generation's parity.
  std::array<std::uint64_t, 2> remote_clock{};

  // Virtual time: packets carry stamps, and inbound deterministic packets are timed over the
  // links this host keeps (links_timed_by_sender).
  bool timed = false;
  virtual_time::TorusTiming timing;

  std::thread thread;
  std::atomic<bool> stop{false};
  std::atomic<bool> finishing{false};
  std::atomic<bool> finished{false};
  int my_status = 0;
  bool bye_sent = false;
  mutable std::mutex mutex;
  std::optional<std::string> fault_text;
  std::atomic<bool> faulted{false};
  OfiStats stats;

  Impl(const Machine& m, const job_runtime::Placement& p, OfiOptions o)
      : machine(m),
        placement(p),
        options(std::move(o)),
        hosts(p.host_count()),
        me(p.this_host),
        peers(static_cast<std::size_t>(hosts)),
        policy(job_runtime::WaitPolicy::for_job(m.job().busy_threads())) {
    // Polling beside more polling threads than cores only delays the thread that has the work:
    // the scheduler lets a woken thread wait while the poller's slice lasts.
    if (!options.spin)
      options.spin = m.job().busy_threads() > job_runtime::usable_cores()
                         ? std::chrono::microseconds(0)
                         : kDefaultSpin;
    open();
    // After open(), which may throw: registered means the destructor will unregister.
    wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (wake_fd < 0) throw ConfigError(std::string("eventfd: ") + std::strerror(errno));
    job_runtime::register_agent_wake(m.job().agent_bell(), wake_fd);
    for (int r = 0; r < m.mapping().size(); ++r)
      if (m.local(static_cast<torus_emu::Rank>(r)))
        local_ranks.push_back(static_cast<torus_emu::Rank>(r));
    const std::size_t keys =
        static_cast<std::size_t>(m.shape().node_count()) * kFifoGroups * kReceptionFifos;
    queue_head.assign(keys, -1);
    queue_tail.assign(keys, -1);
    pool.resize(static_cast<std::size_t>(options.credits) * static_cast<std::size_t>(hosts));
    for (std::size_t i = 0; i < pool.size(); ++i)
      pool[i].next = i + 1 < pool.size() ? static_cast<int>(i + 1) : -1;
    free_pending = pool.empty() ? -1 : 0;
    for (auto& peer : peers)
      peer.credits = peer.store_credits = options.credits;
    if (const auto* params = m.job().vt_params()) {
      timed = true;
      timing = virtual_time::TorusTiming(*params, m.shape(), m.calendars(), m.link_index());
    }
  }

  ~Impl() {
    stop = true;
    wake();
    if (thread.joinable()) thread.join();
    job_runtime::unregister_agent_wake(machine.job().agent_bell());
    ::close(wake_fd);
    close_fid(ep);
    close_fid(mr);
    close_fid(av);
    close_fid(cq);
    close_fid(domain);
    close_fid(fabric);
    if (info) fi_freeinfo(info);
  }

  void open() {
    fi_info* hints = fi_allocinfo();
    if (!hints) throw ConfigError("libfabric: fi_allocinfo failed");
    hints->ep_attr->type = FI_EP_RDM;
    hints->caps = FI_MSG;
    hints->mode = FI_CONTEXT | FI_CONTEXT2;
    hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_VIRT_ADDR;
    hints->domain_attr->threading = FI_THREAD_DOMAIN;
    hints->tx_attr->msg_order = FI_ORDER_SAS;
    hints->rx_attr->msg_order = FI_ORDER_SAS;
    if (options.progress != "default") {
      const auto p = options.progress == "auto" ? FI_PROGRESS_AUTO : FI_PROGRESS_MANUAL;
      hints->domain_attr->data_progress = p;
      hints->domain_attr->control_progress = p;
    }
    // libfabric itself honours FI_PROVIDER; without it, ask for the default provider by name.
    if (!job_runtime::env::get("FI_PROVIDER"))
      hints->fabric_attr->prov_name = strdup(options.provider.c_str());
    const auto& host = placement.hosts[static_cast<std::size_t>(me)];
    const int rc =
        fi_getinfo(FI_VERSION(1, 9), host.address.c_str(), nullptr, FI_SOURCE, hints, &info);
    fi_freeinfo(hints);
    if (rc != 0 || !info)
      throw ConfigError("libfabric: no provider '" + options.provider + "' with reliable messages" +
                        " on " + host.address + " (host " + host.name + "): " + fi_strerror(-rc) +
                        "; check fi_info -p '" + options.provider + "'");
    if (!(info->tx_attr->msg_order & FI_ORDER_SAS))
      spdlog::warn(
          "libfabric provider {} does not promise send-after-send order; the agents "
          "check sequence numbers and stop the job if messages overtake each other",
          info->fabric_attr->prov_name);
    int r = fi_fabric(info->fabric_attr, &fabric, nullptr);
    if (r) fail("fi_fabric", r);
    if ((r = fi_domain(fabric, info, &domain, nullptr))) fail("fi_domain", r);
    fi_cq_attr cq_attr{};
    cq_attr.format = FI_CQ_FORMAT_MSG;
    cq_attr.size = 4096;
    // A wait descriptor lets the idle agent sleep until a message arrives instead of napping and
    // polling; providers that have none get the naps.
    cq_attr.wait_obj = options.sleep.count() ? FI_WAIT_FD : FI_WAIT_NONE;
    if ((r = fi_cq_open(domain, &cq_attr, &cq, nullptr)) && cq_attr.wait_obj == FI_WAIT_FD) {
      spdlog::debug("libfabric: no completion queue with a wait descriptor ({}); the agent naps",
                    fi_strerror(-r));
      cq_attr.wait_obj = FI_WAIT_NONE;
      r = fi_cq_open(domain, &cq_attr, &cq, nullptr);
    }
    if (r) fail("fi_cq_open", r);
    if (cq_attr.wait_obj == FI_WAIT_FD && fi_control(&cq->fid, FI_GETWAIT, &wait_fd) != 0)
      wait_fd = -1;
    fi_av_attr av_attr{};
    av_attr.type = FI_AV_TABLE;
    av_attr.count = static_cast<std::size_t>(hosts);
    if ((r = fi_av_open(domain, &av_attr, &av, nullptr))) fail("fi_av_open", r);
    if ((r = fi_endpoint(domain, info, &ep, nullptr))) fail("fi_endpoint", r);
    if ((r = fi_ep_bind(ep, &av->fid, 0))) fail("fi_ep_bind(av)", r);
    if ((r = fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV))) fail("fi_ep_bind(cq)", r);
    if ((r = fi_enable(ep))) fail("fi_enable", r);

    // Control messages of one barrier: the exchange entries of our tasks, to every other host.
    const std::size_t barrier_buffers =
        (machine.job().local_tasks() / wire::kMaxExchangePerMessage + 2) *
        static_cast<std::size_t>(hosts);
    const std::size_t send_buffers = std::max<std::size_t>(128, barrier_buffers + 64);
    buffers = std::vector<Buffer>(kRecvBuffers + send_buffers);
    for (std::size_t i = 0; i < buffers.size(); ++i) {
      buffers[i].index = static_cast<int>(i);
      buffers[i].send = i >= kRecvBuffers;
      if (buffers[i].send) free_send.push_back(static_cast<int>(i));
    }
    std::reverse(free_send.begin(), free_send.end());
    if (info->domain_attr->mr_mode & FI_MR_LOCAL) {
      if ((r = fi_mr_reg(domain, buffers.data(), buffers.size() * sizeof(Buffer), FI_SEND | FI_RECV,
                         0, 0, 0, &mr, nullptr)))
        fail("fi_mr_reg", r);
      desc = fi_mr_desc(mr);
    }
    for (int i = 0; i < kRecvBuffers; ++i)
      post_receive(buffers[static_cast<std::size_t>(i)]);
  }

  void post_receive(Buffer& b) {
    for (;;) {
      const auto r = fi_recv(ep, b.data.data(), b.data.size(), desc, FI_ADDR_UNSPEC, &b.ctx);
      if (r == 0) return;
      if (r != -FI_EAGAIN) fail("fi_recv", static_cast<int>(r));
      fi_cq_read(cq, nullptr, 0);  // progress
    }
  }

  std::vector<std::byte> name() const {
    std::vector<std::byte> out(256);
    std::size_t len = out.size();
    const int r = fi_getname(&ep->fid, out.data(), &len);
    if (r) fail("fi_getname", r);
    out.resize(len);
    return out;
  }

  void connect(const std::vector<std::vector<std::byte>>& all) {
    if (static_cast<int>(all.size()) != hosts)
      throw ConfigError("libfabric: " + std::to_string(all.size()) + " addresses for " +
                        std::to_string(hosts) + " hosts");
    addresses.assign(all.size(), FI_ADDR_UNSPEC);
    for (std::size_t h = 0; h < all.size(); ++h) {
      const int n = fi_av_insert(av, all[h].data(), 1, &addresses[h], 0, nullptr);
      if (n != 1)
        throw ConfigError("libfabric: cannot insert the address of host " + std::to_string(h));
    }
    const auto now = Clock::now();
    for (auto& p : peers)
      p.last_heard = p.last_sent = now;
  }

  void set_fault(std::string text) {
    std::lock_guard lock(mutex);
    if (fault_text) return;
    spdlog::debug("fault: {}", text);  // bglrun reports it when it stops the job
    fault_text = std::move(text);
    faulted = true;
  }

  std::string host_name(int h) const {
    const auto& e = placement.hosts[static_cast<std::size_t>(h)];
    return "host " + std::to_string(h) + " (" + e.name + ", " + e.address + ")";
  }

  // ---- sending ----

  int take_buffer(int host, wire::Kind kind) {
    if (free_send.empty()) return -1;
    const int i = free_send.back();
    free_send.pop_back();
    Buffer& b = buffers[static_cast<std::size_t>(i)];
    b.host = host;
    b.records = 0;
    b.used = sizeof(wire::Header);
    b.header() = wire::Header{wire::kMagic,
                              static_cast<std::uint8_t>(kind),
                              wire::kVersion,
                              static_cast<std::uint16_t>(me),
                              0,
                              0,
                              0,
                              0,
                              0,
                              timed ? wire::kStamped : 0};
    return i;
  }

  // The queued buffer's index (for a caller that appends to it), or -1.
  int queue_control(int host, wire::Kind kind, std::uint32_t value) {
    const int i = take_buffer(host, kind);
    if (i < 0) return i;  // only heartbeats and credits can be skipped; callers ensure the rest
    buffers[static_cast<std::size_t>(i)].header().value = value;
    peers[static_cast<std::size_t>(host)].queued.push_back(i);
    return i;
  }

  void close_batch(Peer& peer, int Peer::*which = &Peer::batch) {
    int& open = peer.*which;
    if (open < 0) return;
    Buffer& b = buffers[static_cast<std::size_t>(open)];
    b.header().count = b.records;
    peer.queued.push_back(open);
    open = -1;
  }

  // Posts queued messages in order; false when the provider pushed back.
  bool post(int host) {
    Peer& peer = peers[static_cast<std::size_t>(host)];
    bool any = false;
    while (!peer.queued.empty()) {
      Buffer& b = buffers[static_cast<std::size_t>(peer.queued.front())];
      b.header().seq = peer.tx_seq;
      b.header().credits = peer.owed;
      b.header().store_credits = peer.store_owed;
      const auto r = fi_send(ep, b.data.data(), b.used, desc,
                             addresses[static_cast<std::size_t>(host)], &b.ctx);
      if (r == -FI_EAGAIN) break;
      if (r != 0) {
        set_fault("sending to " + host_name(host) +
                  " failed: " + fi_strerror(static_cast<int>(-r)));
        return any;
      }
      ++peer.tx_seq;
      peer.owed = 0;
      peer.store_owed = 0;
      peer.last_sent = Clock::now();
      ++stats.messages_sent;
      stats.bytes_sent += b.used;
      stats.packets_sent += b.records;
      peer.queued.pop_front();
      any = true;
    }
    return any;
  }

  bool drain_rings() {
    bool any = false;
    const std::size_t n = local_ranks.size();
    for (std::size_t k = 0; k < n; ++k) {
      const std::size_t at = (next_ring + k) % n;
      OutboundRing& ring = machine.outbound(local_ranks[at]);
      for (std::uint32_t taken = 0; taken < options.batch; ++taken) {
        const OutboundPacket* p = ring.front();
        if (!p) break;
        const int host = placement.node_host[p->node];
        Peer& peer = peers[static_cast<std::size_t>(host)];
        if (peer.bye && host != me) {
          spdlog::error("packet for node {} on {}, whose tasks have ended: discarded [{}]", p->node,
                        host_name(host), p->header.describe());
          ring.pop();
          continue;
        }
        if (peer.credits == 0) {
          ++stats.credit_stalls;
          break;  // the ring's later packets wait behind this one: order
        }
        const std::size_t bytes = wire::record_bytes(p->header.payload_bytes, timed);
        if (peer.batch >= 0 &&
            (buffers[static_cast<std::size_t>(peer.batch)].used + bytes > wire::kBufferBytes ||
             buffers[static_cast<std::size_t>(peer.batch)].records >= options.batch))
          close_batch(peer);
        if (peer.batch < 0 && (peer.batch = take_buffer(host, wire::Kind::data)) < 0) break;
        Buffer& b = buffers[static_cast<std::size_t>(peer.batch)];
        const wire::Record rec{p->node, p->group, p->fifo,
                               static_cast<std::uint16_t>(kHeaderBytes + p->header.payload_bytes)};
        std::byte* out = b.data.data() + b.used;
        std::memcpy(out, &rec, sizeof rec);
        out += sizeof rec;
        if (timed) {
          std::memcpy(out, &p->stamp, sizeof p->stamp);
          out += sizeof p->stamp;
        }
        std::memcpy(out, &p->header, kHeaderBytes);
        std::memcpy(out + kHeaderBytes, p->payload.data(), p->header.payload_bytes);
        b.used += bytes;
        ++b.records;
        --peer.credits;
        ring.pop();
        any = true;
      }
    }
    next_ring = n ? (next_ring + 1) % n : 0;
    for (auto& peer : peers)
      close_batch(peer);
    return any;
  }

  // Moves the local tasks' remote stores into per-host store messages (stores for this host itself,
  // possible only with BGL_TRANSPORT=ofi on one host, are applied at once).
  bool drain_stores() {
    bool any = false;
    for (const torus_emu::Rank r : local_ranks) {
      job_runtime::StoreRing& ring = machine.job().store_ring(r);
      bool took = false;
      while (const job_runtime::StoreRecord* rec = ring.front()) {
        const job_runtime::StoreRequest& q = rec->request;
        const std::span<const std::byte> bytes(rec->data.data(), rec->bytes);
        const int host = q.host;
        if (host == me || host >= hosts) {
          const auto region = machine.job().region(static_cast<int>(q.region));
          if (host == me && !job_runtime::check_store(q, bytes.size(), region.size()))
            job_runtime::apply_store(region, q, bytes);
          else
            spdlog::error("discarded a malformed remote store of rank {}", r);
          ring.pop();
          took = true;
          continue;
        }
        Peer& peer = peers[static_cast<std::size_t>(host)];
        if (peer.bye) {
          // Nobody there can observe it any more (e.g. a slot freed after the job's last result).
          spdlog::debug("remote store for {}, whose tasks have ended: dropped", host_name(host));
          ring.pop();
          took = true;
          continue;
        }
        if (peer.store_credits == 0) {
          ++stats.credit_stalls;
          break;
        }
        const std::size_t need = wire::store_record_bytes(bytes.size());
        if (peer.store_batch >= 0 &&
            (buffers[static_cast<std::size_t>(peer.store_batch)].used + need > wire::kBufferBytes ||
             buffers[static_cast<std::size_t>(peer.store_batch)].records >= options.batch))
          close_batch(peer, &Peer::store_batch);
        if (peer.store_batch < 0 && (peer.store_batch = take_buffer(host, wire::Kind::store)) < 0)
          break;
        Buffer& b = buffers[static_cast<std::size_t>(peer.store_batch)];
        const wire::StoreRecord w{q.region, 0, rec->bytes, 0, q.offset, q.word, q.value, q.bell};
        std::memcpy(b.data.data() + b.used, &w, sizeof w);
        if (!bytes.empty())
          std::memcpy(b.data.data() + b.used + sizeof w, bytes.data(), bytes.size());
        b.used += need;
        ++b.records;
        --peer.store_credits;
        ++stats.stores_sent;
        ring.pop();
        took = true;
      }
      if (took) {
        ring.space.ring();
        any = true;
      }
    }
    for (auto& peer : peers)
      close_batch(peer, &Peer::store_batch);
    return any;
  }

  void on_stores(int src, const wire::Header& hdr, const std::byte* data, std::size_t len) {
    Peer& peer = peers[static_cast<std::size_t>(src)];
    std::size_t at = sizeof hdr;
    for (std::uint32_t i = 0; i < hdr.count; ++i) {
      wire::StoreRecord rec;
      if (at + sizeof rec > len) {
        reject(src, "store message of " + std::to_string(len) + " bytes ends inside store " +
                        std::to_string(i) + " of " + std::to_string(hdr.count));
        peer.store_owed += hdr.count - i;
        return;
      }
      std::memcpy(&rec, data + at, sizeof rec);
      if (rec.bytes > job_runtime::kMaxStoreBytes || at + sizeof rec + rec.bytes > len) {
        reject(src, "store " + std::to_string(i) + " claims " + std::to_string(rec.bytes) +
                        " bytes, beyond a store's size or the message");
        peer.store_owed += hdr.count - i;
        return;
      }
      const job_runtime::StoreRequest q{
          static_cast<std::uint16_t>(me), rec.region, rec.offset, rec.word, rec.value, rec.bell};
      const auto region = machine.job().region(static_cast<int>(rec.region));
      const std::span<const std::byte> bytes(data + at + sizeof rec, rec.bytes);
      if (const char* why = job_runtime::check_store(q, bytes.size(), region.size())) {
        reject(src, std::string("store into region ") + std::to_string(rec.region) + " at " +
                        std::to_string(rec.offset) + " (" + std::to_string(rec.bytes) +
                        " bytes, word " +
                        (rec.word == job_runtime::kNoOffset ? std::string("none")
                                                            : std::to_string(rec.word)) +
                        "): " + why);
      } else {
        job_runtime::apply_store(region, q, bytes);
        ++stats.stores_applied;
      }
      ++peer.store_owed;
      at += wire::store_record_bytes(rec.bytes);
    }
  }

  // ---- receiving ----

  std::size_t key_of(const Target& t) const {
    return (static_cast<std::size_t>(t.node) * kFifoGroups + t.group) * kReceptionFifos + t.fifo;
  }

  bool try_deposit(const Target& to, const PacketHeader& h, std::span<const std::byte> payload,
                   virtual_time::Stamp stamp) {
    ReceptionFifo fifo = machine.fifo(to.node, to.group, to.fifo);
    if (!(timed ? fifo.try_push_at(stamp, h, payload) : fifo.try_push(h, payload))) return false;
    machine.doorbell(to.node, to.group).ring();
    return true;
  }

  void reject(int src, const std::string& why) {
    Peer& peer = peers[static_cast<std::size_t>(src)];
    ++stats.rejected;
    ++peer.rejected;
    if (peer.rejected <= kLoggedRejections || peer.rejected % 1000 == 0)
      spdlog::error("rejected a record from {}: {} ({} rejected from it so far)", host_name(src),
                    why, peer.rejected);
  }

  // What is wrong with an inbound record, or an empty string.
  std::string check_record(int src, const wire::Record& rec, const PacketHeader& h) const {
    const auto& shape = machine.shape();
    if (rec.node >= static_cast<std::uint32_t>(shape.node_count()))
      return "target node " + std::to_string(rec.node) + " outside the partition";
    if (!placement.local(rec.node))
      return "target node " + std::to_string(rec.node) + " lives on host " +
             std::to_string(placement.node_host[rec.node]) + ", not here";
    if (machine.node_slot(rec.node) == job_runtime::kNoNodeSlot)
      return "target node " + std::to_string(rec.node) + " hosts no task";
    if (rec.group >= kFifoGroups) return "FIFO group " + std::to_string(rec.group);
    if (rec.fifo >= kReceptionFifos) return "reception FIFO " + std::to_string(rec.fifo);
    if (rec.bytes != kHeaderBytes + h.payload_bytes)
      return "record of " + std::to_string(rec.bytes) + " bytes for a payload of " +
             std::to_string(h.payload_bytes);
    if (const auto p = h.validate(shape, kFifoGroups); p != PacketHeader::Problem::none)
      return std::string(to_string(p)) + " [" + h.describe() + "]";
    if (h.dest_group != rec.group) return "header FIFO group differs from the target's";
    const auto at = shape.coord(rec.node);
    if (!h.deposit() && h.destination() != at) return "header destination is not the target node";
    if (h.deposit()) {
      const auto dim = static_cast<int>(torus_emu::index_of(h.line_direction())) / 2;
      const auto d = h.destination();
      const std::array<int, 3> a{at.x, at.y, at.z}, b{d.x, d.y, d.z};
      for (int i = 0; i < 3; ++i)
        if (i != dim && a[static_cast<std::size_t>(i)] != b[static_cast<std::size_t>(i)])
          return "deposit-bit copy for a node off the line";
    }
    const auto source = h.source_rank();
    if (source >= static_cast<std::uint32_t>(machine.mapping().size()))
      return "source rank " + std::to_string(source) + " outside the job";
    const auto source_node = machine.mapping().location(source).node;
    if (placement.node_host[source_node] != src)
      return "source rank " + std::to_string(source) + " does not live on the sending host";
    if ((rec.fifo == kHighPriorityFifo) != h.high_priority())
      return "priority class does not match reception FIFO " + std::to_string(rec.fifo);
    if (rec.fifo == kLocalFifo && source_node != rec.node)
      return "local-FIFO packet from another node";
    return {};
  }

  // Virtual time: a deterministically routed packet's stamp says when its head left the sending
  // host's links; the rest of the route is this host's to time (adaptive routes and deposit-bit
  // lines are timed whole by their sender, so their stamps are final).
  virtual_time::Stamp arrival_of(const PacketHeader& h, const wire::Record& rec,
                                 virtual_time::Stamp stamp) const {
    if (h.adaptive() || h.deposit()) return stamp;
    const auto& shape = machine.shape();
    const auto route = torus_emu::deterministic_route(
        shape, machine.mapping().location(h.source_rank()).node, rec.node);
    stamp.arrival = timing.transit_rest(route, links_timed_by_sender(shape, placement, route),
                                        stamp.arrival, h.packet_bytes());
    return stamp;
  }

  void accept(int src, const wire::Record& rec, const PacketHeader& h,
              std::span<const std::byte> payload, virtual_time::Stamp stamp) {
    Peer& peer = peers[static_cast<std::size_t>(src)];
    const Target to{rec.node, rec.group, rec.fifo};
    const auto key = key_of(to);
    ++stats.packets_received;
    if (timed) stamp = arrival_of(h, rec, stamp);
    if (queue_head[key] < 0 && try_deposit(to, h, payload, stamp)) {
      ++peer.owed;
      return;
    }
    if (free_pending < 0) {
      reject(src, "more packets than credits (the sender overran its credits)");
      ++peer.owed;
      return;
    }
    ++stats.fifo_stalls;
    const int i = free_pending;
    Pending& p = pool[static_cast<std::size_t>(i)];
    free_pending = p.next;
    p.to = to;
    p.src_host = static_cast<std::uint16_t>(src);
    p.next = -1;
    p.stamp = stamp;
    p.packet.header = h;
    std::memcpy(p.packet.payload.data(), payload.data(), payload.size());
    if (queue_head[key] < 0) {
      queue_head[key] = i;
      blocked.push_back(static_cast<int>(key));
    } else {
      pool[static_cast<std::size_t>(queue_tail[key])].next = i;
    }
    queue_tail[key] = i;
  }

  bool deliver_blocked() {
    bool any = false;
    for (std::size_t k = 0; k < blocked.size();) {
      const auto key = static_cast<std::size_t>(blocked[k]);
      while (queue_head[key] >= 0) {
        Pending& p = pool[static_cast<std::size_t>(queue_head[key])];
        if (!try_deposit(p.to, p.packet.header,
                         {p.packet.payload.data(), p.packet.header.payload_bytes}, p.stamp))
          break;
        ++peers[p.src_host].owed;
        const int next = p.next;
        p.next = free_pending;
        free_pending = queue_head[key];
        queue_head[key] = next;
        any = true;
      }
      if (queue_head[key] < 0) {
        blocked[k] = blocked.back();
        blocked.pop_back();
      } else {
        ++k;
      }
    }
    return any;
  }

  void on_message(const std::byte* data, std::size_t len) {
    ++stats.messages_received;
    wire::Header hdr;
    if (len < sizeof hdr) {
      spdlog::error("discarded a {}-byte message: shorter than a message header", len);
      return;
    }
    std::memcpy(&hdr, data, sizeof hdr);
    if (hdr.magic != wire::kMagic || hdr.version != wire::kVersion || hdr.src_host >= hosts) {
      spdlog::error(
          "discarded a {}-byte message that is not from an agent of this job "
          "(magic {:#x}, version {}, host {})",
          len, hdr.magic, hdr.version, hdr.src_host);
      return;
    }
    const int src = hdr.src_host;
    Peer& peer = peers[static_cast<std::size_t>(src)];
    if (hdr.seq != peer.rx_seq) {
      set_fault("message " + std::to_string(hdr.seq) + " from " + host_name(src) +
                " arrived when " + std::to_string(peer.rx_seq) +
                " was expected: the provider lost or reordered messages");
      return;
    }
    ++peer.rx_seq;
    peer.last_heard = Clock::now();
    if (((hdr.flags & wire::kStamped) != 0) != timed) {
      set_fault(host_name(src) + (timed ? " runs without" : " runs with") +
                " virtual time and this host" + (timed ? " with" : " without") +
                " it: every host of a job must be started with the same --virtual-time");
      return;
    }
    if (static_cast<std::uint64_t>(peer.credits) + hdr.credits > options.credits) {
      spdlog::error("{} returned {} credits, more than it owes; ignored", host_name(src),
                    hdr.credits);
    } else {
      peer.credits += hdr.credits;
    }
    if (static_cast<std::uint64_t>(peer.store_credits) + hdr.store_credits > options.credits) {
      spdlog::error("{} returned {} store credits, more than it owes; ignored", host_name(src),
                    hdr.store_credits);
    } else {
      peer.store_credits += hdr.store_credits;
    }
    switch (static_cast<wire::Kind>(hdr.kind)) {
      case wire::Kind::data: {
        std::size_t at = sizeof hdr;
        const std::size_t stamp_bytes = timed ? sizeof(virtual_time::Stamp) : 0;
        for (std::uint32_t i = 0; i < hdr.count; ++i) {
          wire::Record rec;
          PacketHeader h;
          virtual_time::Stamp stamp;
          if (at + sizeof rec + stamp_bytes + kHeaderBytes > len) {
            reject(src, "message of " + std::to_string(len) + " bytes ends inside record " +
                            std::to_string(i) + " of " + std::to_string(hdr.count));
            peer.owed += hdr.count - i;
            break;
          }
          std::memcpy(&rec, data + at, sizeof rec);
          if (timed) std::memcpy(&stamp, data + at + sizeof rec, sizeof stamp);
          const std::byte* packet = data + at + sizeof rec + stamp_bytes;
          std::memcpy(&h, packet, kHeaderBytes);
          if (rec.bytes < kHeaderBytes || rec.bytes > kMaxPacketBytes ||
              at + sizeof rec + stamp_bytes + rec.bytes > len) {
            reject(src, "record " + std::to_string(i) + " claims " + std::to_string(rec.bytes) +
                            " bytes, beyond the packet size or the message");
            peer.owed += hdr.count - i;
            break;
          }
          if (const auto why = check_record(src, rec, h); !why.empty()) {
            reject(src, why);
            ++peer.owed;
          } else {
            accept(src, rec, h, {packet + kHeaderBytes, h.payload_bytes}, stamp);
          }
          at += wire::record_bytes(rec.bytes - kHeaderBytes, timed);
        }
        break;
      }
      case wire::Kind::store:
        on_stores(src, hdr, data, len);
        break;
      case wire::Kind::exchange: {
        std::size_t at = sizeof hdr;
        for (std::uint32_t i = 0; i < hdr.count && at + sizeof(wire::Exchange) <= len; ++i) {
          wire::Exchange e;
          std::memcpy(&e, data + at, sizeof e);
          at += sizeof e;
          if (e.rank >= static_cast<std::uint32_t>(machine.mapping().size()) ||
              placement.node_host[machine.mapping().location(e.rank).node] != src ||
              e.bytes > job_runtime::kExchangeBytes) {
            spdlog::error("discarded a bootstrap entry from {} for rank {}", host_name(src),
                          e.rank);
            continue;
          }
          std::memcpy(machine.job().task(e.rank).exchange.data(), e.data, e.bytes);
        }
        break;
      }
      case wire::Kind::barrier_done:
        if (hdr.value == generation || hdr.value == generation + 1) {
          ++arrivals[hdr.value & 1];
          if (timed) {
            std::uint64_t clock = 0;
            if (len >= sizeof hdr + sizeof clock) std::memcpy(&clock, data + sizeof hdr, 8);
            auto& latest = remote_clock[hdr.value & 1];
            latest = std::max(latest, clock);
          }
        } else
          set_fault(host_name(src) + " reached barrier " + std::to_string(hdr.value) +
                    " while this host is at " + std::to_string(generation));
        break;
      case wire::Kind::bye:
        peer.bye = true;
        peer.status = static_cast<int>(hdr.value);
        if (timed && len >= sizeof hdr + sizeof(wire::Slowest)) {
          wire::Slowest w;
          std::memcpy(&w, data + sizeof hdr, sizeof w);
          if (w.rank < static_cast<std::uint32_t>(machine.mapping().size()) &&
              placement.node_host[machine.mapping().location(w.rank).node] == src)
            peer.slowest = {w.cycles, static_cast<int>(w.rank)};
          else if (w.rank != wire::Slowest::kNone)
            reject(src, "farewell names rank " + std::to_string(w.rank) +
                            ", not one of its tasks, as its slowest");
        }
        // A host that stopped because of another host's failure (count 1) is no news: the failing
        // host tells everybody itself.
        if (hdr.value != 0 && hdr.count == 0)
          set_fault(host_name(src) + " stopped its tasks with status " + std::to_string(hdr.value) +
                    " (see its log for the failing rank)");
        break;
      case wire::Kind::credit:
      case wire::Kind::heartbeat:
        break;
      default:
        spdlog::error("discarded a message of unknown kind {} from {}", hdr.kind, host_name(src));
    }
  }

  bool poll_cq() {
    std::array<fi_cq_msg_entry, 32> entries;
    const auto n = fi_cq_read(cq, entries.data(), entries.size());
    if (n == -FI_EAGAIN) return false;
    if (n == -FI_EAVAIL) {
      fi_cq_err_entry err{};
      if (fi_cq_readerr(cq, &err, 0) == 1) {
        auto* b = static_cast<Buffer*>(err.op_context);
        const char* text = fi_cq_strerror(cq, err.prov_errno, err.err_data, nullptr, 0);
        if (b && b->send) {
          set_fault("lost the connection to " + host_name(b->host) + ": " + fi_strerror(err.err) +
                    " (" + (text ? text : "?") + "); that host disappeared");
          free_send.push_back(b->index);
        } else if (b) {
          spdlog::error("receive failed: {} ({})", fi_strerror(err.err), text ? text : "?");
          post_receive(*b);
        }
      }
      return true;
    }
    if (n < 0) {
      set_fault(std::string("libfabric completion queue failed: ") +
                fi_strerror(static_cast<int>(-n)));
      return false;
    }
    for (long i = 0; i < n; ++i) {
      auto* b = static_cast<Buffer*>(entries[static_cast<std::size_t>(i)].op_context);
      if (b->send) {
        free_send.push_back(b->index);
      } else {
        on_message(b->data.data(), entries[static_cast<std::size_t>(i)].len);
        post_receive(*b);
      }
    }
    return n > 0;
  }

  // ---- barrier, heartbeats, end ----

  bool barrier_step() {
    if (hosts == 1) return false;
    bool any = false;
    job_runtime::JobBarrier& b = machine.job().barrier();
    const std::size_t needed =
        (local_ranks.size() / wire::kMaxExchangePerMessage + 2) * static_cast<std::size_t>(hosts);
    if (!arrival_sent && free_send.size() >= needed &&
        b.arrived.load(std::memory_order_acquire) ==
            static_cast<std::uint32_t>(local_ranks.size())) {
      for (int h = 0; h < hosts; ++h) {
        if (h == me) continue;
        for (std::size_t first = 0; first < local_ranks.size();
             first += wire::kMaxExchangePerMessage) {
          const int i = take_buffer(h, wire::Kind::exchange);
          Buffer& buf = buffers[static_cast<std::size_t>(i)];  // enough buffers: see open()
          const std::size_t last =
              std::min(local_ranks.size(), first + wire::kMaxExchangePerMessage);
          for (std::size_t k = first; k < last; ++k) {
            wire::Exchange e{
                local_ranks[k], static_cast<std::uint32_t>(job_runtime::kExchangeBytes), {}};
            std::memcpy(e.data, machine.job().task(local_ranks[k]).exchange.data(),
                        job_runtime::kExchangeBytes);
            std::memcpy(buf.data.data() + buf.used, &e, sizeof e);
            buf.used += sizeof e;
          }
          buf.header().count = static_cast<std::uint32_t>(last - first);
          peers[static_cast<std::size_t>(h)].queued.push_back(i);
        }
        const int done = queue_control(h, wire::Kind::barrier_done, generation);
        if (timed && done >= 0) {
          // Every local task has arrived (and raised the latest clock before it counted itself).
          const std::uint64_t clock = b.latest_clock_of(generation);
          Buffer& buf = buffers[static_cast<std::size_t>(done)];
          std::memcpy(buf.data.data() + buf.used, &clock, sizeof clock);
          buf.used += sizeof clock;
        }
      }
      arrival_sent = true;
      any = true;
    }
    if (arrival_sent && arrivals[generation & 1] == hosts - 1) {
      arrivals[generation & 1] = 0;
      arrival_sent = false;
      ++generation;
      // The last to arrive, with the other hosts' latest clock: releases the tasks.
      b.arrive_and_wait(machine.job().barrier_participants(), policy,
                        std::exchange(remote_clock[(generation - 1) & 1], 0));
      any = true;
    }
    return any;
  }

  void housekeeping() {
    const auto now = Clock::now();
    for (int h = 0; h < hosts; ++h) {
      Peer& peer = peers[static_cast<std::size_t>(h)];
      if (h == me || peer.bye) continue;
      if (now - peer.last_sent >= options.heartbeat && peer.queued.empty())
        queue_control(h, wire::Kind::heartbeat, 0);
      if (now - peer.last_heard > options.timeout)
        set_fault(host_name(h) + " has not been heard from for " +
                  std::to_string(
                      std::chrono::duration_cast<std::chrono::milliseconds>(now - peer.last_heard)
                          .count()) +
                  " ms: it disappeared or the network to it failed");
    }
  }

  // The local task with the latest clock among those that published theirs.
  wire::Slowest slowest_local() const {
    wire::Slowest w;
    for (const auto r : local_ranks) {
      const auto& slot = machine.job().task(r);
      if (!slot.published.load(std::memory_order_acquire)) continue;
      if (w.rank == wire::Slowest::kNone || slot.counters.vt_clock > w.cycles)
        w = {slot.counters.vt_clock, r, 0};
    }
    return w;
  }

  bool stores_pending() const {
    for (auto r : local_ranks)
      if (machine.job().store_ring(r).front()) return true;
    return false;
  }

  // Ring heads the agent can move now. A head that waits for credits is not work: credits come in
  // a message, which wakes the agent; counting it kept a credit-starved agent polling on a core
  // its tasks needed.
  bool sendable(const OutboundPacket& p) const {
    const int host = placement.node_host[p.node];
    const Peer& peer = peers[static_cast<std::size_t>(host)];
    return peer.credits > 0 || (peer.bye && host != me);
  }
  bool storable(const job_runtime::StoreRecord& rec) const {
    const int host = rec.request.host;
    if (host == me || host >= hosts) return true;
    const Peer& peer = peers[static_cast<std::size_t>(host)];
    return peer.store_credits > 0 || peer.bye;
  }
  bool idle_ready() const {
    for (auto r : local_ranks) {
      if (const OutboundPacket* p = machine.outbound(r).front(); p && sendable(*p)) return true;
      if (const auto* rec = machine.job().store_ring(r).front(); rec && storable(*rec)) return true;
    }
    return false;
  }

  // Wakes the agent's thread if it sleeps (finish(), the destructor).
  void wake() const {
    const std::uint64_t one = 1;
    [[maybe_unused]] const auto n = ::write(wake_fd, &one, sizeof one);
  }

  // Work that nobody rings the agent for: packets waiting for room in a reception FIFO (the tasks
  // free it without ringing), messages the provider pushed back, the end of the job.
  bool unsignalled_work() const {
    if (!blocked.empty() || (finishing.load(std::memory_order_relaxed) && !bye_sent)) return true;
    return std::any_of(peers.begin(), peers.end(), [](const Peer& p) { return !p.queued.empty(); });
  }

  // An idle agent's sleep: until a message arrives or a task rings (tasks write the eventfd when
  // they see a sleeper), at most until `deadline` or kLongestSleep; only a nap
  // (BGL_OFI_SLEEP_US) while unsignalled work waits or when the provider has no wait descriptor.
  void sleep_idle(Clock::time_point deadline) {
    job_runtime::Doorbell& bell = machine.job().agent_bell();
    const bool nap = wait_fd < 0 || unsignalled_work();
    const auto now = Clock::now();
    const std::chrono::nanoseconds timeout =
        nap ? std::chrono::nanoseconds(options.sleep)
            : std::clamp<std::chrono::nanoseconds>(deadline - now, std::chrono::nanoseconds(0),
                                                   kLongestSleep);
    const std::uint32_t seen = bell.arm();
    job_runtime::heavy_fence();
    bool rung = false;
    if (!idle_ready()) {
      if (wait_fd < 0) {
        job_runtime::futex_wait(bell.rings, seen, timeout);
      } else {
        fid* waiting = &cq->fid;
        // -FI_EAGAIN: completions are there already; the next round reads them.
        if (fi_trywait(fabric, &waiting, 1) == FI_SUCCESS) {
          std::array<pollfd, 2> fds{pollfd{wait_fd, POLLIN, 0}, pollfd{wake_fd, POLLIN, 0}};
          const timespec ts{static_cast<time_t>(timeout.count() / 1'000'000'000),
                            static_cast<long>(timeout.count() % 1'000'000'000)};
          rung = ::ppoll(fds.data(), fds.size(), &ts, nullptr) > 0 && fds[1].revents;
        }
      }
    }
    if (rung) {
      std::uint64_t count = 0;
      [[maybe_unused]] const auto n = ::read(wake_fd, &count, sizeof count);
    }
  }

  void run() {
    // Naps of a few microseconds must not grow by the default 50 us of timer slack.
    prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL);
    auto last_work = Clock::now();
    auto next_housekeeping = Clock::now();
    for (;;) {
      if (stop.load(std::memory_order_relaxed)) return;
      bool work = poll_cq();
      work |= drain_stores();
      work |= drain_rings();
      work |= deliver_blocked();
      work |= barrier_step();
      // The goodbye goes after the tasks' last remote stores (e.g. their arrival at a final
      // barrier, which other hosts' tasks may still wait for); stores drain as long as the other
      // host lives (applying them never waits), and are dropped for hosts that ended.
      if (finishing.load(std::memory_order_acquire) && !bye_sent &&
          (!stores_pending() || faulted.load())) {
        for (int h = 0; h < hosts; ++h) {
          if (h == me) continue;
          const int bye = queue_control(h, wire::Kind::bye, static_cast<std::uint32_t>(my_status));
          if (bye >= 0) {
            Buffer& b = buffers[static_cast<std::size_t>(bye)];
            b.header().count = faulted.load() ? 1 : 0;  // stopped because of another host's fault
            if (timed) {
              const wire::Slowest w = slowest_local();
              std::memcpy(b.data.data() + b.used, &w, sizeof w);
              b.used += sizeof w;
            }
          }
        }
        bye_sent = true;
      }
      // Credits flow back on the next message to their host (a reply, a heartbeat); a message of
      // their own only once a quarter has piled up. The sender then still holds three quarters,
      // and it can only run dry when a quarter is owed, so it never waits for lack of a credit
      // message; returning credits whenever the agent idles cost a message (and a wake-up of the
      // other agent) per packet in a ping-pong.
      for (int h = 0; h < hosts; ++h) {
        Peer& peer = peers[static_cast<std::size_t>(h)];
        const std::uint32_t owed = std::max(peer.owed, peer.store_owed);
        if (owed >= std::max(1u, options.credits / 4) && peer.queued.empty())
          queue_control(h, wire::Kind::credit, 0);
        if (!peer.queued.empty()) work |= post(h);
      }
      const auto now = Clock::now();
      if (now >= next_housekeeping) {
        housekeeping();
        next_housekeeping = now + kHousekeeping;
      }
      if (bye_sent && !finished.load(std::memory_order_relaxed)) {
        bool all = true;
        for (int h = 0; h < hosts; ++h)
          all &= h == me || peers[static_cast<std::size_t>(h)].bye;
        bool flushed = true;
        for (auto& p : peers)
          flushed &= p.queued.empty();
        if ((all && flushed) || faulted.load()) finished.store(true, std::memory_order_release);
      }
      // Idle: keep polling for BGL_OFI_SPIN_US after the last work (a reply usually comes
      // within a round trip, and a sleeping agent costs a wake-up on each side of it), then sleep.
      if (work) {
        last_work = now;
      } else if (now - last_work < *options.spin) {
        job_runtime::Backoff::cpu_relax();
      } else if (options.sleep.count() == 0) {
        job_runtime::Backoff::yield();
      } else {
        sleep_idle(next_housekeeping);
      }
    }
  }
};

OfiAgent::OfiAgent(const Machine& machine, const job_runtime::Placement& placement,
                   OfiOptions options)
    : impl_(std::make_unique<Impl>(machine, placement, std::move(options))) {}

OfiAgent::~OfiAgent() = default;

std::vector<std::byte> OfiAgent::address() const {
  return impl_->name();
}

void OfiAgent::start(const std::vector<std::vector<std::byte>>& addresses) {
  impl_->connect(addresses);
  impl_->thread = std::thread([this] {
    try {
      impl_->run();
    } catch (const std::exception& e) {
      impl_->set_fault(std::string("the libfabric agent failed: ") + e.what());
      impl_->finished = true;
    }
  });
}

std::optional<std::string> OfiAgent::fault() const {
  if (!impl_->faulted.load(std::memory_order_acquire)) return std::nullopt;
  std::lock_guard lock(impl_->mutex);
  return impl_->fault_text;
}

int OfiAgent::finish(int status) {
  if (!impl_->thread.joinable()) return 0;
  impl_->my_status = status;
  impl_->finishing.store(true, std::memory_order_release);
  impl_->wake();
  while (!impl_->finished.load(std::memory_order_acquire))
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  // Give the last messages (our bye) a moment to leave before the endpoint closes.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  impl_->stop = true;
  impl_->thread.join();
  for (const auto& p : impl_->peers)
    if (p.status != 0) return p.status;
  return 0;
}

int OfiAgent::wake_fd() const {
  return impl_->wake_fd;
}

OfiStats OfiAgent::stats() const {
  return impl_->stats;
}

std::vector<SlowestTask> OfiAgent::other_hosts_slowest() const {
  std::vector<SlowestTask> out;
  for (int h = 0; h < impl_->hosts; ++h)
    if (h != impl_->me) out.push_back(impl_->peers[static_cast<std::size_t>(h)].slowest);
  return out;
}

std::string OfiAgent::describe() const {
  const auto* info = impl_->info;
  const auto a = impl_->name();
  std::vector<char> text(256);
  std::size_t len = text.size();
  fi_av_straddr(impl_->av, a.data(), text.data(), &len);
  return std::string(info->fabric_attr->prov_name) + " on " + info->fabric_attr->name + "/" +
         info->domain_attr->name + ", address " + std::string(text.data()) + ", progress " +
         (info->domain_attr->data_progress == FI_PROGRESS_AUTO ? "auto" : "manual") +
         (impl_->wait_fd >= 0 ? ", idle: sleeps until a message or a task wakes it"
                              : ", idle: naps");
}

}  // namespace bgl::packet_layer
