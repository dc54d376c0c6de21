#pragma once
// The point-to-point baselines for collnet_bench: what a message layer without a collective network
// does, over the packet layer's Endpoint (inject / poll / receive). A binomial tree rooted at rank
// 0 (MPICH's shape); allreduce = reduce up the tree + broadcast down it, pipelined packet by packet
// (a node forwards packet j as soon as its children's packets j are in); a dissemination barrier.
//
// Back-to-back operations: a child may already send packets of the next allreduce while its parent
// still finishes this one (the parent's broadcast packets reached it), but never two ahead; those
// are added into a stash for the next operation (the parity of the operation count tells them
// apart). Every wait of an allreduce drains receptions, so two tasks that flood each other cannot
// deadlock.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <thread>
#include <vector>

#include "bgl/packet_layer/endpoint.hpp"

namespace bgl::bench {

class P2PTree {
 public:
  static constexpr std::size_t kPayload = 240;

  P2PTree(packet_layer::Endpoint& ep, int rank, int size) : ep_(ep), rank_(rank), size_(size) {
    // Children r + 2^k below r's lowest set bit; the parent clears that bit.
    for (int m = 1; m < size; m <<= 1) {
      if (rank & m) {
        parent_ = rank - m;
        break;
      }
      if (rank + m < size) children_.push_back(rank + m);
    }
  }

  // See watchdog(): BGL_P2P_WATCHDOG=S reports an allreduce stuck for S seconds.
  void enable_watchdog(int seconds) { watchdog(seconds); }

  // out = sum over all tasks of in (T: std::uint64_t or double, element-wise +).
  template <class T>
  void allreduce(std::span<const T> in, std::span<T> out) {
    Op op(*this, in.size_bytes(), kReduce);
    std::memcpy(out.data(), in.data(), in.size_bytes());
    apply_stash<T>(op, out);
    auto* bytes = reinterpret_cast<std::byte*>(out.data());
    current_ = &op;
    while (!op.finished(*this)) {
      bool progress = drain_receptions<T>(op, bytes);
      progress |= send_up(op, bytes);
      progress |= send_down(op, bytes, rank_ == 0 ? op.up : op.down_received);
      if (progress)
        progress_.fetch_add(1, std::memory_order_relaxed);
      else
        ep_.wait();
    }
    current_ = nullptr;
  }

  // buffer from rank 0 to everybody. The root may run several broadcasts ahead (nothing holds it
  // back but FIFO space), so a task takes only its current broadcast's packets off the FIFOs.
  void broadcast(std::span<std::byte> buffer) {
    Op op(*this, buffer.size(), kBroadcast);
    if (rank_ == 0) op.up = op.packets;
    current_ = &op;
    while (!op.finished(*this)) {
      bool progress =
          op.down_received < op.packets && drain_receptions<std::uint64_t>(op, buffer.data());
      progress |= send_down(op, buffer.data(), rank_ == 0 ? op.packets : op.down_received);
      if (progress) progress_.fetch_add(1, std::memory_order_relaxed);
      if (progress) continue;
      // The next broadcast's packets may wait in the FIFOs: then ep_.wait() would not block.
      if (op.down_received == op.packets && rank_ != 0)
        job_runtime::Backoff::yield();
      else
        ep_.wait();
    }
    current_ = nullptr;
  }

  // Dissemination barrier: round k sends to rank + 2^k and waits for rank - 2^k.
  void barrier() {
    const int parity = static_cast<int>(++barriers_ & 1);
    for (std::uint32_t round = 0; (1 << round) < size_; ++round) {
      const auto to = static_cast<torus_emu::Rank>((rank_ + (1 << round)) % size_);
      const packet_layer::PacketSpec spec{.dest = ep_.destination_of(to),
                                          .dispatch = static_cast<std::uint8_t>(kBarrier + parity),
                                          .word = round};
      while (ep_.inject(0, spec, {}) == packet_layer::InjectStatus::full)
        poll_barrier_or_wait();
      while (barrier_seen_[parity][round] == 0)
        poll_barrier_or_wait();
      --barrier_seen_[parity][round];
    }
    while (!ep_.advance())
      ep_.wait();
  }

