#pragma once
// The collective network's region of the job segment ("collnet"): written once by the launcher
// (format), then shared by every task. Plain integers, atomics and offsets only, so that every
// process can map the segment at its own address.
//
//   RegionHeader
//   NodeEntry[nodes with tasks]         the tree: parent, input positions, ring offsets (by slot)
//   WireState[kWireChannels]            global-interrupt wires (channel 0: the barrier)
//   per combining class:
//     DownControl + DownSlot[ring]      results and broadcasts, read by every task
//     per tree node: UpSlot[ring]       contributions meeting at that node
//   per task: Inbox                     point-to-point class (to and from the tree root)
//   per combining class:
//     DeferredControl + line[task]      a task's input to a contribution another task makes for
//                                       it (TreeEndpoint::inject_for; one host)
//
// An UpSlot is a 64-byte UpSlotMeta followed by one 256-byte input per contributor of the node:
// its local tasks in t order, then its children in tree order. The contributor that completes a
// slot combines the inputs in that fixed order and writes the result straight into its position
// at the parent (or into the DownSlot at the root).
//
// A job on several hosts (H > 1) keeps an identically formatted replica of the region on every
// host; reads stay local, and every store that a task of another host must see is forwarded as a
// remote store (pkt/remote_store.hpp) to the same offset of the other replicas. It adds
//   per combining class: PartialSlot[H][2 * ring]   each host's combined contribution
//                        std::atomic<u64>[ring][H]   per down slot: the next sequence number it
//                                                    may take, as each host's readers see it
//   std::atomic<u64>[kWireChannels][H]               per wire, each host's share (below)
//   u32[H]                                           tasks per host
// and H lanes per inbox (one per sending host). See README.md, "Several hosts".
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>

#include "bgl/collective_net_emu/alu.hpp"
#include "bgl/collective_net_emu/options.hpp"
#include "bgl/job_runtime/doorbell.hpp"
#include "bgl/job_runtime/job_config.hpp"

