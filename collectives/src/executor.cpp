#include "bgl/collectives/executor.hpp"

#include <algorithm>
#include <array>
#include <climits>
#include <cstdint>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>

#include "bgl/collective_net_emu/collective_network.hpp"
#include "bgl/collectives/reduce_ops.hpp"
#include "bgl/job_runtime/log.hpp"
#include "tree_ops.hpp"

namespace bgl::collectives {

std::optional<collective_net_emu::Op> tree_integer_op(DataType t, ReduceOp op) {
  collective_net_emu::Lane lane;
  switch (t) {
    case DataType::i32:
      lane = collective_net_emu::Lane::i32;
      break;
    case DataType::u32:
      lane = collective_net_emu::Lane::u32;
      break;
    case DataType::i64:
      lane = collective_net_emu::Lane::i64;
      break;
    case DataType::u64:
      lane = collective_net_emu::Lane::u64;
      break;
    default:
      return std::nullopt;
  }
  switch (op) {
    case ReduceOp::sum:
      return collective_net_emu::Op{collective_net_emu::AluOp::add, lane};
    case ReduceOp::max:
      return collective_net_emu::Op{collective_net_emu::AluOp::max, lane};
    case ReduceOp::min:
      return collective_net_emu::Op{collective_net_emu::AluOp::min, lane};
    case ReduceOp::band:
      return collective_net_emu::Op{collective_net_emu::AluOp::bit_and, lane};
    case ReduceOp::bor:
      return collective_net_emu::Op{collective_net_emu::AluOp::bit_or, lane};
    case ReduceOp::bxor:
      return collective_net_emu::Op{collective_net_emu::AluOp::bit_xor, lane};
    case ReduceOp::prod:  // the ALU has no multiplier
    case ReduceOp::land:  // logical operations need their inputs normalised to 0/1 first
    case ReduceOp::lor:
    case ReduceOp::lxor:
      break;
  }
  return std::nullopt;
}

bool tree_double_op(DataType t, ReduceOp op) {
  return t == DataType::f64 && (op == ReduceOp::sum || op == ReduceOp::max || op == ReduceOp::min);
}

// ---- Executor

std::size_t Executor::KeyHash::operator()(const Key& k) const {
  std::uint64_t h = k.context * 0x9E3779B97F4A7C15ull;
  h ^= (h >> 29) + k.seq * 0xBF58476D1CE4E5B9ull;
  h ^= (h >> 31) + k.source * 0x94D049BB133111EBull;
  h ^= (h >> 30) + k.tag;
  return static_cast<std::size_t>(h);
}

namespace {
struct WireHeader {
  std::uint32_t context, seq, tag;
};
// What every deposit-bit line packet starts with; the packet header's word is the part's size.
struct LineHeader {
  std::uint32_t context, seq, tag, offset;
};
constexpr std::size_t kLineData = packet_layer::kMaxPayloadBytes - sizeof(LineHeader);

std::string describe(const Executor::Key& k) {
  return "from rank " + std::to_string(k.source) + " (context " + std::to_string(k.context) +
         ", collective " + std::to_string(k.seq) + ", tag " + std::to_string(k.tag) + ")";
}
}  // namespace

Executor::Executor(message_layer::MessageLayer& layer, collective_net_emu::CollectiveNetwork* net)
    : layer_(layer), net_(net) {
  layer_.register_handler(kHandler, &Executor::arrival, this);
  layer_.register_packet_handler(kLineDispatch, &Executor::line_packet, this);
  // Virtual time: tree and global-interrupt steps move the same clock as the task's packets.
  // Conservatively synchronised, each network's completions are published with the clocks' bounds.
  if (net_) net_->set_clock(layer_.endpoint().clock(), layer_.endpoint().machine().horizon());
  // While a tree or global-interrupt step waits, the message layer keeps moving: a peer may need
  // this task's packets (rendezvous data of a send started before the collective) to get there.
  set_progress(nullptr, nullptr);
}

// One copy of a line packet: into the posted receive, or kept until the receive is posted. A
// packet that contradicts its part (too short, bytes outside it, more bytes than it has) is
// discarded and counted: a peer's packet never decides what this task allocates or writes beyond
// what it announced and this task agreed to.
void Executor::line_packet(void* self, const packet_layer::PacketHeader& h,
                           std::span<const std::byte> payload) {
  auto& e = *static_cast<Executor*>(self);
  LineHeader lh{};
  if (payload.size() < sizeof lh)
    return e.malformed(h, "line packet of " + std::to_string(payload.size()) + " bytes");
  std::memcpy(&lh, payload.data(), sizeof lh);
  const auto data = payload.subspan(sizeof lh);
  const Key key{lh.context, lh.seq, h.source_rank(), lh.tag};
  const std::size_t total = h.word;
  if (lh.offset > total || data.size() > total - lh.offset)
    return e.malformed(h, "line packet " + describe(key) + " with bytes " +
                              std::to_string(lh.offset) + ".." +
                              std::to_string(lh.offset + data.size()) + " of a " +
                              std::to_string(total) + "-byte part");
  Slot* found = e.slots_.find(key);
  if (!found) {
    Slot s;
    s.line = true;
    s.bytes = total;
    found = &e.slots_.insert(key, std::move(s));
  }
  Slot& s = *found;
  const std::size_t expected_total = s.posted ? s.buffer.size() : s.bytes;
  if ((!s.posted && !s.line) || total != expected_total)
    throw std::runtime_error("collectives: " + std::to_string(total) + "-byte line part " +
                             describe(key) + " for a " + std::to_string(expected_total) + "-byte " +
                             (s.line ? "receive" : "message"));
  if (data.size() > total - s.got)
    return e.malformed(h, "line packet " + describe(key) + " beyond the " + std::to_string(total) +
                              " bytes of its part");
  s.line = true;
  if (!s.posted) {
    s.early.insert(s.early.end(), data.begin(), data.end());
    s.early_parts.emplace_back(lh.offset, static_cast<std::uint32_t>(data.size()));
    s.got += data.size();
    return;
  }
  if (!data.empty()) std::memcpy(s.buffer.data() + lh.offset, data.data(), data.size());
  s.got += data.size();
  if (s.got != total) return;
  const message_layer::RecvDone done = s.done;
  void* context = s.context;
  e.slots_.erase(key);
  done(context, key.source, total);
}

void Executor::malformed(const packet_layer::PacketHeader& h, const std::string& why) {
  ++malformed_packets_;
  malformed_log_.report(layer_.rank(), ": collectives", malformed_packets_, [&] {
    spdlog::error("rank {}: collectives: discarding a packet from rank {}: {}", layer_.rank(),
                  h.source_rank(), why);
  });
}

void Executor::set_progress(ProgressRound round, void* context, ProgressRound meanwhile) {
  progress_round_ = round;
  progress_context_ = context;
  if (!net_) return;
  collective_net_emu::Meanwhile m;
  m.bell = &layer_.endpoint().doorbell();
  if (round) {
    m.round = meanwhile ? meanwhile : round;
    m.context = context;
  } else {
    m.round = [](void* l) { return static_cast<message_layer::MessageLayer*>(l)->advance(); };
    m.context = &layer_;
  }
  // The device's sends go through the same layer, so its state answers for both.
  m.unannounced = [](const void* l) {
    return !static_cast<const message_layer::MessageLayer*>(l)->idle();
  };
  m.unannounced_context = &layer_;
  if (layer_.endpoint().synchronised()) {
    m.park = [](void* ep, std::uint64_t event) {
      static_cast<packet_layer::Endpoint*>(ep)->park_for_event(event);
    };
    m.park_context = &layer_.endpoint();
  }
  net_->set_meanwhile(m);
}

void Executor::progress(bool busy, std::uint32_t awaited) {
  if (awaited != awaited_) layer_.expect_counted(awaited_ = awaited);
  if (progress_round_)
    progress_round_(progress_context_);
  else if (!layer_.advance() && !busy)
    layer_.wait();
}

void Executor::end_awaiting() {
  if (awaited_ != 1) layer_.expect_counted(awaited_ = 1);
}

void Executor::flush() {
  while (!layer_.flushed())
    progress();
}

// The message layer may outlive the executor (a C session whose collectives ended): packets for
// it must not reach a destroyed object.
Executor::~Executor() {
  if (net_) net_->set_meanwhile({});
  layer_.register_handler(kHandler, nullptr, nullptr);
  layer_.register_packet_handler(kLineDispatch, nullptr, nullptr);
}

std::size_t Executor::unexpected() const {
  std::size_t n = 0;
  slots_.for_each([&n](const Key&, const Slot& s) { n += !s.posted; });
  return n;
}

message_layer::RecvTarget Executor::arrival(void* self, const message_layer::Arrival& a) {
  auto& e = *static_cast<Executor*>(self);
  WireHeader h{};
  if (a.header.size() != sizeof h)
    throw std::runtime_error("collectives: message with a " + std::to_string(a.header.size()) +
                             "-byte header from rank " + std::to_string(a.source) +
                             " on the collectives handler");
  std::memcpy(&h, a.header.data(), sizeof h);
  const Key key{h.context, h.seq, a.source, h.tag};
  Slot* found = e.slots_.find(key);
  if (!found) {
    Slot s;
    s.handle = a.handle;
    s.bytes = a.bytes;
    e.slots_.insert(key, std::move(s));
    return message_layer::RecvTarget::later();
  }
  if (found->line)
    throw std::runtime_error("collectives: message " + describe(key) +
                             " for a receive that line packets already feed");
  const std::span<std::byte> buffer = found->buffer;
  const message_layer::RecvDone done = found->done;
  void* const context = found->context;
  e.slots_.erase(key);
  if (buffer.size() != a.bytes)
    throw std::runtime_error("collectives: " + std::to_string(a.bytes) +
                             "-byte message from rank " + std::to_string(a.source) + " (context " +
                             std::to_string(h.context) + ", collective " + std::to_string(h.seq) +
                             ", tag " + std::to_string(h.tag) + ") for a " +
                             std::to_string(buffer.size()) + "-byte receive");
  return message_layer::RecvTarget::into(buffer, done, context);
}

void Executor::expect(const Key& key, std::span<std::byte> buffer, message_layer::RecvDone done,
                      void* context) {
  Slot* found = slots_.find(key);
  if (!found) {
    Slot s;
    s.posted = true;
    s.buffer = buffer;
    s.done = done;
    s.context = context;
    slots_.insert(key, std::move(s));
    return;
  }
  if (found->posted)
    throw std::logic_error("collectives: two receives posted for source " +
                           std::to_string(key.source) + " tag " + std::to_string(key.tag));
  if (found->line) {
    Slot& s = *found;
    if (s.bytes != buffer.size())
      throw std::runtime_error("collectives: " + std::to_string(s.bytes) + "-byte line part " +
                               describe(key) + " for a " + std::to_string(buffer.size()) +
                               "-byte receive");
    // What arrived, at its offsets; the packets still to come go straight to the buffer.
    std::size_t at = 0;
    for (const auto& [offset, n] : s.early_parts) {
      if (n) std::memcpy(buffer.data() + offset, s.early.data() + at, n);
      at += n;
    }
    if (s.got == s.bytes) {
      slots_.erase(key);
      done(context, key.source, buffer.size());
      return;
    }
    s.posted = true;
    s.buffer = buffer;
    s.done = done;
    s.context = context;
    s.early = {};
    s.early_parts = {};
    return;
  }
  const Slot s = std::move(*found);
  slots_.erase(key);
  if (s.bytes != buffer.size())
    throw std::runtime_error("collectives: " + std::to_string(s.bytes) +
                             "-byte message from rank " + std::to_string(key.source) + " (tag " +
                             std::to_string(key.tag) + ") for a " + std::to_string(buffer.size()) +
                             "-byte receive");
  layer_.accept(s.handle, message_layer::RecvTarget::into(buffer, done, context));
}

// ---- Communicator

Communicator::Communicator(Executor& executor, Topology topology, int size, int rank,
                           std::uint32_t context)
    : executor_(executor),
      topology_(std::move(topology)),
      size_(size),
      rank_(rank),
      context_(context) {
  if (size < 1 || rank < 0 || rank >= size)
    throw std::invalid_argument("collectives: rank " + std::to_string(rank) +
                                " outside a communicator of " + std::to_string(size));
  if (!topology_.world_ranks.empty() &&
      topology_.world_ranks.size() != static_cast<std::size_t>(size))
    throw std::invalid_argument("collectives: " + std::to_string(topology_.world_ranks.size()) +
                                " world ranks for a communicator of " + std::to_string(size));
}

namespace detail {

// One collective call's execution. A communicator keeps one and reuses its tables, so that a call
// allocates nothing once the communicator has run a program as large before.
class Run {
 public:
  void go(Communicator& c, const Program& prog, const Params& x, Buffers b,
          std::span<std::byte> scratch, std::uint32_t context, std::uint32_t seq) {
    c_ = &c;
    prog_ = &prog;
    x_ = &x;
    b_ = b;
    scratch_ = scratch;
    context_ = context;
    seq_ = seq;
    ready_.clear();
    completed_.clear();
    deferred_.clear();
    sends_.clear();
    recvs_.clear();
    lines_.clear();
    done_ = 0;
    active_ = 0;
    open_recvs_ = 0;
    unstarted_senders_ = 0;
    const std::size_t n = prog_->size();
    pending_.assign(n, 0);
    outstanding_.assign(n, 0);
    // Dependents in one array (step d's are dependents_[first_dependent_[d] ..
    // first_dependent_[d + 1])), not a vector per step.
    first_dependent_.assign(n + 1, 0);
    for (StepId id = 0; id < n; ++id)
      for (StepId d : prog_->step(id).deps) {
        if (d >= id) throw std::invalid_argument("collectives: step depends on a later step");
        ++first_dependent_[d + 1];
      }
    for (StepId id = 0; id < n; ++id)
      first_dependent_[id + 1] += first_dependent_[id];
    dependents_.resize(first_dependent_[n]);
    fill_.assign(first_dependent_.begin(), first_dependent_.end() - 1);
    std::size_t messages = 0, line_steps = 0;
    for (StepId id = 0; id < n; ++id) {
      const Step& s = prog_->step(id);
      for (StepId d : s.deps) {
        ++pending_[id];
        dependents_[fill_[d]++] = id;
      }
      if (s.kind == StepKind::send) ++messages;
      if (s.kind == StepKind::line_send) {
        messages += s.peers.size();
        ++line_steps;
      }
      if (sends_or_waits(s.kind)) ++unstarted_senders_;
      if (pending_[id] == 0) ready_.push_back(id);
    }
    // However the run ends, the task's later waits wake at every packet again.
    struct EndAwaiting {
      Executor& e;
      ~EndAwaiting() { e.end_awaiting(); }
    } end_awaiting{c_->executor()};
    sends_.reserve(messages);  // SendMessages must not move once posted
    recvs_.reserve(n);
    lines_.reserve(line_steps);
    while (done_ < n) {
      while (!ready_.empty() || !completed_.empty()) {
        starting_.swap(ready_);  // both keep their capacity
        for (StepId id : starting_)
          start(id);
        starting_.clear();
        finish_completed();
      }
      if (active_ == 0 && !deferred_.empty()) {
        const StepId id = deferred_.front();
        deferred_.erase(deferred_.begin());
        // A hardware step waits on the collective network and serves the message layer only
        // between its sleeps (collective_net_emu::Meanwhile). A send's done() means only that its
        // buffer may be reused: its last packets (and acks or fins this task owes) may still wait
        // in the injection FIFOs. A peer still in an earlier collective needs them to get here:
        // hand everything to the network first rather than on the next wake-up.
        c_->executor().flush();
        const std::uint64_t start = trace() ? trace()->now() : 0;
        hardware(id);
        if (trace()) [[unlikely]]
          trace_local(id, start);
        complete(id);
        finish_completed();
        continue;
      }
      if (done_ == n) break;
      c_->executor().progress(pump_lines(), awaited());
      finish_completed();
    }
  }

