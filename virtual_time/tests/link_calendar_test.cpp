#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "bgl/virtual_time/link_calendar.hpp"

namespace bgl::virtual_time {
namespace {

TEST(LinkCalendar, AFreeLinkStartsAtOnce) {
  LinkCalendar c;
  EXPECT_EQ(c.reserve(100, 50), 100u);
  EXPECT_EQ(c.busy(), 50u);
  EXPECT_EQ(c.packets(), 1u);
  EXPECT_EQ(c.horizon(), 150u);
}

TEST(LinkCalendar, ABusyLinkMakesThePacketWait) {
  LinkCalendar c;
  c.reserve(100, 50);
  EXPECT_EQ(c.reserve(120, 50), 150u);  // overlaps: waits for the end
  EXPECT_EQ(c.reserve(100, 10), 200u);  // [100,200) is taken now
}

TEST(LinkCalendar, AnEarlierPacketHandledLaterTakesAnEarlierGap) {
  LinkCalendar c;
  c.reserve(1000, 100);                   // handled first in host order, later in virtual time
  EXPECT_EQ(c.reserve(0, 100), 0u);       // fits before it: no invented contention
  EXPECT_EQ(c.reserve(900, 100), 900u);   // exactly fills [900, 1000)
  EXPECT_EQ(c.reserve(850, 100), 1100u);  // [850,950) overlaps; next gap is after 1100
}

TEST(LinkCalendar, AGapTooSmallIsSkipped) {
  LinkCalendar c;
  c.reserve(0, 100);
  c.reserve(150, 100);
  EXPECT_EQ(c.reserve(90, 60), 250u);  // the 50-cycle gap at 100 is too small
  EXPECT_EQ(c.reserve(90, 50), 100u);  // this one fits exactly
}

TEST(LinkCalendar, AStreamStaysOneWindowAndFullCalendarsForgetTheOldest) {
  LinkCalendar c;
  Tick t = 0;
  for (int i = 0; i < 1000; ++i)
    t = c.reserve(0, 10) + 10;
  EXPECT_EQ(t, 10000u);  // back to back, every packet after the previous
  // Many separate windows: the calendar keeps the newest ones and stays correct for them.
  LinkCalendar d;
  for (int i = 0; i < 100; ++i)
    d.reserve(static_cast<Tick>(i) * 100, 10);
  EXPECT_EQ(d.reserve(9900, 10), 9910u);  // the newest windows are still known
  EXPECT_EQ(d.busy(), 1010u);
}

TEST(LinkCalendar, ConcurrentReservationsNeverOverlap) {
  LinkCalendar c;
  constexpr int kThreads = 4, kEach = 2000;
  std::vector<std::vector<Tick>> starts(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i)
        starts[t].push_back(c.reserve(0, 7));
    });
  for (auto& th : threads)
    th.join();
  std::vector<Tick> all;
  for (auto& s : starts)
    all.insert(all.end(), s.begin(), s.end());
  std::sort(all.begin(), all.end());
  for (std::size_t i = 1; i < all.size(); ++i)
    ASSERT_GE(all[i], all[i - 1] + 7);
  EXPECT_EQ(all.back(), static_cast<Tick>(kThreads * kEach - 1) * 7);  // no gaps either
}

}  // namespace
}  // namespace bgl::virtual_time
