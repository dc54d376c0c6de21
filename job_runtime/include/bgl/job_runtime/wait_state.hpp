#pragma once
// What a task waits for, published in its task slot while it sleeps, so that the launcher can tell
// a job in which every task keeps sleeping and none makes progress (a deadlock) from a slow one,
// and say what each task waits for. Only the thread that made the task's Runtime publishes (other
// threads of the task, such as the coprocessor, leave it alone).
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace bgl::job_runtime {

enum class WaitKind : std::uint32_t {
  unspecified = 0,   // described by the doorbell it sleeps on
  packets,           // packets for this task (its reception FIFOs)
  injection_room,    // room in a peer's reception FIFO for packets in its injection FIFOs
  job_barrier,       // the job-wide barrier; detail: its generation
  global_interrupt,  // the global-interrupt barrier; detail: its ticket
  wire,              // a global-interrupt OR/AND wire; detail: the channel
  tree,              // a collective-network (tree) operation; detail: the route class
};
const char* describe(WaitKind kind);

struct alignas(64) WaitState {
  std::atomic<std::uint32_t> asleep{0};  // 1 from the first sleep of a wait until it sees work
  std::atomic<std::uint32_t> kind{0};    // WaitKind
  std::atomic<std::uint64_t> bell{0};    // offset in the segment of the doorbell it sleeps on
  std::atomic<std::uint64_t> detail{0};  // per kind (see WaitKind)
  std::atomic<std::uint64_t> sleeps{0};  // every sleep, including ones a timeout ended
  std::atomic<std::uint64_t> wakes{0};   // waits that ended with work found
};

// The calling thread's record. Every function is a no-op on a thread without one.
namespace wait_record {

// Makes `state` (in the segment that starts at `segment`) the calling thread's record; null
// detaches.
void attach(WaitState* state, const std::byte* segment);
// A sleep on `bell` begins; returns whether the thread has a record (then awake() must follow
// once the wait sees work or ends).
bool asleep(const void* bell);
void awake();

// What the calling thread is about to wait for, while the object lives (innermost wins).
class Reason {
 public:
  Reason(WaitKind kind, std::uint64_t detail);
  ~Reason();
  Reason(const Reason&) = delete;
  Reason& operator=(const Reason&) = delete;

 private:
  WaitKind previous_kind_;
  std::uint64_t previous_detail_;
};
// The current reason's kind (unspecified when none).
WaitKind current_kind();

}  // namespace wait_record
}  // namespace bgl::job_runtime