 private:
  struct SendRec {
    message_layer::SendMessage m;
    WireHeader h;
    Run* run;
    StepId id;
  };
  struct RecvRec {
    Run* run;
    StepId id;
  };
  // A deposit-bit line being injected: `data` from `offset` on is still to go.
  struct LineRec {
    StepId id;
    packet_layer::PacketSpec spec;
    std::span<const std::byte> data;
    std::size_t offset;
    bool first;  // nothing injected yet (a 0-byte part still sends one packet)
    Tag tag;
  };

  std::span<std::byte> region(const Region& g) {
    switch (g.buffer) {
      case Buffer::send:
        throw std::logic_error("collectives: write to the send buffer");
      case Buffer::recv:
        return b_.recv.subspan(g.offset, g.bytes);
      case Buffer::scratch:
        return scratch_.subspan(g.offset, g.bytes);
    }
    return {};
  }
  std::span<const std::byte> cregion(const Region& g) {
    if (g.buffer == Buffer::send) return b_.send.subspan(g.offset, g.bytes);
    return region(g);
  }

  // What an idle round may sleep for: when nothing is left to do but receive (every step that
  // sends or waits has started), nothing can happen here before all open receives are in.
  // Otherwise the next arrival may let a step start, so any packet wakes.
  std::uint32_t awaited() const {
    return unstarted_senders_ == 0 && open_recvs_ > 1 ? open_recvs_ : 1;
  }
  // Steps a peer may wait for: they must run as soon as their dependencies allow.
  static bool sends_or_waits(StepKind k) {
    return k != StepKind::recv && k != StepKind::copy && k != StepKind::reduce;
  }

