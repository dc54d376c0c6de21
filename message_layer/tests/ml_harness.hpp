#pragma once
// Senders and receivers for the in-process message-layer tests: an Outbox owns posted messages
// (data in guarded buffers or gather lists, done/remote_done counts), an Inbox records every
// arrival (source, header, size, protocol, handle) and places its data where a per-test policy
// says: a buffer at some alignment, a scatter list, or later (unexpected, accepted by the test).
#include <sys/uio.h>

#include <cstring>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "bgl/message_layer/message_layer.hpp"
#include "ml_test_data.hpp"

namespace bgl::message_layer::test {

// The user header of every test message: which message this is.
struct TestHeader {
  std::uint32_t seq = 0;
  std::uint32_t tag = 0;
};
static_assert(sizeof(TestHeader) == 8);

inline constexpr std::size_t kOnePacketWithTestHeader = 240 - 12 - sizeof(TestHeader);  // 220

// --------------------------------------------------------------------------------------------
// Sending

struct Outgoing {
  SendMessage m;
  TestHeader header;
  std::vector<std::byte> raw_header;  // used instead of `header` when set
  std::uint64_t key = 0;
  std::size_t bytes = 0;
  GuardedBuffer data;
  std::vector<GuardedBuffer> pieces;  // gather list storage
  std::vector<iovec> iov;
  Protocol protocol = Protocol::one_packet;  // the layer's choice
  int done = 0;
  int remote_done = 0;
  // remote_done is made for the protocols that hear back from the receiver (rendezvous).
  bool expects_remote_done() const {
    return m.remote_done && protocol != Protocol::one_packet && protocol != Protocol::eager &&
           protocol != Protocol::adaptive_eager;
  }
};

struct SendOptions {
  std::optional<Protocol> protocol;
  std::size_t offset = 0;           // alignment of the send buffer
  std::vector<std::size_t> gather;  // piece sizes of a gather list (empty: one buffer)
  bool notify_remote = false;       // ask for remote_done (rendezvous)
  HandlerId handler = 1;
  std::optional<std::vector<std::byte>> raw_header;  // a header other than the TestHeader
};

class Outbox {
 public:
  // Posts message number `seq` of `bytes` bytes to `dest`; its contents are the pattern of `key`.
  Outgoing& post(MessageLayer& ml, Rank dest, std::uint32_t seq, std::size_t bytes,
                 std::uint64_t key, const SendOptions& o = {}) {
    Outgoing& out = sent.emplace_back();
    out.key = key;
    out.bytes = bytes;
    out.header = {seq, static_cast<std::uint32_t>(bytes)};
    out.m.dest = dest;
    out.m.handler = o.handler;
    if (o.raw_header) {
      out.raw_header = *o.raw_header;
      out.m.header = out.raw_header;
    } else {
      out.m.header = std::as_bytes(std::span(&out.header, 1));
    }
    if (o.gather.empty()) {
      out.data = GuardedBuffer(bytes, o.offset);
      out.data.fill(key);
      out.m.data.buffer = out.data.span();
    } else {
      std::size_t at = 0;
      for (std::size_t i = 0; i < o.gather.size(); ++i) {
        auto& piece = out.pieces.emplace_back(o.gather[i], (o.offset + 5 * i) % 32);
        fill_pattern(piece.span(), key, at);
        at += o.gather[i];
      }
      for (auto& piece : out.pieces)
        out.iov.push_back({piece.data(), piece.size()});
      out.m.data.iov = out.iov;
    }
    out.m.protocol = o.protocol;
    out.m.context = &out;
    out.m.done = [](SendMessage& m) { ++static_cast<Outgoing*>(m.context)->done; };
    if (o.notify_remote)
      out.m.remote_done = [](SendMessage& m) { ++static_cast<Outgoing*>(m.context)->remote_done; };
    out.protocol = ml.choose(out.m);
    ml.post(out.m);
    return out;
  }

  bool all_done() const {
    for (const auto& o : sent)
      if (o.done == 0 || (o.expects_remote_done() && o.remote_done == 0)) return false;
    return true;
  }
  std::size_t done_count() const {
    std::size_t n = 0;
    for (const auto& o : sent)
      n += o.done > 0;
    return n;
  }

  std::deque<Outgoing> sent;  // stable addresses while posted
};

// --------------------------------------------------------------------------------------------
// Receiving

class Inbox;

struct Delivery {
  Inbox* inbox = nullptr;
  Rank source = 0;
  HandlerId handler = 0;
  std::vector<std::byte> header;
  std::size_t bytes = 0;
  Protocol protocol = Protocol::one_packet;
  std::uint32_t handle = 0;
  bool unexpected = false;
  // Destination: one buffer, or scatter pieces.
  GuardedBuffer buffer;
  std::vector<GuardedBuffer> pieces;
  std::vector<iovec> iov;
  // Completion.
  int completions = 0;
  std::size_t completed_bytes = 0;
  std::uint32_t completed_handle = 0;

