#pragma once
// Conservative synchronisation of a job's clocks: the table of bounds that lets a task take a
// packet only when no other task can still send it one that arrives earlier.
//
// Every actor (a task's endpoint) publishes a bound: no action of it happens before that time. A
// running actor's bound is its clock (a stale, lower value is safe). An actor that waits with
// nothing to do but receive is blocked: it acts no earlier than its earliest packet's arrival, and
// a sender that delivers it a packet lowers that bound to the packet's arrival. A packet arriving
// at t is safe to take when t < H + lookahead, H being the least bound of every other actor and
// the lookahead the least time from an action to an arrival. The actor with the least bound can
// always go on, so waiting for safety alone cannot deadlock.
//
// Bounds move between actors (a sender lowers a receiver, then raises itself), so a reader needs
// a consistent view: the table lives in the job's segment under one short lock, as a tournament
// tree (the least bound of the others is the least of the siblings on one's leaf's path, O(log n)
// to read or to update). docs/VIRTUAL_TIME.md, "Conservative synchronisation", gives the design.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "bgl/virtual_time/clock.hpp"

namespace bgl::virtual_time {

inline constexpr Tick kNever = ~Tick{0};

// t + d, saturating at kNever.
constexpr Tick later(Tick t, Tick d) {
  return t > kNever - d ? kNever : t + d;
}

// An event a task can wait for (block_for_event, complete), as a key: its kind, the channel (a
// collective-network class) and its number on that channel (a result's sequence number, a barrier's
// ticket).
enum class EventKind : std::uint8_t { tree_result = 1, gi_barrier = 2, tree_slot = 3 };
constexpr std::uint64_t event_key(EventKind kind, std::uint32_t channel, std::uint64_t number) {
  return std::uint64_t{static_cast<std::uint8_t>(kind)} << 56 |
         std::uint64_t{channel & 0xffu} << 48 | (number & ((std::uint64_t{1} << 48) - 1));
}

class Horizon {
 public:
  // Completions remembered for actors that arm for an event after it completed.
  static constexpr std::uint32_t kCompletions = 1024;

  // The bytes a table for `actors` actors takes in the segment (a multiple of 64).
  static std::size_t bytes(int actors);
  // Lays a table out in a zero-filled block of bytes(actors): every actor runs at time 0.
  static Horizon format(std::span<std::byte> block, int actors);
  // A view of a table that format() laid out in `block`.
  static Horizon attach(std::span<std::byte> block);

  Horizon() = default;
  explicit operator bool() const { return shared_ != nullptr; }
  int actors() const;

