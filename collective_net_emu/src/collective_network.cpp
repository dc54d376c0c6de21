#include "bgl/collective_net_emu/collective_network.hpp"

#include <array>
#include <cstring>
#include <stdexcept>

namespace bgl::collective_net_emu {
namespace {

std::size_t packets_for(std::size_t bytes) {
  return (bytes + kPacketBytes - 1) / kPacketBytes;
}

// The phase-2 (fixed-point) packets of `doubles` values.
std::size_t fixed_packets(std::size_t doubles) {
  return (doubles + fp::kFixedPerPacket - 1) / fp::kFixedPerPacket;
}

template <class T>
std::span<T> packet_part(std::span<T> s, std::size_t packet, std::size_t per_packet) {
  const std::size_t first = packet * per_packet;
  return s.subspan(first, std::min(per_packet, s.size() - first));
}

// The FP sum's packet order. Elements go in groups of 64: one phase-1 packet (exponents) and up to
// four phase-2 packets (fixed point). Step t carries phase 1 of group t, then phase 2 of group
// t - L, so that a group's exponent maximum has L steps to come back before its phase 2 is due;
// every task walks the same order, so sequence numbers agree.
class FpCursor {
 public:
  struct Packet {
    bool phase2;
    std::size_t group, part;
  };

  FpCursor(std::size_t elements, std::size_t lookahead)
      : elements_(elements),
        groups_((elements + fp::kExponentsPerPacket - 1) / fp::kExponentsPerPacket),
        lookahead_(std::min(lookahead, groups_)) {}

  bool done() const { return step_ >= groups_ + lookahead_; }
  Packet current() const {
    const bool has_phase1 = step_ < groups_;
    if (has_phase1 && sub_ == 0) return {false, step_, 0};
    return {true, step_ - lookahead_, sub_ - (has_phase1 ? 1 : 0)};
  }
  void next() {
    ++sub_;
    if (sub_ >= items(step_)) {
      ++step_;
      sub_ = 0;
    }
  }
  std::size_t total() const { return groups_ + fixed_packets(elements_); }
  std::size_t lookahead() const { return lookahead_; }

 private:
  std::size_t parts(std::size_t group) const {
    return fixed_packets(
        std::min(fp::kExponentsPerPacket, elements_ - group * fp::kExponentsPerPacket));
  }
  std::size_t items(std::size_t t) const {
    return (t < groups_ ? 1 : 0) +
           (t >= lookahead_ && t - lookahead_ < groups_ ? parts(t - lookahead_) : 0);
  }