  std::uint32_t world(int r) const {
    return static_cast<std::uint32_t>(c_->topology().world_rank(r));
  }

  void post(int peer, const Region& src, Tag tag, StepId id) {
    sends_.push_back({});
    SendRec& s = sends_.back();
    s.h = {context_, seq_, tag};
    s.run = this;
    s.id = id;
    s.m.dest = world(peer);
    s.m.handler = kHandler;
    s.m.header = std::as_bytes(std::span(&s.h, 1));
    s.m.data.buffer = cregion(src);
    s.m.done = &Run::send_done;
    s.m.context = &s;
    s.m.counted = true;  // the receiver only takes it in (Executor::arrival)
    ++outstanding_[id];
    c_->executor().layer().post(s.m);
  }

  // The packet spec of a real deposit-bit line for step `s`, when its receivers are exactly the
  // nodes met along the line from this node (one task each, all in the same FIFO group, as
  // deposit copies land in the same group on every node); nullopt otherwise.
  std::optional<packet_layer::PacketSpec> line_spec(const Step& s) {
    if (!c_->executor().line_multicast() || s.peers.empty() || s.src.bytes > UINT32_MAX)
      return std::nullopt;
    packet_layer::Endpoint& ep = c_->executor().layer().endpoint();
    const torus_emu::Shape& shape = ep.machine().shape();
    const packet_layer::Destination last = ep.destination_of(world(s.peers.back()));
    torus_emu::NodeId at = ep.node();
    for (int q : s.peers) {
      const auto next = shape.neighbour(at, s.dir);
      const packet_layer::Destination d = ep.destination_of(world(q));
      if (!next || d.node != *next || d.group != last.group || d.node == ep.node())
        return std::nullopt;
      at = *next;
    }
    packet_layer::PacketSpec spec;
    spec.dest = last;
    spec.dispatch = kLineDispatch;
    spec.word = static_cast<std::uint32_t>(s.src.bytes);
    spec.deposit_line = s.dir;
    return spec;
  }