  // The actor runs, with `clock` as its bound; returns the least bound of the others.
  Tick run(int actor, Tick clock);
  // The actor is about to compute its blocked bound from its FIFOs' heads: from now on a sender
  // that delivers it a packet lowers it (so a packet the computation misses is still counted).
  // An actor that waits without taking packets (a barrier that only a release ends) is not lowered.
  // An actor waiting for an event (a collective-network result, a global-interrupt barrier) acts
  // on a packet or when the event completes, which depends on the actors that have not joined it
  // yet: its bound may rise to theirs (block_for_event), and the event's completion lowers it.
  enum class Waits : std::uint8_t { for_packets = 1, for_release = 2, for_event = 3 };
  void arm(int actor, Waits waits = Waits::for_packets, std::uint64_t event = 0);
  // The actor waits for a packet and acts no earlier than `bound` (kNever: it has none), or than a
  // packet delivered since arm(); returns the least bound of the others.
  Tick block(int actor, Tick bound);
  // The actor waits for `event` (armed for it): it acts no earlier than `clock`, and no earlier
  // than its earliest packet (`packets`) or the event, which comes no earlier than the least bound
  // of the actors that do not wait for it, unless the event completed already. Returns the least
  // bound of the others.
  // `cap`: a bound the actor may not exceed whatever it waits for (its own undelivered packets).
  Tick block_for_event(int actor, std::uint64_t event, Tick clock, Tick packets, Tick cap);
  // `event` completes: its waiters act no later than `t`, and so does an actor that arms for it
  // later (a completion is remembered for the last kReleased events).
  void complete(std::uint64_t event, Tick t);
  // The actor, running at the bound run() published, comes before every other actor: their
  // bounds are later, or the same and theirs are blocked (acting only after a packet read or an
  // event, so later) or of higher rank. Links are reserved in this order.
  bool first(int actor) const;
  // An actor holding the least bound of the others (its bound; what it waits for, nothing if it
  // runs), or nobody (-1): whom to wake, if it is blocked, when `actor` waits for the others.
  struct Holder {
    int actor = -1;
    Tick bound = kNever;
    Waits waits{};
    bool running() const { return waits == Waits{}; }
  };
  Holder holder(int actor) const;
  // Waiting for the others without spinning: `actor` reads its signal(), registers what it needs,
  // the others' least bound at `need` or later (watch) or coming first (watch_first), and sleeps
  // while the signal keeps that value (false: it has what it needs already). Whatever raises the
  // least bound (an actor's run, arm, block, block_for_event, finish) unregisters the watchers it
  // satisfies, changes their signals and, once the table is unlocked, wakes the sleepers on them
  // through on_wake's function. A watcher that wakes for another reason unregisters itself.
  bool watch(int actor, Tick need);
  bool watch_first(int actor);
  void unwatch(int actor);
  std::atomic<std::uint32_t>& signal(int actor) const { return signal_[actor]; }
  // Wakes a watcher anyway (its FIFO is full: a sender needs it to empty it).
  void nudge(int actor);
  // How this view wakes the sleepers on a signal (a futex wake): set by the one view an actor moves
  // its own bound through. Calls made through other views wake nobody.
  void on_wake(std::function<void(std::atomic<std::uint32_t>&)> wake);
  // A packet arriving at `arrival` has been delivered to `actor`: a blocked actor may act then.
  // Returns whether it lowered a bound (the caller's view of H may have fallen).
  bool delivered(int actor, Tick arrival);
  // The actor has ended: it never acts again.
  void finish(int actor);
  // Every blocked actor acts no later than `t` (a barrier releasing everybody at t).
  void release_all(Tick t);
  // The actor's published bound and whether it is blocked (for statistics and tests).
  Tick bound(int actor) const;
  bool blocked(int actor) const;

 private:
  using Key = std::uint64_t;  // a bound and who holds it (horizon.cpp)
  struct Shared;
  explicit Horizon(std::span<std::byte> block);
  std::uint32_t leaf(int actor) const;
  void set(int actor, Key k);
  void rebuild();
  Key others(int actor) const;
  void own(int actor, Tick bound, std::uint8_t waits);
  void woke(int actor);
  void wake_all();
  std::uint32_t least_leaf() const;
  bool wants(int actor, Key k);
  void wake_watchers();

  Shared* shared_ = nullptr;
  Key* tree_ = nullptr;  // [1, 2 * leaves): the root at 1, leaf i at leaves + i
  std::atomic<std::uint8_t>* blocked_ = nullptr;
  Tick* lowered_ = nullptr;         // per actor: least arrival delivered since arm()
  std::uint64_t* event_ = nullptr;  // per actor: the event it waits for
  std::atomic<std::uint8_t>* watching_ =
      nullptr;  // per actor: asleep until the others reach wants_
  Key* wants_ = nullptr;
  std::atomic<std::uint32_t>* signal_ = nullptr;  // per actor: changed when it is woken
  struct Completion {
    std::uint64_t event;
    Tick t;
  };
  Completion* completed_ = nullptr;  // the latest completions, by event % kCompletions
  // This process's side: how to wake a watcher, and whom a call found to wake.
  std::function<void(std::atomic<std::uint32_t>&)> wake_;
  std::vector<int> woken_;
};

}  // namespace bgl::virtual_time