  std::size_t elements_, groups_, lookahead_;
  std::size_t step_ = 0, sub_ = 0;
};

}  // namespace

CollectiveNetwork::CollectiveNetwork(const job_runtime::Job& job, torus_emu::Rank rank,
                                     const job_runtime::WaitPolicy& policy, RouteClass route)
    : route_(route),
      tree_(job, rank, policy),
      interrupt_(job, rank, policy),
      lookahead_(std::max<std::size_t>(tree_.ring() / 5, 2) - 1),
      emax_((lookahead_ + 1) * fp::kExponentsPerPacket) {
  if (route == RouteClass::to_root)
    throw std::invalid_argument("collectives need a combining class");
}

// Runs `packets` sequence numbers through the window: inject(seq, k) as far as the window (and the
// caller's dependencies) allow, receive(seq, k) whatever has arrived, sleep when neither moves.
template <class Inject, class Receive>
void CollectiveNetwork::stream(std::size_t packets, Inject&& inject, Receive&& receive) {
  const Seq base = next_seq_;
  next_seq_ += packets;
  std::size_t injected = 0, received = 0;
  while (received < packets) {
    bool progress = false;
    {
      const TreeEndpoint::InjectBurst burst(tree_);
      while (injected < packets && inject(base + injected, injected)) {
        ++injected;
        progress = true;
      }
    }
    while (received < packets && receive(base + received, received)) {
      ++received;
      progress = true;
    }
    if (!progress) tree_.wait_result(route_, base + received);
  }
}

Status CollectiveNetwork::allreduce(Op op, std::span<const std::byte> in,
                                    std::span<std::byte> out) {
  if (in.size() != out.size())
    throw std::invalid_argument("allreduce: input and output sizes differ");
  return reduce(tree_.rank(), op, in, out);  // every task keeps the result: each is "the root"
}

Status CollectiveNetwork::reduce(torus_emu::Rank root, Op op, std::span<const std::byte> in,
                                 std::span<std::byte> out) {
  const bool keep = root == tree_.rank();
  if (keep && out.size() != in.size()) throw std::invalid_argument("reduce: output size differs");
  const std::size_t per_packet = payload_bytes(op.lane);
  Status status = Status::ok;
  stream((in.size() + per_packet - 1) / per_packet,
         [&](Seq seq, std::size_t k) {
           return tree_.inject(route_, seq, op, packet_part(in, k, per_packet)) == InjectStatus::ok;
         },
         [&](Seq seq, std::size_t k) {
           const auto r = tree_.receive(
               route_, seq, keep ? packet_part(out, k, per_packet) : std::span<std::byte>{});
           if (r) status = worst(status, r->status);
           return r.has_value();
         });
  return status;
}

void CollectiveNetwork::broadcast(torus_emu::Rank root, std::span<std::byte> buffer) {
  const std::size_t packets = packets_for(buffer.size());
  if (root != tree_.rank()) {
    stream(
        packets, [](Seq, std::size_t) { return false; },
        [&](Seq seq, std::size_t k) {
          return tree_.receive(route_, seq, packet_part(buffer, k, kPacketBytes)).has_value();
        });
    return;
  }
  const Seq base = next_seq_;
  next_seq_ += packets;
  const auto send = [&](std::size_t k) {
    return tree_.broadcast(route_, base + k,
                           packet_part(std::span<const std::byte>(buffer), k, kPacketBytes)) ==
           InjectStatus::ok;
  };
  for (std::size_t k = 0; k < packets;) {
    {
      // The receivers wake once per run of packets (they must, before the root waits for space).
      const TreeEndpoint::InjectBurst burst(tree_);
      while (k < packets && send(k))
        ++k;
    }
    if (k < packets) tree_.wait_broadcast_space(route_, base + k);
  }
}

Status CollectiveNetwork::allreduce_sum(std::span<const double> in, std::span<double> out) {
  if (in.size() != out.size())
    throw std::invalid_argument("allreduce_sum: input and output sizes differ");
  // One exponent group whose phase-2 packets fit the window along with its phase-1 packet.
  if (!in.empty() && in.size() <= fp::kExponentsPerPacket &&
      fixed_packets(in.size()) < tree_.ring() && tree_.can_inject_for())
    return short_sum(in, out);
  const int guard = fp::guard_bits(tree_.tasks());
  FpCursor inject_at(in.size(), lookahead_), receive_at(in.size(), lookahead_);
  const std::size_t window = inject_at.lookahead() + 1;
  const auto emax = [&](std::size_t group) {
    return std::span<std::uint32_t>(emax_).subspan((group % window) * fp::kExponentsPerPacket,
                                                   fp::kExponentsPerPacket);
  };
  std::size_t phase1_received = 0;
  Status status = Status::ok;
  stream(
      inject_at.total(),
      [&](Seq seq, std::size_t) {
        const auto p = inject_at.current();
        if (p.phase2 && p.group >= phase1_received) return false;  // exponents not back yet
        const auto group = packet_part(in, p.group, fp::kExponentsPerPacket);
        const auto fill = [&](PacketSpan packet) {
          if (!p.phase2) return fp::encode_exponents(group, packet);
          fp::encode_fixed(packet_part(group, p.part, fp::kFixedPerPacket),
                           emax(p.group).subspan(p.part * fp::kFixedPerPacket), guard, packet);
        };
        if (tree_.inject_with(route_, seq, p.phase2 ? fp::kFixedOp : fp::kExponentOp, fill) !=
            InjectStatus::ok)
          return false;
        inject_at.next();
        return true;
      },
      [&](Seq seq, std::size_t) {
        const auto p = receive_at.current();
        const auto r = tree_.receive_with(route_, seq, [&](ConstPacketSpan packet, const Result&) {
          if (!p.phase2) return fp::decode_exponents(packet, emax(p.group));
          const auto group = packet_part(out, p.group, fp::kExponentsPerPacket);
          status = worst(
              status, fp::decode_fixed(packet, emax(p.group).subspan(p.part * fp::kFixedPerPacket),
                                       guard, packet_part(group, p.part, fp::kFixedPerPacket)));
        });
        if (!r) return false;
        status = worst(status, r->status);
        phase1_received += p.phase2 ? 0 : 1;
        receive_at.next();
        return true;
      });
  return status;
}

template <class Read>
Status CollectiveNetwork::receive_one(Seq seq, Read&& read) {
  for (;;) {
    if (const auto r =
            tree_.receive_with(route_, seq, [&](ConstPacketSpan p, const Result&) { read(p); }))
      return r->status;
    tree_.wait_result(route_, seq);
  }
}

// A sum of at most 64 doubles: one phase-1 packet (exponents) and up to four phase-2 packets.
// Phase 2 is what every task computes from phase 1's exponent maxima and its own values, so the
// task that completes phase 1 computes it for all: each task leaves its values in its deferred
// line and injects its exponents only; the one that then finds the maxima there first converts
// every task's values to the common grid and injects them as that task (TreeEndpoint::inject_for,
// timed as the task's own packets). It holds the rings until phase 2 is complete, so a waiting
// task wakes once, not once per phase. The packets, the result and the virtual times are the
// two-phase schedule's.
Status CollectiveNetwork::short_sum(std::span<const double> in, std::span<double> out) {
  const int guard = fp::guard_bits(tree_.tasks());
  const std::size_t bytes = in.size_bytes();
  const std::size_t parts = fixed_packets(in.size());
  const Seq exponents = next_seq_, fixed = next_seq_ + 1;
  next_seq_ += 1 + parts;
  const auto emax = std::span<std::uint32_t>(emax_).first(in.size());
  std::memcpy(tree_.deferred_line(route_, tree_.rank()).data(), in.data(), bytes);
  Status status = Status::ok;
  bool have_emax = false;
  {
    const TreeEndpoint::InjectBurst burst(tree_);
    // Every earlier result was received, so the window has room for all the sequence numbers.
    if (tree_.inject_with(route_, exponents, fp::kExponentOp,
                          [&](PacketSpan p) { fp::encode_exponents(in, p); }) != InjectStatus::ok)
      throw std::logic_error("collective network: no room for a sum's first packet");
    tree_.skip(route_, fixed + parts - 1);
    if (tree_.result_ready(route_, exponents) && tree_.claim(route_, exponents)) {
      status = receive_one(exponents, [&](ConstPacketSpan p) { fp::decode_exponents(p, emax); });
      have_emax = true;
      std::array<double, fp::kExponentsPerPacket> values;
      const auto mine = std::span(values).first(in.size());
      for (torus_emu::Rank r = 0; r < static_cast<torus_emu::Rank>(tree_.tasks()); ++r) {
        std::memcpy(values.data(), tree_.deferred_line(route_, r).data(), bytes);
        tree_.inject_for(
            r, route_, fixed, parts, exponents, fp::kFixedOp, [&](std::size_t k, PacketSpan p) {
              fp::encode_fixed(packet_part(std::span<const double>(mine), k, fp::kFixedPerPacket),
                               emax.subspan(k * fp::kFixedPerPacket), guard, p);
            });
      }
    }
  }
  if (!have_emax)
    status = receive_one(exponents, [&](ConstPacketSpan p) { fp::decode_exponents(p, emax); });
  for (std::size_t k = 0; k < parts; ++k) {
    Status values = Status::ok;
    const Status received = receive_one(fixed + k, [&](ConstPacketSpan p) {
      values = fp::decode_fixed(p, emax.subspan(k * fp::kFixedPerPacket), guard,
                                packet_part(out, k, fp::kFixedPerPacket));
    });
    status = worst(worst(status, received), values);
  }
  return status;
}

Status CollectiveNetwork::extremum(std::span<const double> in, std::span<double> out, bool max) {
  if (in.size() != out.size())
    throw std::invalid_argument("allreduce: input and output sizes differ");
  const Op op{max ? AluOp::max : AluOp::min, Lane::i64};
  Status status = Status::ok;
  stream((in.size() + fp::kKeysPerPacket - 1) / fp::kKeysPerPacket,
         [&](Seq seq, std::size_t k) {
           return tree_.inject_with(route_, seq, op, [&](PacketSpan packet) {
             fp::encode_keys(packet_part(in, k, fp::kKeysPerPacket), max, packet);
           }) == InjectStatus::ok;
         },
         [&](Seq seq, std::size_t k) {
           const auto r =
               tree_.receive_with(route_, seq, [&](ConstPacketSpan packet, const Result&) {
                 status = worst(
                     status, fp::decode_keys(packet, max, packet_part(out, k, fp::kKeysPerPacket)));
               });
           if (r) status = worst(status, r->status);
           return r.has_value();
         });
  return status;
}

Status CollectiveNetwork::allreduce_max(std::span<const double> in, std::span<double> out) {
  return extremum(in, out, true);
}

Status CollectiveNetwork::allreduce_min(std::span<const double> in, std::span<double> out) {
  return extremum(in, out, false);
}

}  // namespace bgl::collective_net_emu