  // Injects what the pending lines still have to send, as far as the injection FIFOs take it;
  // completes the lines that are out. True when anything was injected.
  bool pump_lines() {
    bool progress = false;
    packet_layer::Endpoint& ep = c_->executor().layer().endpoint();
    for (std::size_t i = 0; i < lines_.size();) {
      LineRec& l = lines_[i];
      // One injection FIFO per direction, as BG/L's lines leave through their direction's link.
      const int fifo = static_cast<int>(torus_emu::index_of(*l.spec.deposit_line));
      while (l.first || l.offset < l.data.size()) {
        const std::size_t n = std::min(kLineData, l.data.size() - l.offset);
        const LineHeader h{context_, seq_, l.tag, static_cast<std::uint32_t>(l.offset)};
        if (ep.inject(fifo, l.spec, std::as_bytes(std::span(&h, 1)), l.data.subspan(l.offset, n)) ==
            packet_layer::InjectStatus::full)
          break;
        l.offset += n;
        l.first = false;
        progress = true;
      }
      if (l.first || l.offset < l.data.size()) {
        ++i;
        continue;
      }
      complete(l.id);
      lines_[i] = lines_.back();
      lines_.pop_back();
    }
    return progress;
  }

  static void send_done(message_layer::SendMessage& m) {
    auto* s = static_cast<SendRec*>(m.context);
    s->run->sub_done(s->id);
  }
  static void recv_done(void* ctx, std::uint32_t, std::size_t) {
    auto* r = static_cast<RecvRec*>(ctx);
    r->run->sub_done(r->id);
  }
  void sub_done(StepId id) {
    if (--outstanding_[id] == 0) complete(id);
  }
  void complete(StepId id) { completed_.push_back(id); }
  void finish_completed() {
    while (!completed_.empty()) {
      finishing_.swap(completed_);
      for (StepId id : finishing_) {
        ++done_;
        const StepKind k = prog_->step(id).kind;
        if (networked(k) && trace()) [[unlikely]]
          trace_step(id, false);
        if (k == StepKind::send || k == StepKind::recv || k == StepKind::line_send) --active_;
        if (k == StepKind::recv) --open_recvs_;
        for (std::uint32_t i = first_dependent_[id]; i != first_dependent_[id + 1]; ++i)
          if (const StepId d = dependents_[i]; --pending_[d] == 0) ready_.push_back(d);
      }
      finishing_.clear();
    }
  }