 private:
  // Packet types; + 0 or 1 for the parity of the operation count.
  enum : std::uint8_t { kReduce = 10, kReduceDown = 12, kBroadcast = 16, kBarrier = 20 };

  struct Op {
    std::size_t bytes, packets;
    std::uint8_t dispatch;  // packet type + parity of the operation count
    std::size_t up = 0;     // packets sent to the parent (root: complete packets)
    std::size_t down_received = 0;
    std::size_t down_sent = 0;  // packets sent to every child
    std::size_t child = 0;      // the next child of packet down_sent
    std::vector<std::uint32_t>* pending;

    Op(P2PTree& t, std::size_t b, std::uint8_t kind)
        : bytes(b),
          packets((b + kPayload - 1) / kPayload),
          dispatch(static_cast<std::uint8_t>(kind + (++t.ops_ & 1))),
          pending(&t.pending_) {
      t.pending_.assign(packets, 0);
    }
    bool finished(const P2PTree& t) const {
      return down_sent == packets && (t.rank_ == 0 || down_received == packets) &&
             (t.parent_ < 0 || up == packets || dispatch >= kBroadcast) && t.ep_.injection_idle();
    }
  };

  std::size_t chunk(const Op& op, std::size_t j) const {
    return std::min(kPayload, op.bytes - j * kPayload);
  }

  template <class T>
  void apply_stash(Op& op, std::span<T> out) {
    if (stash_count_.size() != op.packets) {
      stash_count_.assign(op.packets, 0);
      stash_.assign(op.bytes, std::byte{0});
      return;
    }
    for (std::size_t j = 0; j < op.packets; ++j) {
      if (stash_count_[j] == 0) continue;
      add<T>(reinterpret_cast<std::byte*>(out.data()) + j * kPayload, stash_.data() + j * kPayload,
             chunk(op, j));
      std::memset(stash_.data() + j * kPayload, 0, chunk(op, j));
      (*op.pending)[j] = stash_count_[j];
      stash_count_[j] = 0;
    }
  }

  template <class T>
  static void add(std::byte* dst, const std::byte* src, std::size_t n) {
    for (std::size_t i = 0; i + sizeof(T) <= n; i += sizeof(T)) {
      T a, b;
      std::memcpy(&a, dst + i, sizeof(T));
      std::memcpy(&b, src + i, sizeof(T));
      a = a + b;
      std::memcpy(dst + i, &a, sizeof(T));
    }
  }

  template <class T>
  bool drain_receptions(Op& op, std::byte* data) {
    bool any = false;
    const bool reduce = op.dispatch < kBroadcast;
    while (auto f = ep_.poll()) {
      const auto& h = ep_.peek(*f);
      const auto payload = ep_.payload(*f);
      const std::size_t j = h.word;
      if (reduce && h.dispatch == op.dispatch) {
        add<T>(data + j * kPayload, payload.data(), payload.size());
        ++(*op.pending)[j];
      } else if (reduce && h.dispatch == (op.dispatch ^ 1)) {  // a child's next allreduce
        add<T>(stash_.data() + j * kPayload, payload.data(), payload.size());
        ++stash_count_[j];
      } else if (h.dispatch == (reduce ? op.dispatch + kReduceDown - kReduce : op.dispatch)) {
        std::memcpy(data + j * kPayload, payload.data(), payload.size());
        ++op.down_received;
        if (!reduce && op.down_received == op.packets) {
          ep_.discard(*f);
          return true;
        }
      } else if (h.dispatch >= kBarrier) {
        ++barrier_seen_[h.dispatch - kBarrier][h.word];
      }
      ep_.discard(*f);
      any = true;
    }
    return any;
  }

  bool send_up(Op& op, const std::byte* data) {
    bool any = false;
    while (op.up < op.packets && (*op.pending)[op.up] == children_.size()) {
      if (parent_ >= 0) {
        const packet_layer::PacketSpec spec{
            .dest = ep_.destination_of(static_cast<torus_emu::Rank>(parent_)),
            .dispatch = op.dispatch,
            .word = static_cast<std::uint32_t>(op.up)};
        if (ep_.inject(0, spec, {data + op.up * kPayload, chunk(op, op.up)}) ==
            packet_layer::InjectStatus::full)
          break;
      }
      ++op.up;
      any = true;
    }
    return any;
  }

