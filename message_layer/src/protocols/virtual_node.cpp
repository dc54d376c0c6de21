// Virtual-node protocol, between the two tasks of a node in virtual-node mode: a request
// [First][user header][VnSource] in the sender's ordered stream (word = the sender's slot) says
// where the data are. A message that fits one of the node's shared cells is copied there by the
// sender, which is then done (no slot, no fin); the receiver copies it out and frees the cell.
// When every cell is taken, one within the eager limit goes as an eager message through the
// node's virtual FIFO. Larger ones (and the rest) the receiver copies straight from the sender's
// memory (process_vm_readv), then sends the fin. Where the kernel refuses the copy, the receiver
// asks for the data as in a rendezvous (ack, data, fin) through the node's virtual FIFO.
#include <sys/prctl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "../data_copy.hpp"
#include "bgl/job_runtime/log.hpp"
#include "protocol_ops.hpp"

namespace bgl::message_layer {
namespace protocols {
namespace {

using P = virtual_time::Params;

void check_post(const Engine& e, const SendMessage& m, std::size_t) {
  if (!e.sibling_ || m.dest != *e.sibling_ || !m.data.iov.empty())
    throw std::invalid_argument(
        "the virtual-node protocol needs a contiguous message to this node's other "
        "task in virtual-node mode");
}

// The receiver reads this task's memory. Where Yama restricts ptrace to descendants
// (kernel.yama.ptrace_scope = 1, the default of several distributions) only a task this one names
// may do so: name the node's other task. Without Yama the call fails harmlessly (EINVAL) and
// ordinary same-user permission applies.
void allow_sibling_reads(Engine& e, Rank sibling) {
  const std::int32_t pid = e.ep_.machine().job().task(sibling).pid;
  if (pid <= 0) return;  // not attached yet: try again with the next message
  e.vn_reader_allowed_ = true;
  if (::prctl(PR_SET_PTRACER, static_cast<unsigned long>(pid), 0, 0, 0) != 0 && errno != EINVAL)
    spdlog::debug("rank {}: PR_SET_PTRACER for rank {} failed: {}", e.rank(), sibling,
                  std::strerror(errno));
}

// A memory copy by the processor at the streaming rate.
void charge_copy(Engine& e, std::uint64_t bytes) {
  if (e.vt_)
    e.ep_.clock().charge(
        virtual_time::Params::ticks(static_cast<double>(bytes) / e.vt_->copy_bytes_per_cycle));
}

// A free outgoing cell (the receiver frees them in any order), or null.
packet_layer::VirtualCell* free_cell(Engine& e, std::uint32_t& index) {
  for (std::size_t i = 0; i < packet_layer::kVirtualCells; ++i) {
    index = static_cast<std::uint32_t>((e.vn_next_cell_ + i) % packet_layer::kVirtualCells);
    packet_layer::VirtualCell& c = e.vn_out_cells_->cell[index];
    if (c.full.load(std::memory_order_acquire) == 0) return &c;
  }
  return nullptr;
}

// The message into a shared cell and the request after it: done at injection. False: no cell
// free, send it the other way.
bool send_in_cell(Engine& e, SendMessage& m, Engine::Step& step) {
  std::uint32_t index = 0;
  packet_layer::VirtualCell* cell = free_cell(e, index);
  if (!cell) return false;
  auto& s = m.state;
  const std::size_t bytes = m.data.buffer.size();
  if (bytes) std::memcpy(cell->data.data(), m.data.buffer.data(), bytes);
  // Marked before the request can be seen; the injection's release store publishes both.
  cell->full.store(1, std::memory_order_relaxed);
  const wire::VnSource source{0, e.pid_, index + 1};
  const Engine::DestState& d = e.dests_[m.dest];
  std::byte prefix[packet_layer::kMaxPayloadBytes];
  const packet_layer::PacketSpec spec{.dest = d.where,
                                      .dispatch = wire::kVnRts,
                                      .word = 0,
                                      .vt_cycles = e.cost(&P::vn_send_cycles),
                                      .vt_origin = s.vt_posted};
  if (e.ep_.inject(d.fifo, spec, e.first_prefix(m, prefix), std::as_bytes(std::span(&source, 1))) ==
      packet_layer::InjectStatus::full) {
    cell->full.store(0, std::memory_order_relaxed);
    step = Engine::Step::blocked;
    return true;
  }
  e.vn_next_cell_ = (index + 1) % packet_layer::kVirtualCells;
  charge_copy(e, bytes);
  ++s.packets;
  s.phase = Engine::kPhaseDoneAtInjection;
  step = Engine::Step::finished;
  return true;
}

// The request says where the data are (the pid is cached: getpid() is a syscall).
Engine::Step send(Engine& e, SendMessage& m, Engine::DestState& d) {
  // A sender that wants to hear of the receiver's completion needs the fin: not through a cell.
  const std::size_t bytes = m.data.buffer.size();
  if (e.vn_out_cells_ && !m.remote_done && bytes <= packet_layer::kVirtualCellBytes) {
    Engine::Step step{};
    if (send_in_cell(e, m, step)) return step;
    // Every cell is taken (a window of small messages): a message within the eager limit streams
    // through the virtual FIFO as an eager one, done at injection like a cell's, instead of waiting
    // for the receiver's system call and fin (unless its protocol was forced).
    if (!m.protocol && !e.config().limits.forced && bytes <= e.config().limits.eager_limit) {
      m.state.protocol = Protocol::eager;
      return protocol_ops(Protocol::eager).send(e, m, d);
    }
  }
  if (!e.vn_reader_allowed_) allow_sibling_reads(e, m.dest);
  const wire::VnSource source{reinterpret_cast<std::uintptr_t>(m.data.buffer.data()), e.pid_, 0};
  return send_scout(e, m, wire::kVnRts, &P::vn_send_cycles, std::as_bytes(std::span(&source, 1)));
}

const char* check_first(const Engine& e, const packet_layer::PacketHeader& h, std::uint64_t bytes,
                        std::span<const std::byte> chunk, const Engine::SourceState&) {
  if (chunk.size() != sizeof(wire::VnSource)) return "data size disagrees with the message size";
  if (!e.sibling_ || h.source_rank() != *e.sibling_)
    return "virtual-node request from a task that is not this node's other task";
  const auto source = wire::load<wire::VnSource>(chunk);
  if (source.cell == 0) return nullptr;
  if (!e.vn_in_cells_) return "virtual-node request names a shared cell, but cells are off here";
  if (source.cell > packet_layer::kVirtualCells)
    return "virtual-node request names a shared cell that does not exist";
  if (bytes > packet_layer::kVirtualCellBytes)
    return "virtual-node request has more data than a shared cell holds";
  return nullptr;
}

// Copies a message out of its shared cell (as much as the destination takes) and frees the cell.
void copy_from_cell(Engine& e, Engine::RecvState& r) {
  packet_layer::VirtualCell& cell = e.vn_in_cells_->cell[r.vn.cell - 1];
  const std::byte* from = cell.data.data();
  std::uint64_t left = r.bytes;
  if (r.target.kind == RecvTarget::Kind::iov) {
    for (const iovec& v : r.target.iov) {
      const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(v.iov_len, left));
      if (n) std::memcpy(v.iov_base, from, n);
      from += n;
      left -= n;
    }
  } else {
    const std::size_t n =
        static_cast<std::size_t>(std::min<std::uint64_t>(r.target.buffer.size(), left));
    if (n) std::memcpy(r.target.buffer.data(), from, n);
  }
  cell.full.store(0, std::memory_order_release);
  charge_copy(e, r.bytes);
}

// Where the kernel refuses the copy (Yama's ptrace_scope, a non-dumpable sender, no such system
// call) this says so once, and every virtual-node message streams from then on.
bool copy_from_sender(Engine& e, Engine::RecvState& r) {
  if (e.vn_copy_refused_) return false;
  if (r.vn.pid != e.ep_.machine().job().task(r.source).pid) {
    spdlog::error(
        "rank {}: virtual-node message from rank {} names pid {}, not the task's; streaming it "
        "instead",
        e.rank(), r.source, r.vn.pid);
    return false;
  }
  std::array<iovec, 64> local{};
  std::size_t count = 0;
  if (r.target.kind == RecvTarget::Kind::iov) {
    if (r.target.iov.size() > local.size()) return false;  // too many pieces for one call: stream
    std::uint64_t left = r.bytes;
    for (const iovec& v : r.target.iov) {
      if (left == 0 || count == local.size()) break;
      local[count++] = {v.iov_base,
                        static_cast<std::size_t>(std::min<std::uint64_t>(v.iov_len, left))};
      left -= local[count - 1].iov_len;
    }
  } else {
    local[count++] = {r.target.buffer.data(), static_cast<std::size_t>(std::min<std::uint64_t>(
                                                  r.target.buffer.size(), r.bytes))};
  }
  const std::uint64_t want = iov_bytes({local.data(), count});
  std::uint64_t done = 0;
  // process_vm_readv may copy less than asked (large transfers): continue where it stopped.
  while (done < want) {
    std::size_t skip = done, first = 0;
    while (skip >= local[first].iov_len)
      skip -= local[first++].iov_len;
    std::array<iovec, 64> part{};
    std::size_t n = 0;
    for (std::size_t i = first; i < count; ++i, ++n)
      part[n] = local[i];
    part[0].iov_base = static_cast<std::byte*>(part[0].iov_base) + skip;
    part[0].iov_len -= skip;
    const iovec remote{reinterpret_cast<void*>(r.vn.address + done),
                       static_cast<std::size_t>(want - done)};
    const ssize_t got = process_vm_readv(r.vn.pid, part.data(), n, &remote, 1, 0);
    if (got <= 0) {
      const int error = errno;
      if (done == 0 && (error == EPERM || error == ENOSYS)) {
        e.vn_copy_refused_ = true;
        spdlog::warn(
            "rank {}: the kernel refuses process_vm_readv from rank {} ({}); virtual-node messages "
            "stream through the virtual FIFO instead (see BGL_ML_VN_COPY in docs/CONFIGURATION.md)",
            e.rank(), r.source, std::strerror(error));
      } else {
        spdlog::warn(
            "rank {}: process_vm_readv from rank {} failed after {} of {} bytes ({}); this "
            "message streams through the virtual FIFO instead",
            e.rank(), r.source, done, want, std::strerror(error));
      }
      if (done == 0) return false;
      break;
    }
    done += static_cast<std::uint64_t>(got);
  }
  return done == want;
}

// The destination is known: copy the message now, or ask for it as a rendezvous would.
void begin(Engine& e, std::uint32_t id, Engine::RecvState& r) {
  if (r.vn.cell != 0) {
    copy_from_cell(e, r);
    r.received = r.bytes;
    e.complete(id, r);
    return;
  }
  if (copy_from_sender(e, r)) {
    charge_copy(e, r.bytes);
    r.received = r.bytes;
    e.complete(id, r);
    return;
  }
  request_data(e, r, id);
}

void start(Engine& e, std::uint32_t id, Engine::RecvState& r, Engine::SourceState&,
           std::span<const std::byte> chunk) {
  r.vn = wire::load<wire::VnSource>(chunk);
  if (!r.unexpected) begin(e, id, r);
}

// A message that came through a cell owes its sender nothing.
void complete(Engine& e, std::uint32_t id, Engine::RecvState& r, Engine::SourceState& src) {
  if (r.vn.cell == 0) complete_slotted(e, id, r, src);
}

}  // namespace
}  // namespace protocols

const ProtocolOps virtual_node_protocol{
    .id = Protocol::virtual_node,
    .name = "virtual_node",
    .aliases = {"vn", "virtual-node"},
    .first_packet = wire::kVnRts,
    .first_overtakes = false,
    .slotted = true,
    .match_cost = &virtual_time::Params::vn_recv_cycles,
    .check_post = protocols::check_post,
    .send = protocols::send,
    .check_first = protocols::check_first,
    .start = protocols::start,
    .accepted = protocols::begin,
    .complete = protocols::complete,
    .send_data = protocols::send_rendezvous_data,
    .packets = {},  // the rendezvous protocol's ack, data and fin
};

}  // namespace bgl::message_layer
