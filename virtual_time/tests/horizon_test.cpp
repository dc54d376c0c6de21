// The table of bounds behind conservative synchronisation: the least bound of the others, blocked
// actors lowered by deliveries and by a barrier's release, and a layout that survives attaching.
#include "bgl/virtual_time/horizon.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace bgl::virtual_time {
namespace {

struct Table {
  explicit Table(int actors) : block(Horizon::bytes(actors)), h(Horizon::format(block, actors)) {}
  std::vector<std::byte> block;
  Horizon h;
};

TEST(Horizon, OthersAreTheLeastBoundButOnesOwn) {
  Table t(5);
  EXPECT_EQ(t.h.run(0, 100), 0u);  // the others still run at 0
  for (int a = 1; a < 5; ++a)
    t.h.run(a, 100u * static_cast<Tick>(a + 1));
  EXPECT_EQ(t.h.run(0, 1000), 200u);
  EXPECT_EQ(t.h.run(1, 200), 300u);
  EXPECT_EQ(t.h.run(4, 600), 200u);
  // An odd count pads the tree with leaves that never hold anybody back.
  EXPECT_EQ(t.h.block(1, kNever), 300u);
  EXPECT_EQ(t.h.run(2, 5000), 400u);
}

TEST(Horizon, ALonelyActorSeesNobody) {
  Table t(1);
  EXPECT_EQ(t.h.run(0, 7), kNever);
}

TEST(Horizon, ADeliveryLowersABlockedActorOnly) {
  Table t(3);
  t.h.run(0, 50);
  t.h.run(1, 80);
  t.h.run(2, 90);
  EXPECT_FALSE(t.h.delivered(1, 60));  // running: its clock bounds it already
  EXPECT_EQ(t.h.bound(1), 80u);
  t.h.arm(1);
  EXPECT_TRUE(t.h.blocked(1));
  EXPECT_EQ(t.h.block(1, kNever), 50u);
  EXPECT_EQ(t.h.run(0, 1000), 90u);  // actor 1 waits for nothing: only actor 2 holds 0 back
  EXPECT_TRUE(t.h.delivered(1, 1200));
  EXPECT_EQ(t.h.bound(1), 1200u);
  EXPECT_FALSE(t.h.delivered(1, 1300));  // a later packet changes nothing
  EXPECT_EQ(t.h.run(2, 5000), 1000u);
  EXPECT_EQ(t.h.run(0, 2000), 1200u);
}

TEST(Horizon, APacketDeliveredWhileTheBoundIsComputedIsNotLost) {
  Table t(2);
  t.h.arm(0);
  t.h.delivered(0, 300);  // between arm() and block(): the FIFO scan may have missed it
  t.h.block(0, kNever);
  EXPECT_EQ(t.h.bound(0), 300u);
  // Re-blocking keeps it until the actor runs (and so has seen its FIFOs since).
  t.h.block(0, 900);
  EXPECT_EQ(t.h.bound(0), 300u);
  t.h.run(0, 310);
  t.h.arm(0);
  t.h.block(0, 900);
  EXPECT_EQ(t.h.bound(0), 900u);
}

TEST(Horizon, ReleasingABarrierBoundsEveryBlockedActor) {
  Table t(4);
  for (int a = 0; a < 3; ++a) {
    t.h.arm(a);
    t.h.block(a, a == 0 ? 400 : kNever);
  }
  t.h.run(3, 700);
  t.h.release_all(1000);
  EXPECT_EQ(t.h.bound(0), 400u);
  EXPECT_EQ(t.h.bound(1), 1000u);
  EXPECT_EQ(t.h.bound(2), 1000u);
  EXPECT_EQ(t.h.bound(3), 700u);  // running: untouched
  EXPECT_EQ(t.h.run(3, 1050), 400u);
}

TEST(Horizon, AnEventWaiterRisesToTheTasksThatHaveNotJoinedIt) {
  Table t(4);
  const auto e = event_key(EventKind::gi_barrier, 0, 1);
  for (int a = 0; a < 4; ++a)
    t.h.run(a, 100 * static_cast<Tick>(a + 1));  // clocks 100, 200, 300, 400
  // Actors 0 and 1 wait for the barrier; actors 2 and 3 have not joined it.
  t.h.arm(0, Horizon::Waits::for_event, e);
  t.h.block_for_event(0, e, 100, kNever, kNever);
  t.h.arm(1, Horizon::Waits::for_event, e);
  t.h.block_for_event(1, e, 200, kNever, kNever);
  // Each waiter's bound is the least joiner's (actor 2), not the other waiter's: two waiters must
  // not hold each other down.
  t.h.block_for_event(0, e, 100, kNever, kNever);
  EXPECT_EQ(t.h.bound(0), 300u);
  EXPECT_EQ(t.h.bound(1), 300u);
  // A packet at its head, or its own packet still to deliver, bounds a waiter lower.
  t.h.block_for_event(1, e, 200, 250, kNever);
  EXPECT_EQ(t.h.bound(1), 250u);
  t.h.block_for_event(1, e, 200, kNever, 220);
  EXPECT_EQ(t.h.bound(1), 220u);
  // The joiners move on: the waiters follow when they look again.
  t.h.run(2, 900);
  t.h.run(3, 950);
  t.h.block_for_event(0, e, 100, kNever, kNever);
  EXPECT_EQ(t.h.bound(0), 900u);
  // The last arrival completes the barrier at 1000 before anybody can see it: the waiters are
  // bounded by it, and so is one that arms for the event only afterwards.
  t.h.complete(e, 1000);
  EXPECT_EQ(t.h.bound(0), 900u);
  t.h.block_for_event(1, e, 200, kNever, kNever);
  EXPECT_EQ(t.h.bound(1), 900u);
  t.h.run(2, 5000);
  t.h.run(3, 5000);
  t.h.block_for_event(0, e, 100, kNever, kNever);
  t.h.block_for_event(1, e, 200, kNever, kNever);
  EXPECT_EQ(t.h.bound(0), 1000u);
  EXPECT_EQ(t.h.bound(1), 1000u);
  // Another event's completion does not touch them.
  t.h.complete(event_key(EventKind::tree_result, 3, 1), 10);
  EXPECT_EQ(t.h.bound(0), 1000u);
}

TEST(Horizon, HoldersAndTiesBetweenRunningActors) {
  Table t(4);
  t.h.run(0, 500);
  t.h.run(1, 300);
  t.h.run(2, 300);
  t.h.run(3, 300);
  EXPECT_EQ(t.h.holder(0).actor, 1);
  EXPECT_EQ(t.h.holder(0).bound, 300u);
  EXPECT_EQ(t.h.holder(1).actor, 2);
  // Running actors at the same bound go by rank.
  EXPECT_TRUE(t.h.first(1));
  EXPECT_FALSE(t.h.first(2));
  EXPECT_FALSE(t.h.first(3));
  t.h.arm(1);
  t.h.block(1, 300);  // blocked at 300: it acts only after reading a packet, so later
  EXPECT_EQ(t.h.holder(0).actor, 2);
  EXPECT_TRUE(t.h.holder(0).running());
  EXPECT_TRUE(t.h.holder(2).running());
  EXPECT_EQ(t.h.holder(2).actor, 3);
  EXPECT_TRUE(t.h.first(2));
  EXPECT_FALSE(t.h.first(3));
  t.h.run(2, 301);
  EXPECT_TRUE(t.h.first(3));
  EXPECT_FALSE(t.h.first(2));
  // An actor that ended never holds anybody back.
  t.h.finish(1);
  t.h.finish(2);
  t.h.finish(3);
  EXPECT_EQ(t.h.run(0, 600), kNever);
  EXPECT_EQ(t.h.holder(0).actor, -1);
  EXPECT_TRUE(t.h.first(0));
}

TEST(Horizon, ABarrierWaiterIsNotLoweredByPackets) {
  Table t(2);
  t.h.arm(0, Horizon::Waits::for_release);
  t.h.block(0, kNever);
  EXPECT_FALSE(t.h.delivered(0, 50));
  EXPECT_EQ(t.h.bound(0), kNever);
  t.h.release_all(70);
  EXPECT_EQ(t.h.bound(0), 70u);
}

TEST(Horizon, AttachingSeesTheSameTable) {
  Table t(6);
  t.h.run(3, 42);
  Horizon other = Horizon::attach(t.block);
  EXPECT_EQ(other.actors(), 6);
  EXPECT_EQ(other.bound(3), 42u);
  EXPECT_EQ(other.run(0, 1), 0u);
}

TEST(Horizon, Saturation) {
  EXPECT_EQ(later(kNever, 75), kNever);
  EXPECT_EQ(later(kNever - 10, 75), kNever);
  EXPECT_EQ(later(100, 75), 175u);
}

TEST(Horizon, AWatcherIsWokenWhenTheOthersReachWhatItNeeds) {
  Table t(4);
  std::vector<int> woken;
  t.h.on_wake([&](std::atomic<std::uint32_t>& signal) {
    for (int i = 0; i < 4; ++i)
      if (&t.h.signal(i) == &signal) woken.push_back(i);
  });
  t.h.run(0, 100);
  t.h.run(1, 200);
  t.h.run(2, 300);
  t.h.arm(3);
  t.h.block(3, 900);
  EXPECT_EQ(t.h.holder(0).actor, 1);
  EXPECT_EQ(t.h.holder(0).waits, Horizon::Waits{});
  // Rank 3 needs the others at 400; rank 2 wants its departure at 300 to come first.
  ASSERT_TRUE(t.h.watch(3, 400));
  ASSERT_TRUE(t.h.watch_first(2));
  // Short of it, the same bound again: nobody is woken.
  t.h.run(0, 100);
  t.h.run(0, 299);
  EXPECT_TRUE(woken.empty());
  // Rank 0 passes rank 2's departure, but rank 1 is still before it.
  t.h.run(0, 450);
  EXPECT_TRUE(woken.empty());
  // Rank 1 ties at 300 with a lower rank: still first.
  t.h.run(1, 300);
  EXPECT_TRUE(woken.empty());
  t.h.arm(1);  // blocked at 300, it acts later: rank 2 goes first
  EXPECT_EQ(woken, std::vector<int>{2});
  t.h.block(1, 420);
  EXPECT_EQ(woken.size(), 1u);
  EXPECT_EQ(t.h.holder(2).actor, 1);
  EXPECT_EQ(t.h.holder(2).waits, Horizon::Waits::for_packets);
  t.h.run(2, 500);
  EXPECT_EQ(woken, (std::vector<int>{2, 3}));
  // Woken watchers are unregistered: nothing more.
  t.h.run(1, 600);
  EXPECT_EQ(woken.size(), 2u);
  // A watcher that already has what it needs does not sleep.
  EXPECT_FALSE(t.h.watch(3, 450));
  EXPECT_FALSE(t.h.watch_first(0));
  // A watcher that unregisters itself is not woken; one whose others end is.
  ASSERT_TRUE(t.h.watch(3, 2000));
  ASSERT_TRUE(t.h.watch(2, 2000));
  t.h.unwatch(2);
  woken.clear();
  t.h.finish(0);
  t.h.finish(1);
  EXPECT_TRUE(woken.empty());
  t.h.finish(2);
  EXPECT_EQ(woken, std::vector<int>{3});
}

}  // namespace
}  // namespace bgl::virtual_time