namespace bgl::collective_net_emu::layout {

inline constexpr std::uint64_t kMagic = 0x54454e4c4c4f43ULL;  // "COLLNET"
inline constexpr std::uint32_t kVersion = 5;
inline constexpr int kCombineClasses = 2;
inline constexpr int kWireChannels = 4;
inline constexpr int kMaxLocal = 2;
inline constexpr int kMaxInputs = kMaxLocal + kMaxFanout;
inline constexpr std::uint16_t kBroadcastCode = 0xfffe;
inline constexpr std::uint16_t kMismatchCode = 0xffff;

struct RegionHeader {
  std::uint64_t magic;
  std::uint32_t version;
  std::uint32_t ntasks;
  std::uint32_t node_slots;  // nodes with tasks (NodeEntry count, indexed by job_runtime::NodeSlot)
  std::uint32_t tree_nodes;
  std::uint32_t ring;
  std::uint32_t inbox;
  std::uint32_t root_node;
  std::uint32_t root_rank;
  std::uint32_t height;
  char tree_spec[32];
  std::uint64_t total_bytes;
  std::uint64_t nodes_offset, wires_offset, down_offset, down_stride, up_offset, up_stride;
  std::uint64_t inbox_offset, inbox_stride;  // inbox of rank r, lane h: (r * hosts + h) * stride
  // Several hosts (all zero-sized with one host).
  std::uint32_t hosts;
  std::uint32_t task_hosts;  // hosts that run tasks
  std::uint64_t host_tasks_offset, host_words_offset;
  // Virtual time, barrier channel: per host and barrier parity, the latest clock its tasks
  // arrived with, stored by the host's last arrival into every host's replica.
  std::uint64_t host_vt_offset;
  std::uint64_t partials_offset, partials_stride, free_offset, free_stride;
  std::uint64_t deferred_offset, deferred_stride;
};

struct NodeEntry {
  std::int32_t parent;    // -1: the root, or not in the tree
  std::uint8_t position;  // this node's input index at its parent
  std::uint8_t locals;    // tasks on this node
  std::uint8_t children;
  std::uint8_t inputs;  // locals + children; 0 when not in the tree
  // Virtual time on several hosts: the levels of the whole partition's tree (the one a single host
  // builds) between where this node's contributions enter it and its root.
  std::int32_t vt_levels;
  std::uint32_t slot_stride;
  std::uint64_t ring_offset;  // of this node's UpSlots inside a class's up area
  std::int32_t child[kMaxFanout];
  std::int32_t local_rank[kMaxLocal];
};

static_assert(sizeof(NodeEntry) == 64);

struct alignas(64) UpSlotMeta {
  std::atomic<std::uint32_t> arrived{0};
  std::uint16_t op[kMaxInputs];      // each input's operation code (or kMismatchCode from below)
  std::atomic<std::uint64_t> vt{0};  // virtual time: when the latest input reached this node
};
static_assert(sizeof(UpSlotMeta) == 64);

struct alignas(64) DownSlot {
  std::atomic<std::uint64_t> published{0};  // seq + 1 once the result of seq is in data
  std::atomic<std::uint64_t> writable{0};   // the sequence number the slot may take next
  std::atomic<std::uint64_t> claimed{0};    // several hosts: seq + 1 once a task combines seq
  // From here to the end: what a broadcast from another host stores.
  std::uint16_t op = 0;      // operation code, kBroadcastCode or kMismatchCode
  std::uint32_t source = 0;  // broadcasting rank
  std::uint64_t vt = 0;      // virtual time: when the result is at every node
  alignas(64) std::atomic<std::uint32_t> readers_left{0};
  // Conservative synchronisation: the latest clock among the tasks that read the result, when the
  // slot's next writer may write (it waited for them).
  std::atomic<std::uint64_t> vt_read{0};
  alignas(64) std::byte data[kPacketBytes];
};
static_assert(sizeof(DownSlot) == 384);

// A host's combined contribution to a sequence number (several hosts), in every host's replica.
struct alignas(64) PartialSlot {
  std::atomic<std::uint64_t> ready{0};  // seq + 1 once op and data hold the host's partial
  std::uint64_t op = 0;  // operation code or kMismatchCode (low 16 bits); stored from here on
  std::uint64_t vt = 0;  // virtual time: when the host's partial is complete (see tree_endpoint)
  alignas(64) std::byte data[kPacketBytes];
};
static_assert(sizeof(PartialSlot) == 320);

struct DownControl {
  job_runtime::Doorbell results;          // rung when a result is published
  job_runtime::Doorbell space;            // rung when the last reader releases a slot
  std::atomic<std::uint64_t> vt_last{0};  // virtual time of the class's latest result
};

// Per combining class: which sequence number a task has taken over for everybody (the next
// contribution of every task, made from the lines that follow: kDeferredBytes per task).
inline constexpr std::size_t kDeferredBytes = 512;  // 64 doubles
struct alignas(64) DeferredControl {
  std::atomic<std::uint64_t> claimed{0};  // seq + 1 once a task makes everybody's seq
};

struct alignas(64) WireState {
  std::atomic<std::uint32_t> raised{0};     // tasks whose input is raised
  std::atomic<std::uint32_t> completed{0};  // barriers completed (channel 0)
  // Virtual time, channel 0: the latest arrival at barriers of odd and even number. A task starts
  // barrier k + 2 only after everybody arrived at k + 1, so nobody still reads k's value then.
  std::atomic<std::uint64_t> vt_arrival[2]{};
  alignas(64) job_runtime::Doorbell bell;
};

struct alignas(64) InboxControl {
  std::atomic<std::uint64_t> tail{0};  // producers
  alignas(64) std::atomic<std::uint64_t> head{0};
  alignas(64) job_runtime::Doorbell bell;
};

struct alignas(32) InboxSlot {
  std::uint32_t source;
  std::uint32_t tag;
  std::uint32_t bytes;
  alignas(32) std::byte data[kPacketBytes];
};

constexpr std::size_t align_up(std::size_t n, std::size_t a) {
  return (n + a - 1) / a * a;
}
constexpr std::size_t up_slot_bytes(int inputs) {
  return sizeof(UpSlotMeta) + static_cast<std::size_t>(inputs) * kPacketBytes;
}
constexpr std::size_t inbox_bytes(std::uint32_t capacity) {
  return sizeof(InboxControl) + align_up(capacity * sizeof(std::atomic<std::uint64_t>), 64) +
         capacity * sizeof(InboxSlot);
}

}  // namespace bgl::collective_net_emu::layout