  // bglrun --trace: steps that wait for the network are spans from start to completion (they
  // overlap, so they are matched by an id: this run's sequence number and the step's); local
  // and collective-network steps are spans of the task's own timeline.
  job_runtime::Trace* trace() { return c_->executor().layer().endpoint().trace(); }
  std::uint64_t trace_id(StepId id) const {
    return std::uint64_t{context_} << 48 ^ std::uint64_t{seq_} << 24 ^ id;
  }
  [[gnu::cold, gnu::noinline]] void trace_step(StepId id, bool begin) {
    const Step& s = prog_->step(id);
    job_runtime::Trace& t = *trace();
    const auto name = t.intern(to_string(s.kind));
    if (!begin) return t.end(job_runtime::TraceCategory::step, name, trace_id(id));
    const auto peer = s.kind == StepKind::line_send || s.peer < 0
                          ? std::int64_t{-1}
                          : static_cast<std::int64_t>(world(s.peer));
    t.begin(job_runtime::TraceCategory::step, name, trace_id(id),
            {peer, s.kind == StepKind::recv ? s.dst.bytes : s.src.bytes});
  }
  [[gnu::cold, gnu::noinline]] void trace_local(StepId id, std::uint64_t start) {
    const Step& s = prog_->step(id);
    trace()->span(job_runtime::TraceCategory::step, trace()->intern(to_string(s.kind)), start,
                  {-1, s.src.bytes});
  }
  static bool networked(StepKind k) {
    return k == StepKind::send || k == StepKind::recv || k == StepKind::line_send;
  }