  bool send_down(Op& op, const std::byte* data, std::size_t ready) {
    bool any = false;
    const auto dispatch = static_cast<std::uint8_t>(
        op.dispatch < kBroadcast ? op.dispatch + kReduceDown - kReduce : op.dispatch);
    while (op.down_sent < ready) {
      for (; op.child < children_.size(); ++op.child) {
        const packet_layer::PacketSpec spec{
            .dest = ep_.destination_of(static_cast<torus_emu::Rank>(children_[op.child])),
            .dispatch = dispatch,
            .word = static_cast<std::uint32_t>(op.down_sent)};
        const int fifo = static_cast<int>(1 + op.child % (packet_layer::kInjectionFifos - 1));
        if (ep_.inject(fifo, spec, {data + op.down_sent * kPayload, chunk(op, op.down_sent)}) ==
            packet_layer::InjectStatus::full)
          return any;
        any = true;
      }
      op.child = 0;
      ++op.down_sent;
      any = true;
    }
    if (!ep_.injection_idle()) any |= ep_.advance();
    return any;
  }

  // Debugging aid: with BGL_P2P_WATCHDOG=S set, a thread reports an allreduce that made no
  // progress for S seconds (reading the state racily; it is only a report) and aborts.
  void watchdog(int seconds) {
    std::thread([this, seconds] {
      std::uint64_t seen = ~std::uint64_t{0};
      int still = 0;
      for (;;) {
        std::this_thread::sleep_for(std::chrono::seconds(1));
        const std::uint64_t now = progress_.load(std::memory_order_relaxed);
        still = (now == seen && current_ != nullptr) ? still + 1 : 0;
        seen = now;
        if (still >= seconds) dump(*current_);
      }
    }).detach();
  }

  void dump(const Op& op) {
    std::size_t incomplete = 0;
    while (incomplete < op.packets && (*op.pending)[incomplete] == children_.size())
      ++incomplete;
    std::fprintf(stderr,
                 "P2PTree rank %d stuck: op %llu dispatch %u packets %zu up %zu down_received %zu "
                 "down_sent %zu child %zu first incomplete %zu (pending %u of %zu) idle %d pending "
                 "injections %u parent %d\n",
                 rank_, static_cast<unsigned long long>(ops_), op.dispatch, op.packets, op.up,
                 op.down_received, op.down_sent, op.child, incomplete,
                 incomplete < op.packets ? (*op.pending)[incomplete] : 0, children_.size(),
                 ep_.injection_idle(), ep_.pending_packets(), parent_);
    for (int i = 0; i < packet_layer::kReceptionFifos; ++i) {
      auto f = ep_.machine().fifo(ep_.node(), ep_.group(), i);
      f.attach_consumer();
      if (const packet_layer::Packet* p = f.front())
        std::fprintf(stderr, "  rank %d fifo %d head: dispatch %u word %u from %u\n", rank_, i,
                     p->header.dispatch, p->header.word, p->header.source_rank());
    }
    std::abort();
  }

  void poll_barrier_or_wait() {
    bool any = false;
    while (auto f = ep_.poll()) {
      const auto& h = ep_.peek(*f);
      if (h.dispatch >= kBarrier) ++barrier_seen_[h.dispatch - kBarrier][h.word];
      ep_.discard(*f);
      any = true;
    }
    if (!any) ep_.wait();
  }

  packet_layer::Endpoint& ep_;
  int rank_, size_;
  int parent_ = -1;
  std::vector<int> children_;
  std::vector<std::uint32_t> pending_, stash_count_;
  std::vector<std::byte> stash_;
  std::uint64_t ops_ = 0, barriers_ = 0;
  Op* volatile current_ = nullptr;
  std::atomic<std::uint64_t> progress_{0};
  std::uint32_t barrier_seen_[2][32] = {};
};

}  // namespace bgl::bench
