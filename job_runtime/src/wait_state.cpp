#include "bgl/job_runtime/wait_state.hpp"

namespace bgl::job_runtime {
namespace {

struct ThreadRecord {
  WaitState* state = nullptr;
  const std::byte* segment = nullptr;
  WaitKind kind = WaitKind::unspecified;
  std::uint64_t detail = 0;
};
thread_local ThreadRecord t_record;

}  // namespace

const char* describe(WaitKind kind) {
  switch (kind) {
    case WaitKind::unspecified:
      return "something";
    case WaitKind::packets:
      return "packets";
    case WaitKind::injection_room:
      return "room in a reception FIFO";
    case WaitKind::job_barrier:
      return "the job barrier";
    case WaitKind::global_interrupt:
      return "the global-interrupt barrier";
    case WaitKind::wire:
      return "a global-interrupt wire";
    case WaitKind::tree:
      return "the collective network";
  }
  return "something";
}

namespace wait_record {

void attach(WaitState* state, const std::byte* segment) {
  t_record.state = state;
  t_record.segment = segment;
}

bool asleep(const void* bell) {
  WaitState* s = t_record.state;
  if (s == nullptr) return false;
  const auto offset = static_cast<const std::byte*>(bell) - t_record.segment;
  s->kind.store(static_cast<std::uint32_t>(t_record.kind), std::memory_order_relaxed);
  s->detail.store(t_record.detail, std::memory_order_relaxed);
  s->bell.store(static_cast<std::uint64_t>(offset), std::memory_order_relaxed);
  s->asleep.store(1, std::memory_order_relaxed);
  s->sleeps.fetch_add(1, std::memory_order_release);
  return true;
}

void awake() {
  WaitState* s = t_record.state;
  if (s == nullptr) return;
  s->asleep.store(0, std::memory_order_relaxed);
  s->wakes.fetch_add(1, std::memory_order_release);
}

Reason::Reason(WaitKind kind, std::uint64_t detail)
    : previous_kind_(t_record.kind), previous_detail_(t_record.detail) {
  t_record.kind = kind;
  t_record.detail = detail;
}

Reason::~Reason() {
  t_record.kind = previous_kind_;
  t_record.detail = previous_detail_;
}

WaitKind current_kind() {
  return t_record.kind;
}

}  // namespace wait_record
}  // namespace bgl::job_runtime