  void start(StepId id) {
    const Step& s = prog_->step(id);
    if (sends_or_waits(s.kind)) --unstarted_senders_;
    if (networked(s.kind) && trace()) [[unlikely]]
      trace_step(id, true);
    switch (s.kind) {
      case StepKind::send:
        ++active_;
        post(s.peer, s.src, s.tag, id);
        break;
      case StepKind::line_send:
        ++active_;
        if (auto spec = line_spec(s)) {
          lines_.push_back({id, *spec, cregion(s.src), 0, true, s.tag});
          pump_lines();
          break;
        }
        for (int q : s.peers)
          post(q, s.src, s.tag, id);
        if (s.peers.empty()) complete(id);
        break;
      case StepKind::recv: {
        ++active_;
        ++open_recvs_;
        recvs_.push_back({this, id});
        ++outstanding_[id];
        c_->executor().expect({context_, seq_, world(s.peer), s.tag}, region(s.dst),
                              &Run::recv_done, &recvs_.back());
        break;
      }
      case StepKind::copy: {
        const auto src = cregion(s.src);
        if (!src.empty()) std::memcpy(region(s.dst).data(), src.data(), src.size());
        complete(id);
        break;
      }
      case StepKind::reduce: {
        const std::uint64_t begun = trace() ? trace()->now() : 0;
        apply_reduce(x_->dtype, x_->reduce_op, region(s.dst), cregion(s.src));
        if (trace()) [[unlikely]]
          trace_local(id, begun);
        complete(id);
        break;
      }
      default:
        deferred_.push_back(id);  // hardware steps run when nothing else is in flight
        break;
    }
  }

