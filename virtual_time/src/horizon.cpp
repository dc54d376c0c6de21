#include "bgl/virtual_time/horizon.hpp"

#include <algorithm>
#include <bit>
#include <new>
#include <stdexcept>

#include "spin_lock.hpp"

namespace bgl::virtual_time {

struct Horizon::Shared {
  std::atomic<std::uint32_t> lock{0};
  std::uint32_t actors = 0;
  std::uint32_t leaves = 0;  // a power of two >= actors; unused leaves hold kNever
};

namespace {

constexpr std::size_t align64(std::size_t n) {
  return (n + 63) & ~std::size_t{63};
}

std::uint32_t leaves_for(int actors) {
  return std::bit_ceil(static_cast<std::uint32_t>(std::max(actors, 2)));
}

struct Offsets {
  std::size_t tree, blocked, lowered, event, completed, total;
  explicit Offsets(std::uint32_t leaves) {
    tree = 64;  // after the Shared header
    blocked = tree + align64(2 * leaves * sizeof(Tick));
    lowered = blocked + align64(leaves);
    event = lowered + align64(leaves * sizeof(Tick));
    completed = event + align64(leaves * sizeof(std::uint64_t));
    total = completed + align64(Horizon::kCompletions * 2 * sizeof(std::uint64_t));
  }
};

}  // namespace

std::size_t Horizon::bytes(int actors) {
  return Offsets(leaves_for(actors)).total;
}

Horizon::Horizon(std::span<std::byte> block) {
  shared_ = std::launder(reinterpret_cast<Shared*>(block.data()));
  const Offsets o(shared_->leaves);
  if (block.size() < o.total) throw std::invalid_argument("horizon table larger than its block");
  tree_ = std::launder(reinterpret_cast<Tick*>(block.data() + o.tree));
  blocked_ = std::launder(reinterpret_cast<std::atomic<std::uint8_t>*>(block.data() + o.blocked));
  lowered_ = std::launder(reinterpret_cast<Tick*>(block.data() + o.lowered));
  event_ = std::launder(reinterpret_cast<std::uint64_t*>(block.data() + o.event));
  completed_ = std::launder(reinterpret_cast<Completion*>(block.data() + o.completed));
}

Horizon Horizon::format(std::span<std::byte> block, int actors) {
  if (actors < 1 || block.size() < bytes(actors))
    throw std::invalid_argument("horizon table: block too small for its actors");
  static_assert(sizeof(Shared) <= 64);
  auto* shared = new (block.data()) Shared{};
  shared->actors = static_cast<std::uint32_t>(actors);
  shared->leaves = leaves_for(actors);
  Horizon h(block);
  const std::uint32_t leaves = shared->leaves;
  for (std::uint32_t i = 0; i < leaves; ++i) {
    h.tree_[leaves + i] = i < shared->actors ? 0 : kNever;
    new (&h.blocked_[i]) std::atomic<std::uint8_t>{0};
    h.lowered_[i] = kNever;
    h.event_[i] = 0;
  }
  for (std::uint32_t i = 0; i < kCompletions; ++i)
    h.completed_[i] = {~std::uint64_t{0}, 0};
  for (std::uint32_t n = leaves - 1; n >= 1; --n)
    h.tree_[n] = std::min(h.tree_[2 * n], h.tree_[2 * n + 1]);
  return h;
}

Horizon Horizon::attach(std::span<std::byte> block) {
  if (block.size() < 64) throw std::invalid_argument("horizon table: no block");
  return Horizon(block);
}

int Horizon::actors() const {
  return static_cast<int>(shared_->actors);
}

void Horizon::set(int actor, Tick bound) {
  std::uint32_t n = shared_->leaves + static_cast<std::uint32_t>(actor);
  tree_[n] = bound;
  for (n >>= 1; n >= 1; n >>= 1) {
    const Tick m = std::min(tree_[2 * n], tree_[2 * n + 1]);
    if (tree_[n] == m) break;  // nothing above changes either
    tree_[n] = m;
  }
}

Tick Horizon::others(int actor) const {
  Tick least = kNever;
  for (std::uint32_t n = shared_->leaves + static_cast<std::uint32_t>(actor); n > 1; n >>= 1)
    least = std::min(least, tree_[n ^ 1]);
  return least;
}

Tick Horizon::run(int actor, Tick clock) {
  const SpinLock lock(shared_->lock);
  blocked_[actor].store(0, std::memory_order_relaxed);
  lowered_[actor] = kNever;
  set(actor, clock);
  return others(actor);
}

void Horizon::arm(int actor, Waits waits, std::uint64_t event) {
  {
    const SpinLock lock(shared_->lock);
    if (blocked_[actor].load(std::memory_order_relaxed) == 0) lowered_[actor] = kNever;
    blocked_[actor].store(static_cast<std::uint8_t>(waits), std::memory_order_relaxed);
    event_[actor] = event;
  }
  // Pairs with the fence in a sender's delivery: either it sees this actor blocked and lowers it,
  // or the FIFO scan that follows sees its packet.
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

Tick Horizon::block(int actor, Tick bound) {
  const SpinLock lock(shared_->lock);
  set(actor, std::min(bound, lowered_[actor]));
  return others(actor);
}

Tick Horizon::block_for_event(int actor, std::uint64_t event, Tick clock, Tick packets, Tick cap) {
  const SpinLock lock(shared_->lock);
  const Completion& done = completed_[event % kCompletions];
  if (done.event == event) lowered_[actor] = std::min(lowered_[actor], done.t);
  // The event needs the actors that have not joined it: it completes no earlier than the least of
  // their bounds. (Counting the other waiters too would let two of them hold each other down.)
  Tick joiners = kNever;
  const std::uint32_t leaves = shared_->leaves;
  for (std::uint32_t i = 0; i < shared_->actors; ++i)
    if (static_cast<int>(i) != actor &&
        (event_[i] != event || blocked_[i].load(std::memory_order_relaxed) !=
                                   static_cast<std::uint8_t>(Waits::for_event)))
      joiners = std::min(joiners, tree_[leaves + i]);
  set(actor, std::min({std::max(clock, std::min(packets, joiners)), lowered_[actor], cap}));
  return others(actor);
}

void Horizon::complete(std::uint64_t event, Tick t) {
  const SpinLock lock(shared_->lock);
  completed_[event % kCompletions] = {event, t};
  const std::uint32_t leaves = shared_->leaves;
  bool changed = false;
  for (std::uint32_t i = 0; i < shared_->actors; ++i) {
    if (event_[i] != event ||
        blocked_[i].load(std::memory_order_relaxed) != static_cast<std::uint8_t>(Waits::for_event))
      continue;
    lowered_[i] = std::min(lowered_[i], t);
    if (tree_[leaves + i] > t) tree_[leaves + i] = t, changed = true;
  }
  if (changed)
    for (std::uint32_t n = leaves - 1; n >= 1; --n)
      tree_[n] = std::min(tree_[2 * n], tree_[2 * n + 1]);
}

int Horizon::holder(int actor) const {
  const SpinLock lock(shared_->lock);
  const Tick least = others(actor);
  if (least == kNever) return -1;
  for (std::uint32_t i = 0; i < shared_->actors; ++i)
    if (static_cast<int>(i) != actor && tree_[shared_->leaves + i] == least)
      return static_cast<int>(i);
  return -1;
}

int Horizon::running_at(int actor, Tick t) const {
  const SpinLock lock(shared_->lock);
  for (std::uint32_t i = 0; i < shared_->actors; ++i)
    if (static_cast<int>(i) != actor && tree_[shared_->leaves + i] == t &&
        blocked_[i].load(std::memory_order_relaxed) == 0)
      return static_cast<int>(i);
  return -1;
}

bool Horizon::delivered(int actor, Tick arrival) {
  constexpr auto kLowered = static_cast<std::uint8_t>(Waits::for_packets);
  constexpr auto kEvent = static_cast<std::uint8_t>(Waits::for_event);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  const auto waits = blocked_[actor].load(std::memory_order_relaxed);
  if (waits != kLowered && waits != kEvent) return false;
  const SpinLock lock(shared_->lock);
  const auto now = blocked_[actor].load(std::memory_order_relaxed);
  if (now != kLowered && now != kEvent) return false;
  lowered_[actor] = std::min(lowered_[actor], arrival);
  const std::uint32_t leaf = shared_->leaves + static_cast<std::uint32_t>(actor);
  if (tree_[leaf] <= arrival) return false;
  set(actor, arrival);
  return true;
}

void Horizon::finish(int actor) {
  const SpinLock lock(shared_->lock);
  blocked_[actor].store(static_cast<std::uint8_t>(Waits::for_release), std::memory_order_relaxed);
  event_[actor] = 0;
  lowered_[actor] = kNever;
  set(actor, kNever);
}

void Horizon::release_all(Tick t) {
  const SpinLock lock(shared_->lock);
  const std::uint32_t leaves = shared_->leaves;
  for (std::uint32_t i = 0; i < shared_->actors; ++i) {
    if (blocked_[i].load(std::memory_order_relaxed) == 0) continue;
    lowered_[i] = std::min(lowered_[i], t);
    tree_[leaves + i] = std::min(tree_[leaves + i], t);
  }
  for (std::uint32_t n = leaves - 1; n >= 1; --n)
    tree_[n] = std::min(tree_[2 * n], tree_[2 * n + 1]);
}

Tick Horizon::bound(int actor) const {
  const SpinLock lock(shared_->lock);
  return tree_[shared_->leaves + static_cast<std::uint32_t>(actor)];
}

bool Horizon::blocked(int actor) const {
  return blocked_[actor].load(std::memory_order_acquire) != 0;
}

}  // namespace bgl::virtual_time
