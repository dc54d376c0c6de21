#include "bgl/virtual_time/horizon.hpp"

#include <algorithm>
#include <bit>
#include <new>
#include <stdexcept>

#include "spin_lock.hpp"

namespace bgl::virtual_time {

// The tree orders actors by key: a bound, then who holds it. A running actor at t comes before a
// blocked one at t (which acts only after reading a packet or on an event, so later), and running
// actors at the same t go by rank: a departure is safe when its key is below every other key.
using Key = std::uint64_t;

namespace {

constexpr int kRankBits = 16;
constexpr std::uint32_t kBlocked = (1u << kRankBits) - 1;  // the low bits of a blocked actor's key
constexpr Key kNeverKey = ~Key{0};

constexpr Key key(Tick t, std::uint32_t low) {
  return t >= (kNever >> kRankBits) ? kNeverKey : t << kRankBits | low;
}
constexpr Tick time_of(Key k) {
  return k >> kRankBits == kNever >> kRankBits ? kNever : k >> kRankBits;
}

constexpr std::size_t align64(std::size_t n) {
  return (n + 63) & ~std::size_t{63};
}

std::uint32_t leaves_for(int actors) {
  return std::bit_ceil(static_cast<std::uint32_t>(std::max(actors, 2)));
}

struct Offsets {
  std::size_t tree, blocked, lowered, event, watching, wants, signal, completed, total;
  explicit Offsets(std::uint32_t leaves) {
    tree = 64;  // after the Shared header
    blocked = tree + align64(2 * leaves * sizeof(Key));
    lowered = blocked + align64(leaves);
    event = lowered + align64(leaves * sizeof(Tick));
    watching = event + align64(leaves * sizeof(std::uint64_t));
    wants = watching + align64(leaves);
    signal = wants + align64(leaves * sizeof(Key));
    completed = signal + align64(leaves * sizeof(std::uint32_t));
    total = completed + align64(Horizon::kCompletions * 2 * sizeof(std::uint64_t));
  }
};

}  // namespace

struct Horizon::Shared {
  std::atomic<std::uint32_t> lock{0};
  std::uint32_t actors = 0;
  std::uint32_t leaves = 0;      // a power of two >= actors; unused leaves hold kNeverKey
  Key least_wanted = kNeverKey;  // no watcher needs less (it may need more: a stale bound)
};

std::size_t Horizon::bytes(int actors) {
  return Offsets(leaves_for(actors)).total;
}

Horizon::Horizon(std::span<std::byte> block) {
  shared_ = std::launder(reinterpret_cast<Shared*>(block.data()));
  const Offsets o(shared_->leaves);
  if (block.size() < o.total) throw std::invalid_argument("horizon table larger than its block");
  tree_ = std::launder(reinterpret_cast<Key*>(block.data() + o.tree));
  blocked_ = std::launder(reinterpret_cast<std::atomic<std::uint8_t>*>(block.data() + o.blocked));
  lowered_ = std::launder(reinterpret_cast<Tick*>(block.data() + o.lowered));
  event_ = std::launder(reinterpret_cast<std::uint64_t*>(block.data() + o.event));
  watching_ = std::launder(reinterpret_cast<std::atomic<std::uint8_t>*>(block.data() + o.watching));
  wants_ = std::launder(reinterpret_cast<Key*>(block.data() + o.wants));
  signal_ = std::launder(reinterpret_cast<std::atomic<std::uint32_t>*>(block.data() + o.signal));
  completed_ = std::launder(reinterpret_cast<Completion*>(block.data() + o.completed));
}

Horizon Horizon::format(std::span<std::byte> block, int actors) {
  if (actors < 1 || actors >= static_cast<int>(kBlocked) || block.size() < bytes(actors))
    throw std::invalid_argument("horizon table: block too small for its actors, or too many");
  static_assert(sizeof(Shared) <= 64);
  auto* shared = new (block.data()) Shared{};
  shared->actors = static_cast<std::uint32_t>(actors);
  shared->leaves = leaves_for(actors);
  Horizon h(block);
  const std::uint32_t leaves = shared->leaves;
  for (std::uint32_t i = 0; i < leaves; ++i) {
    h.tree_[leaves + i] = i < shared->actors ? key(0, i) : kNeverKey;
    new (&h.blocked_[i]) std::atomic<std::uint8_t>{0};
    h.lowered_[i] = kNever;
    h.event_[i] = 0;
    new (&h.watching_[i]) std::atomic<std::uint8_t>{0};
    h.wants_[i] = kNeverKey;
    new (&h.signal_[i]) std::atomic<std::uint32_t>{0};
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

void Horizon::on_wake(std::function<void(std::atomic<std::uint32_t>&)> wake) {
  wake_ = std::move(wake);
  woken_.reserve(static_cast<std::size_t>(actors()));
}

std::uint32_t Horizon::leaf(int actor) const {
  return shared_->leaves + static_cast<std::uint32_t>(actor);
}

void Horizon::set(int actor, Key k) {
  std::uint32_t n = leaf(actor);
  if (tree_[n] == k) return;
  tree_[n] = k;
  for (n >>= 1; n >= 1; n >>= 1) {
    const Key m = std::min(tree_[2 * n], tree_[2 * n + 1]);
    if (tree_[n] == m) break;  // nothing above changes either
    tree_[n] = m;
  }
}

void Horizon::rebuild() {
  for (std::uint32_t n = shared_->leaves - 1; n >= 1; --n)
    tree_[n] = std::min(tree_[2 * n], tree_[2 * n + 1]);
}

Key Horizon::others(int actor) const {
  Key least = kNeverKey;
  for (std::uint32_t n = leaf(actor); n > 1; n >>= 1)
    least = std::min(least, tree_[n ^ 1]);
  return least;
}

// The actor's own key and wait. Only this raises the least key, so only this can satisfy a
// watcher: those whose others now reach what they want are unregistered and woken after the
// unlock.
void Horizon::own(int actor, Tick bound, std::uint8_t waits) {
  blocked_[actor].store(waits, std::memory_order_relaxed);
  set(actor, key(bound, waits == 0 ? static_cast<std::uint32_t>(actor) : kBlocked));
  // The others of every actor but the one holding the least key are the least key: nobody else
  // can go on before it reaches the least want. That one's others are the rest.
  if (const std::uint32_t least = least_leaf(); least != 0) {
    const auto i = static_cast<int>(least - shared_->leaves);
    if (watching_[i].load(std::memory_order_relaxed) != 0 && others(i) >= wants_[i]) {
      woke(i);
    } else if (blocked_[i].load(std::memory_order_relaxed) ==
               static_cast<std::uint8_t>(Waits::for_event)) {
      // Its bound follows the actors yet to join its event, but only when it looks again: the
      // watchers must keep ringing it rather than sleep.
      if (shared_->least_wanted != kNeverKey) wake_all();
      return;
    }
  }
  if (tree_[1] < shared_->least_wanted) return;
  Key least = kNeverKey;
  for (std::uint32_t i = 0; i < shared_->actors; ++i) {
    if (watching_[i].load(std::memory_order_relaxed) == 0) continue;
    if (others(static_cast<int>(i)) >= wants_[i])
      woke(static_cast<int>(i));
    else
      least = std::min(least, wants_[i]);
  }
  shared_->least_wanted = least;
}

void Horizon::wake_all() {
  for (std::uint32_t i = 0; i < shared_->actors; ++i)
    if (watching_[i].load(std::memory_order_relaxed) != 0) woke(static_cast<int>(i));
  shared_->least_wanted = kNeverKey;
}

void Horizon::woke(int actor) {
  watching_[actor].store(0, std::memory_order_relaxed);
  signal_[actor].fetch_add(1, std::memory_order_release);
  if (wake_) woken_.push_back(actor);
}

// The leaf holding the least key (0: every actor has ended).
std::uint32_t Horizon::least_leaf() const {
  if (tree_[1] == kNeverKey) return 0;
  std::uint32_t n = 1;
  while (n < shared_->leaves)
    n = tree_[2 * n] == tree_[n] ? 2 * n : 2 * n + 1;
  return n;
}

void Horizon::wake_watchers() {
  for (const int actor : woken_)
    wake_(signal_[actor]);
  woken_.clear();
}

void Horizon::nudge(int actor) {
  if (actor < 0 || !wake_ || watching_[actor].load(std::memory_order_relaxed) == 0) return;
  signal_[actor].fetch_add(1, std::memory_order_release);
  wake_(signal_[actor]);
}

Tick Horizon::run(int actor, Tick clock) {
  Key least;
  {
    const SpinLock lock(shared_->lock);
    lowered_[actor] = kNever;
    own(actor, clock, 0);
    least = others(actor);
  }
  wake_watchers();
  return time_of(least);
}

bool Horizon::first(int actor) const {
  const SpinLock lock(shared_->lock);
  return tree_[leaf(actor)] < others(actor);
}

void Horizon::arm(int actor, Waits waits, std::uint64_t event) {
  {
    const SpinLock lock(shared_->lock);
    if (blocked_[actor].load(std::memory_order_relaxed) == 0) lowered_[actor] = kNever;
    event_[actor] = event;
    own(actor, time_of(tree_[leaf(actor)]), static_cast<std::uint8_t>(waits));
  }
  wake_watchers();
  // Pairs with the fence in a sender's delivery: either it sees this actor blocked and lowers it,
  // or the FIFO scan that follows sees its packet.
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

Tick Horizon::block(int actor, Tick bound) {
  Key least;
  {
    const SpinLock lock(shared_->lock);
    own(actor, std::min(bound, lowered_[actor]), blocked_[actor].load(std::memory_order_relaxed));
    least = others(actor);
  }
  wake_watchers();
  return time_of(least);
}

Tick Horizon::block_for_event(int actor, std::uint64_t event, Tick clock, Tick packets, Tick cap) {
  Key least;
  {
    const SpinLock lock(shared_->lock);
    const Completion& done = completed_[event % kCompletions];
    if (done.event == event) lowered_[actor] = std::min(lowered_[actor], done.t);
    // The event needs the actors that have not joined it: it completes no earlier than the least
    // of their bounds. (Counting the other waiters too would let two of them hold each other down.)
    Key joiners = kNeverKey;
    for (std::uint32_t i = 0; i < shared_->actors; ++i)
      if (static_cast<int>(i) != actor &&
          (event_[i] != event || blocked_[i].load(std::memory_order_relaxed) !=
                                     static_cast<std::uint8_t>(Waits::for_event)))
        joiners = std::min(joiners, tree_[leaf(static_cast<int>(i))]);
    own(actor,
        std::min({std::max(clock, std::min(packets, time_of(joiners))), lowered_[actor], cap}),
        blocked_[actor].load(std::memory_order_relaxed));
    least = others(actor);
  }
  wake_watchers();
  return time_of(least);
}

void Horizon::complete(std::uint64_t event, Tick t) {
  const SpinLock lock(shared_->lock);
  completed_[event % kCompletions] = {event, t};
  bool changed = false;
  for (std::uint32_t i = 0; i < shared_->actors; ++i) {
    if (event_[i] != event ||
        blocked_[i].load(std::memory_order_relaxed) != static_cast<std::uint8_t>(Waits::for_event))
      continue;
    lowered_[i] = std::min(lowered_[i], t);
    Key& k = tree_[leaf(static_cast<int>(i))];
    if (time_of(k) > t) k = key(t, kBlocked), changed = true;
  }
  if (changed) rebuild();
}

// Down the tournament tree from the least sibling on the actor's path: O(log n).
Horizon::Holder Horizon::holder(int actor) const {
  const SpinLock lock(shared_->lock);
  const std::uint32_t leaves = shared_->leaves;
  std::uint32_t best = 0;
  for (std::uint32_t n = leaf(actor); n > 1; n >>= 1)
    if (best == 0 || tree_[n ^ 1] < tree_[best]) best = n ^ 1;
  if (best == 0 || tree_[best] == kNeverKey) return {};
  while (best < leaves)
    best = tree_[2 * best] < tree_[2 * best + 1] ? 2 * best : 2 * best + 1;
  const auto i = static_cast<int>(best - leaves);
  return {i, time_of(tree_[best]), Waits{blocked_[i].load(std::memory_order_relaxed)}};
}

bool Horizon::watch(int actor, Tick need) {
  const SpinLock lock(shared_->lock);
  return wants(actor, key(need, 0));
}

bool Horizon::watch_first(int actor) {
  const SpinLock lock(shared_->lock);
  return wants(actor, tree_[leaf(actor)] + 1);
}

bool Horizon::wants(int actor, Key k) {
  if (others(actor) >= k) return false;
  // Held back by an actor waiting for an event (own()): no sleep.
  const std::uint32_t least = least_leaf();
  if (least != 0 && least != leaf(actor) &&
      blocked_[least - shared_->leaves].load(std::memory_order_relaxed) ==
          static_cast<std::uint8_t>(Waits::for_event))
    return false;
  watching_[actor].store(1, std::memory_order_relaxed);
  wants_[actor] = k;
  shared_->least_wanted = std::min(shared_->least_wanted, k);
  return true;
}

void Horizon::unwatch(int actor) {
  const SpinLock lock(shared_->lock);
  watching_[actor].store(0, std::memory_order_relaxed);
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
  if (time_of(tree_[leaf(actor)]) <= arrival) return false;
  set(actor, key(arrival, kBlocked));
  return true;
}

void Horizon::finish(int actor) {
  {
    const SpinLock lock(shared_->lock);
    event_[actor] = 0;
    lowered_[actor] = kNever;
    watching_[actor].store(0, std::memory_order_relaxed);
    own(actor, kNever, static_cast<std::uint8_t>(Waits::for_release));
  }
  wake_watchers();
}

void Horizon::release_all(Tick t) {
  const SpinLock lock(shared_->lock);
  for (std::uint32_t i = 0; i < shared_->actors; ++i) {
    if (blocked_[i].load(std::memory_order_relaxed) == 0) continue;
    lowered_[i] = std::min(lowered_[i], t);
    Key& k = tree_[leaf(static_cast<int>(i))];
    k = std::min(k, key(t, kBlocked));
  }
  rebuild();
}

Tick Horizon::bound(int actor) const {
  const SpinLock lock(shared_->lock);
  return time_of(tree_[leaf(actor)]);
}

bool Horizon::blocked(int actor) const {
  return blocked_[actor].load(std::memory_order_acquire) != 0;
}

}  // namespace bgl::virtual_time