  void hardware(StepId id) {
    const Step& s = prog_->step(id);
    collective_net_emu::CollectiveNetwork* net = c_->executor().network();
    if (!net)
      throw std::logic_error(
          "collectives: a collective-network step, but the executor has no collective network");
    const int me = c_->rank();
    switch (s.kind) {
      case StepKind::gi_barrier:
        net->barrier();
        return;
      case StepKind::tree_bcast: {
        auto dst = region(s.dst);
        if (me == s.peer && !(s.src == s.dst)) {
          const auto src = cregion(s.src);
          std::memcpy(dst.data(), src.data(), src.size());
        }
        net->broadcast(world(s.peer), dst);
        return;
      }
      case StepKind::tree_allgather:
        tree_allgather(*net, s);
        return;
      case StepKind::tree_reduce:
      case StepKind::tree_allreduce: {
        const auto in = cregion(s.src);
        const bool all = s.kind == StepKind::tree_allreduce;
        const bool keep = all || me == s.peer;
        std::span<std::byte> out = keep ? region(s.dst) : std::span<std::byte>{};
        if (auto op = tree_integer_op(x_->dtype, x_->reduce_op)) {
          if (all)
            net->allreduce(*op, in, out);
          else
            net->reduce(world(s.peer), *op, in, out);
          return;
        }
        if (!tree_double_op(x_->dtype, x_->reduce_op))
          throw std::logic_error("collectives: the collective network cannot reduce this type");
        // Doubles: every task takes part in the two-phase allreduce; non-roots discard.
        std::vector<std::byte> tmp;
        if (!keep) {
          tmp.resize(in.size());
          out = tmp;
        }
        auto din = std::span(reinterpret_cast<const double*>(in.data()), in.size() / 8);
        auto dout = std::span(reinterpret_cast<double*>(out.data()), out.size() / 8);
        std::vector<double> ain, aout;
        // The FP routines want aligned doubles; user buffers may be misaligned.
        if (reinterpret_cast<std::uintptr_t>(in.data()) % alignof(double) ||
            reinterpret_cast<std::uintptr_t>(out.data()) % alignof(double)) {
          ain.resize(din.size());
          aout.resize(din.size());
          std::memcpy(ain.data(), in.data(), in.size());
          din = ain;
          dout = aout;
        }
        switch (x_->reduce_op) {
          case ReduceOp::sum:
            net->allreduce_sum(din, dout);
            break;
          case ReduceOp::max:
            net->allreduce_max(din, dout);
            break;
          default:
            net->allreduce_min(din, dout);
            break;
        }
        if (!aout.empty()) std::memcpy(out.data(), aout.data(), out.size());
        return;
      }
      default:
        return;
    }
  }

  // This rank's block at its place in zeros, OR-combined with everyone's on the tree: the ALU
  // assembles the result in one pass. Whole 64-bit lanes, so the buffer is padded.
  void tree_allgather(collective_net_emu::CollectiveNetwork& net, const Step& s) {
    const auto in = cregion(s.src);
    const auto out = region(s.dst);
    const std::size_t lanes = (out.size() + 7) / 8;
    gather_.resize(2 * lanes);
    std::fill_n(gather_.begin(), lanes, 0);  // the combined half is written whole
    const auto staged = std::as_writable_bytes(std::span(gather_).first(lanes));
    const auto combined = std::as_writable_bytes(std::span(gather_).last(lanes));
    if (!in.empty()) std::memcpy(staged.data() + x_->displ(c_->rank()), in.data(), in.size());
    net.allreduce(
        collective_net_emu::Op{collective_net_emu::AluOp::bit_or, collective_net_emu::Lane::u64},
        staged, combined);
    if (!out.empty()) std::memcpy(out.data(), combined.data(), out.size());
  }