  TestHeader test_header() const {
    TestHeader h{~0u, ~0u};
    if (header.size() == sizeof h) std::memcpy(&h, header.data(), sizeof h);
    return h;
  }
  std::size_t capacity() const {
    if (iov.empty()) return buffer.size();
    std::size_t n = 0;
    for (const auto& v : iov)
      n += v.iov_len;
    return n;
  }
  // The delivered bytes, flattened (a scatter list is gathered back).
  std::vector<std::byte> contents() const {
    if (pieces.empty()) return {buffer.span().begin(), buffer.span().end()};
    std::vector<std::byte> all;
    for (const auto& p : pieces)
      all.insert(all.end(), p.data(), p.data() + p.size());
    return all;
  }
  bool guards_intact() const {
    if (!buffer.guards_intact()) return false;
    for (const auto& p : pieces)
      if (!p.guards_intact()) return false;
    return true;
  }
};

class Inbox {
 public:
  // Answers an arrival: where its data go (see the helpers into(), scatter(), later()).
  using Policy = std::function<RecvTarget(Inbox&, Delivery&)>;

  Inbox(MessageLayer& ml, HandlerId id, Policy policy) : ml_(&ml), policy_(std::move(policy)) {
    ml.register_handler(id, &Inbox::on_arrival, this);
  }
  Inbox(const Inbox&) = delete;
  Inbox& operator=(const Inbox&) = delete;

  static RecvTarget into(Delivery& d, std::size_t capacity, std::size_t offset = 0) {
    d.buffer = GuardedBuffer(capacity, offset);
    d.buffer.clear(std::byte{0xee});
    return RecvTarget::into(d.buffer.span(), &Inbox::on_done, &d);
  }
  static RecvTarget scatter(Delivery& d, const std::vector<std::size_t>& sizes,
                            std::size_t offset = 0) {
    d.pieces.clear();
    d.iov.clear();
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      auto& p = d.pieces.emplace_back(sizes[i], (offset + 3 * i) % 32);
      p.clear(std::byte{0xee});
    }
    for (auto& p : d.pieces)
      d.iov.push_back({p.data(), p.size()});
    return RecvTarget::scatter(d.iov, &Inbox::on_done, &d);
  }
  static RecvTarget later(Delivery& d) {
    d.unexpected = true;
    return RecvTarget::later();
  }
  // Hands over the destination of an unexpected message.
  void accept(Delivery& d, const RecvTarget& target) { ml_->accept(RecvHandle{d.handle}, target); }

  std::size_t completed() const { return completed_; }
  // Forgets every delivery (all of them must be complete).
  void clear() {
    got.clear();
    completed_ = 0;
  }
  std::size_t arrived() const { return got.size(); }
  MessageLayer& layer() { return *ml_; }

  std::deque<Delivery> got;  // in arrival (handler call) order

 private:
  static RecvTarget on_arrival(void* ctx, const Arrival& a) {
    auto& self = *static_cast<Inbox*>(ctx);
    Delivery& d = self.got.emplace_back();
    d.inbox = &self;
    d.source = a.source;
    d.handler = a.handler;
    d.header.assign(a.header.begin(), a.header.end());
    d.bytes = a.bytes;
    d.protocol = a.protocol;
    d.handle = a.handle.id;
    return self.policy_(self, d);
  }
  static void on_done(void* ctx, std::uint32_t handle, std::size_t bytes) {
    auto& d = *static_cast<Delivery*>(ctx);
    ++d.completions;
    d.completed_bytes = bytes;
    d.completed_handle = handle;
    ++d.inbox->completed_;
  }

  MessageLayer* ml_;
  Policy policy_;
  std::size_t completed_ = 0;
};

// The protocol a message of `bytes` data bytes and an 8-byte header gets by default.
inline Protocol default_protocol(std::size_t bytes, const ProtocolLimits& l = {}) {
  if (l.forced) return *l.forced;
  if (bytes <= kOnePacketWithTestHeader) return Protocol::one_packet;
  if (bytes <= l.eager_limit) return l.adaptive_eager ? Protocol::adaptive_eager : Protocol::eager;
  return Protocol::rendezvous;
}

inline std::string describe(const Delivery& d) {
  const auto h = d.test_header();
  return "message " + std::to_string(h.seq) + " from rank " + std::to_string(d.source) + " (" +
         std::to_string(d.bytes) + " bytes, " + std::string(to_string(d.protocol)) + ")";
}

}  // namespace bgl::message_layer::test