  Communicator* c_ = nullptr;
  const Program* prog_ = nullptr;
  const Params* x_ = nullptr;
  Buffers b_{};
  std::span<std::byte> scratch_;
  std::uint32_t context_ = 0, seq_ = 0;
  std::vector<std::uint32_t> pending_, outstanding_;
  std::vector<std::uint32_t> first_dependent_, fill_;
  std::vector<StepId> dependents_;
  std::vector<StepId> ready_, completed_, deferred_;
  std::vector<StepId> starting_, finishing_;  // the batch being started or finished
  std::vector<SendRec> sends_;
  std::vector<RecvRec> recvs_;
  std::vector<LineRec> lines_;
  std::vector<std::uint64_t> gather_;  // tree_allgather's staging, kept between calls
  std::size_t done_ = 0;
  int active_ = 0;
  std::uint32_t open_recvs_ = 0;         // receives started and not complete
  std::uint32_t unstarted_senders_ = 0;  // steps with sends_or_waits() not started yet
};

}  // namespace detail

namespace {
// The root of a rooted collective, -1 for the others (for the call-site statistics).
int root_of(const Params& x) {
  return x.op == Collective::bcast || x.op == Collective::reduce ? x.root : -1;
}
}  // namespace

Communicator::~Communicator() = default;
Communicator::Communicator(Communicator&&) noexcept = default;

void Communicator::run(const Program& program, const Params& params, Buffers buffers) {
  job_runtime::CallSites* sites = executor_.layer().endpoint().call_sites();
  if (!sites) [[likely]] {
    execute(program, params, buffers);
    return;
  }
  const std::uintptr_t site = job_runtime::CallSites::program_caller(
      reinterpret_cast<std::uintptr_t>(__builtin_return_address(0)));
  const auto start = sites->start();
  execute(program, params, buffers);
  const std::string_view algorithm = program.algorithm().empty() ? "program" : program.algorithm();
  sites->record({site, to_string(params.op), algorithm, "the caller's program", size_,
                 params.bytes(), root_of(params)},
                start);
}

void Communicator::execute(const Program& program, const Params& params, Buffers buffers) {
  if (buffers.send.size() < params.send_bytes(rank_))
    throw std::invalid_argument("collectives: " + std::string(to_string(params.op)) +
                                " needs a send buffer of " +
                                std::to_string(params.send_bytes(rank_)) + " bytes, got " +
                                std::to_string(buffers.send.size()));
  if (buffers.recv.size() < params.recv_bytes(rank_))
    throw std::invalid_argument("collectives: " + std::string(to_string(params.op)) +
                                " needs a receive buffer of " +
                                std::to_string(params.recv_bytes(rank_)) + " bytes, got " +
                                std::to_string(buffers.recv.size()));
  if (program.rank() != rank_)
    throw std::invalid_argument("collectives: program for rank " + std::to_string(program.rank()) +
                                " run on rank " + std::to_string(rank_));
  if (scratch_.size() < program.scratch_bytes) scratch_.resize(program.scratch_bytes);
  // The communicator's run, taken while in use: a call made from inside this one (a progress
  // callback) finds none and makes its own.
  std::unique_ptr<detail::Run> run = run_ ? std::move(run_) : std::make_unique<detail::Run>();
  job_runtime::Trace* trace = executor_.layer().endpoint().trace();
  const std::uint64_t start = trace ? trace->now() : 0;
  run->go(*this, program, params, buffers,
          std::span(scratch_).first(static_cast<std::size_t>(program.scratch_bytes)), context_,
          seq_++);
  run_ = std::move(run);
  // bglrun --trace: the whole run as one span around its steps.
  if (trace) [[unlikely]]
    trace->span(job_runtime::TraceCategory::collective, trace->intern(to_string(params.op)), start,
                {-1, params.bytes()});
}

}  // namespace bgl::collectives
