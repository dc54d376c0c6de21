// In-process tests of the message layer's ordering and flow control: MPI non-overtaking for every
// mix of protocols, unexpected messages (eager data in the bounded pool, rendezvous waiting for
// accept()), backpressure when the pool or the receive table is full (never loss), the rendezvous
// send table, and callbacks that post or accept from inside the layer.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

#include "ml_harness.hpp"
#include "ml_in_process.hpp"

namespace bgl::message_layer::test {
namespace {

constexpr Protocol kAllProtocols[] = {Protocol::one_packet, Protocol::eager, Protocol::rendezvous,
                                      Protocol::adaptive_eager};

// Three senders around one receiver (rank 3) on a 4x4x2 torus, 2 to 5 hops away in two or three
// dimensions: adaptively routed packets take different paths and reach different FIFOs.
JobSpec fan_in(int fifo_packets = 64, const std::string& mode = "heater") {
  return {.ntasks = 4,
          .shape = "4x4x2",
          .mode = mode,
          .mapping_text = mode == "vn" ? "0 0 0 0\n3 1 0 1\n2 2 1 1\n2 2 1 0\n"
                                       : "0 0 0\n3 1 0\n1 3 1\n2 2 1\n",
          .fifo_packets = fifo_packets};
}

std::size_t size_for(Protocol p, std::mt19937& rng) {
  switch (p) {
    case Protocol::one_packet:
      return rng() % (kOnePacketWithTestHeader + 1);
    case Protocol::eager:
    case Protocol::adaptive_eager:
      return rng() % 3 == 0 ? rng() % 240 : 221 + rng() % 20000;
    case Protocol::rendezvous:
    default:
      return rng() % 3 == 0 ? rng() % 240 : rng() % 40000;
  }
}

// Every task's arrivals must come in the order their senders posted them.
::testing::AssertionResult in_post_order(const Inbox& in) {
  std::map<Rank, std::uint32_t> next;
  for (const auto& d : in.got) {
    const auto seq = d.test_header().seq;
    if (seq != next[d.source])
      return ::testing::AssertionFailure()
             << describe(d) << " arrived when message " << next[d.source] << " was due";
    ++next[d.source];
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult contents_ok(const Inbox& in, Rank me) {
  for (const auto& d : in.got) {
    const auto key = message_key(d.source, me, d.test_header().seq);
    if (d.completions != 1)
      return ::testing::AssertionFailure()
             << describe(d) << ": " << d.completions << " completions";
    if (d.completed_bytes != std::min(d.bytes, d.capacity()))
      return ::testing::AssertionFailure() << describe(d) << ": reported " << d.completed_bytes;
    const auto got = d.contents();
    const auto bad = find_mismatch(std::span(got).first(d.completed_bytes), key);
    if (bad != kNoMismatch)
      return ::testing::AssertionFailure() << describe(d) << ": byte " << bad << " differs";
    if (!d.guards_intact()) return ::testing::AssertionFailure() << describe(d) << ": overflow";
  }
  return ::testing::AssertionSuccess();
}

// Accepts unexpected messages of `in` (in arrival order) into buffers at a few alignments.
struct Acceptor {
  Inbox& in;
  std::size_t next = 0;
  bool one() {
    for (; next < in.got.size(); ++next) {
      auto& d = in.got[next];
      if (!d.unexpected) continue;
      in.accept(d, Inbox::into(d, d.bytes, kAlignments[next % kAlignments.size()]));
      ++next;
      return true;
    }
    return false;
  }
  void all() {
    while (one()) {
    }
  }
};

// ---------------------------------------------------------------------------------------------
// Non-overtaking

class MlNonOvertaking : public ::testing::TestWithParam<std::string> {};

// Every sequence of three protocols (so every ordered pair too) from three senders to one
// receiver, which lets its FIFOs fill up now and then so that adaptively routed packets overtake
// ordered ones, and takes every third message as unexpected.
TEST_P(MlNonOvertaking, EveryMixOfProtocolsArrivesInPostOrder) {
  InProcessJob job(fan_in(64, GetParam()));
  const Rank receiver = 3;
  Inbox in(job.ml(receiver), 1, [](Inbox&, Delivery& d) {
    if (d.test_header().seq % 3 == 2) return Inbox::later(d);
    return Inbox::into(d, d.bytes, d.test_header().seq % 32);
  });
  Acceptor acceptor{in};
  Outbox out;
  std::mt19937 rng(7);
  std::uint32_t posted = 0;
  for (Rank s = 0; s < 3; ++s) {
    std::uint32_t seq = 0;
    for (int mix = 0; mix < 64; ++mix) {
      const int m = (mix + 21 * static_cast<int>(s)) % 64;  // each sender its own order
      for (int k = 0; k < 3; ++k) {
        const Protocol p = kAllProtocols[(m >> (2 * k)) & 3];
        SendOptions o;
        o.protocol = p;
        o.offset = seq % 32;
        out.post(job.ml(s), receiver, seq, size_for(p, rng), message_key(s, receiver, seq), o);
        ++seq;
        ++posted;
      }
    }
  }
  // The senders run ahead of the receiver in bursts.
  int idle = 0;
  for (int round = 0; in.completed() < posted || !out.all_done(); ++round) {
    bool any = false;
    for (Rank s = 0; s < 3; ++s)
      for (int k = 0; k < 1 + round % 4; ++k)
        any |= job.ml(s).advance();
    if (round % 7 != 0) any |= job.ml(receiver).advance();
    if (round % 5 == 0) any |= acceptor.one();
    idle = any ? 0 : idle + 1;
    ASSERT_LT(idle, 5000) << "stalled: " << in.completed() << " of " << posted << " received";
  }
  EXPECT_EQ(in.arrived(), posted);
  EXPECT_TRUE(in_post_order(in));
  EXPECT_TRUE(contents_ok(in, receiver));
  const auto& s = job.ml(receiver).statistics();
  EXPECT_GT(s.unexpected_messages, 0u);
  // The test did make adaptive-eager data overtake their first packets.
  EXPECT_GT(s.early_adaptive_packets, 0u);
  for (Rank r = 0; r < 3; ++r)
    EXPECT_GT(job.ml(r).statistics().token_waits, 0u);
}

INSTANTIATE_TEST_SUITE_P(, MlNonOvertaking, ::testing::Values("heater", "vn"));

// The layer's own choice with adaptive eager on and a low eager limit, many small messages.
TEST(MlInProcessOrdering, AutomaticMixWithAdaptiveEagerKeepsOrder) {
  Config c;
  c.limits.adaptive_eager = true;
  c.limits.eager_limit = 2000;
  InProcessJob job(fan_in(16), c);
  Inbox in(job.ml(3), 1, [](Inbox&, Delivery& d) { return Inbox::into(d, d.bytes, 0); });
  Outbox out;
  std::mt19937 rng(3);
  std::uint32_t posted = 0;
  for (std::uint32_t seq = 0; seq < 300; ++seq) {
    for (Rank s = 0; s < 3; ++s) {
      const std::size_t size = rng() % 4 == 0 ? rng() % 5000 : rng() % 400;
      out.post(job.ml(s), 3, seq, size, message_key(s, 3, seq));
      ++posted;
    }
  }
  ASSERT_TRUE(job.run_until([&] { return in.completed() == posted && out.all_done(); }));
  EXPECT_TRUE(in_post_order(in));
  EXPECT_TRUE(contents_ok(in, 3));
  std::map<Protocol, int> seen;
  for (const auto& d : in.got)
    ++seen[d.protocol];
  EXPECT_EQ(seen.size(), 3u) << "one_packet, adaptive_eager and rendezvous all used";
  EXPECT_EQ(seen.count(Protocol::eager), 0u);
}

// ---------------------------------------------------------------------------------------------
// Unexpected messages

class MlUnexpectedEager : public ::testing::TestWithParam<Protocol> {};

TEST_P(MlUnexpectedEager, DataWaitInThePoolUntilAccepted) {
  const Protocol p = GetParam();
  // Smaller reception FIFOs for the multi-packet protocols: their senders meet backpressure too.
  InProcessJob job(fan_in(p == Protocol::one_packet ? 64 : 32));
  Inbox in(job.ml(3), 1, [](Inbox&, Delivery& d) { return Inbox::later(d); });
  Outbox out;
  std::mt19937 rng(5);
  std::size_t total = 0;
  for (std::uint32_t seq = 0; seq < 20; ++seq) {
    const std::size_t size = seq == 0 ? 0 : size_for(p, rng);
    SendOptions o;
    o.protocol = p;
    out.post(job.ml(seq % 3), 3, seq / 3, size, message_key(seq % 3, 3, seq / 3), o);
    total += size;
  }
  ASSERT_TRUE(job.run_until([&] {
    return in.arrived() == 20 && out.all_done() &&
           job.ml(3).statistics().protocol[static_cast<std::size_t>(p)].messages_received == 20;
  }));
  job.settle();
  const auto& s = job.ml(3).statistics();
  EXPECT_EQ(in.completed(), 0u) << "nothing completes before accept()";
  EXPECT_EQ(s.unexpected_messages, 20u);
  EXPECT_EQ(s.unexpected_depth, 20u);
  EXPECT_EQ(s.unexpected_depth_max, 20u);
  EXPECT_EQ(s.pool_bytes_max, total);
  EXPECT_EQ(s.pool_waits, 0u);
  for (Rank r = 0; r < 3; ++r)
    EXPECT_TRUE(job.ml(r).idle());
  // Accept in reverse order, into buffers, scatter lists and a truncating buffer; each
  // completes inside accept().
  for (std::size_t i = in.got.size(); i-- > 0;) {
    auto& d = in.got[i];
    const std::size_t before = in.completed();
    if (i % 3 == 0)
      in.accept(d, Inbox::into(d, d.bytes, i % 32));
    else if (i % 3 == 1)
      in.accept(d, Inbox::scatter(d, {d.bytes / 2, 0, d.bytes - d.bytes / 2}, 3));
    else
      in.accept(d, Inbox::into(d, d.bytes / 2, 17));
    EXPECT_EQ(in.completed(), before + 1) << describe(d);
  }
  EXPECT_EQ(s.unexpected_depth, 0u);
  EXPECT_TRUE(contents_ok(in, 3));
  EXPECT_TRUE(in_post_order(in));
}

INSTANTIATE_TEST_SUITE_P(, MlUnexpectedEager,
                         ::testing::Values(Protocol::one_packet, Protocol::eager,
                                           Protocol::adaptive_eager),
                         [](const auto& info) { return std::string(to_string(info.param)); });

TEST(MlInProcessUnexpected, RendezvousWaitsForAcceptThenGoesStraightToTheBuffer) {
  InProcessJob job(fan_in());
  Inbox in(job.ml(3), 1, [](Inbox&, Delivery& d) { return Inbox::later(d); });
  Outbox out;
  for (std::uint32_t seq = 0; seq < 3; ++seq) {
    SendOptions o;
    o.protocol = Protocol::rendezvous;
    o.notify_remote = true;
    out.post(job.ml(0), 3, seq, 100000 + seq, message_key(0, 3, seq), o);
  }
  ASSERT_TRUE(job.run_until([&] { return in.arrived() == 3; }));
  job.settle();
  const auto& rzv = job.ml(3).statistics().protocol[static_cast<std::size_t>(Protocol::rendezvous)];
  EXPECT_EQ(rzv.packets_received, 3u) << "only the scouts came";
  EXPECT_EQ(rzv.bytes_received, 0u);
  EXPECT_EQ(job.ml(3).statistics().pool_bytes_max, 0u) << "rendezvous data never use the pool";
  EXPECT_EQ(out.done_count(), 0u) << "the sender keeps its buffers until the receiver has a place";
  EXPECT_FALSE(job.ml(0).idle());
  // Out of order: the second, then the third, then the first.
  for (std::size_t i : {1u, 2u, 0u}) {
    auto& d = in.got[i];
    in.accept(d, Inbox::into(d, d.bytes, 11));
    ASSERT_TRUE(job.run_until([&] { return d.completions == 1 && out.sent[i].remote_done == 1; }));
    EXPECT_EQ(out.sent[i].done, 1);
  }
  EXPECT_TRUE(contents_ok(in, 3));
  job.settle();
  EXPECT_TRUE(job.ml(0).idle());
  EXPECT_EQ(rzv.messages_received, 3u);
}

TEST(MlInProcessUnexpected, AcceptWhileEagerDataAreStillArriving) {
  for (Protocol p : {Protocol::eager, Protocol::adaptive_eager}) {
    InProcessJob job(fan_in());
    Inbox in(job.ml(3), 1, [](Inbox&, Delivery& d) { return Inbox::later(d); });
    Outbox out;
    SendOptions o;
    o.protocol = p;
    out.post(job.ml(0), 3, 0, 100000, message_key(0, 3, 0), o);  // ~420 packets
    for (int i = 0; i < 3; ++i)
      job.ml(0).advance();
    job.ml(3).advance();  // takes at most 64 packets
    ASSERT_EQ(in.arrived(), 1u) << to_string(p);
    auto& d = in.got[0];
    in.accept(d, Inbox::scatter(d, {33333, 1, 66666}, 9));
    EXPECT_EQ(d.completions, 0) << "the rest of the data is still on its way";
    ASSERT_TRUE(job.run_until([&] { return d.completions == 1 && out.all_done(); }));
    EXPECT_TRUE(contents_ok(in, 3)) << to_string(p);
  }
}

// ---------------------------------------------------------------------------------------------
// Backpressure

// A pool of 4 KiB and 120 unexpected messages from three senders, accepted slowly: arrivals wait
// (the FIFOs stay blocked), nothing is lost, order holds, and the pool never exceeds its size.
TEST(MlInProcessBackpressure, TinyPoolManyUnexpectedMessagesAcceptedSlowly) {
  Config c;
  c.pool_bytes = 4096;
  InProcessJob job(fan_in(16), c);
  Inbox in(job.ml(3), 1, [](Inbox&, Delivery& d) { return Inbox::later(d); });
  Acceptor acceptor{in};
  Outbox out;
  std::mt19937 rng(11);
  std::uint32_t posted = 0;
  for (std::uint32_t seq = 0; seq < 40; ++seq) {
    for (Rank s = 0; s < 3; ++s) {
      const Protocol p = kAllProtocols[rng() % 4];
      const std::size_t size = p == Protocol::one_packet ? rng() % 221 : rng() % 4000;
      SendOptions o;
      o.protocol = p;
      out.post(job.ml(s), 3, seq, size, message_key(s, 3, seq), o);
      ++posted;
    }
  }
  int idle = 0;
  for (int round = 0; in.completed() < posted || !out.all_done(); ++round) {
    bool any = job.advance_all();
    if (round % 40 == 39) any |= acceptor.one();
    idle = any ? 0 : idle + 1;
    ASSERT_LT(idle, 5000) << "stalled: " << in.completed() << " of " << posted;
  }
  const auto& s = job.ml(3).statistics();
  EXPECT_EQ(in.arrived(), posted);
  EXPECT_EQ(s.unexpected_messages, posted);
  EXPECT_LE(s.pool_bytes_max, 4096u);
  EXPECT_GT(s.pool_waits, 0u) << "the pool did run full";
  EXPECT_TRUE(in_post_order(in));
  EXPECT_TRUE(contents_ok(in, 3));
  std::uint64_t sent_packets = 0, received_packets = 0;
  for (Protocol p : kAllProtocols) {
    for (Rank r = 0; r < 3; ++r)
      sent_packets += job.ml(r).statistics().protocol[static_cast<std::size_t>(p)].packets_sent;
    received_packets += s.protocol[static_cast<std::size_t>(p)].packets_received;
  }
  EXPECT_EQ(received_packets, sent_packets) << "no packet lost";
}

// A receive table of four entries and 60 unexpected eager messages from one sender.
TEST(MlInProcessBackpressure, FullReceiveTableMakesArrivalsWait) {
  for (Protocol p : {Protocol::one_packet, Protocol::eager, Protocol::adaptive_eager}) {
    Config c;
    c.max_receives = 4;
    InProcessJob job(fan_in(), c);
    Inbox in(job.ml(3), 1, [](Inbox&, Delivery& d) { return Inbox::later(d); });
    Acceptor acceptor{in};
    Outbox out;
    std::mt19937 rng(13);
    for (std::uint32_t seq = 0; seq < 60; ++seq) {
      SendOptions o;
      o.protocol = p;
      out.post(job.ml(1), 3, seq, size_for(p, rng), message_key(1, 3, seq), o);
    }
    job.settle();
    EXPECT_EQ(in.arrived(), 4u) << to_string(p);
    EXPECT_EQ(job.ml(3).statistics().unexpected_depth, 4u);
    EXPECT_GT(job.ml(3).statistics().table_waits, 0u);
    int idle = 0;
    for (int round = 0; in.completed() < 60 || !out.all_done(); ++round) {
      bool any = job.advance_all();
      if (round % 10 == 9) any |= acceptor.one();
      idle = any ? 0 : idle + 1;
      ASSERT_LT(idle, 5000) << to_string(p) << " stalled at " << in.completed();
    }
    EXPECT_LE(job.ml(3).statistics().unexpected_depth_max, 4u);
    EXPECT_TRUE(in_post_order(in));
    EXPECT_TRUE(contents_ok(in, 3));
  }
}

// Posting never blocks: 3000 messages queue up while the receiver sleeps, then all arrive.
TEST(MlInProcessBackpressure, PostNeverBlocksWhileTheReceiverSleeps) {
  InProcessJob job(fan_in(8));
  Inbox in(job.ml(3), 1, [](Inbox&, Delivery& d) { return Inbox::into(d, d.bytes, 0); });
  Outbox out;
  std::mt19937 rng(17);
  for (std::uint32_t seq = 0; seq < 1000; ++seq)
    for (Rank s = 0; s < 3; ++s)
      out.post(job.ml(s), 3, seq, rng() % 2000, message_key(s, 3, seq));
  for (int i = 0; i < 100; ++i)
    for (Rank s = 0; s < 3; ++s)
      job.ml(s).advance();
  EXPECT_EQ(in.arrived(), 0u);
  EXPECT_FALSE(job.ml(0).idle());
  ASSERT_TRUE(job.run_until([&] { return in.completed() == 3000 && out.all_done(); }));
  EXPECT_TRUE(in_post_order(in));
  EXPECT_TRUE(contents_ok(in, 3));
  job.settle();
  for (Rank r = 0; r < 4; ++r)
    EXPECT_TRUE(job.ml(r).idle());
}

// More rendezvous sends than the send table holds: scouts wait for fins of earlier ones.
TEST(MlInProcessBackpressure, RendezvousSendTableFull) {
  Config c;
  c.max_rendezvous = 2;
  InProcessJob job(fan_in(), c);
  Inbox in(job.ml(3), 1, [](Inbox&, Delivery& d) {
    if (d.test_header().seq % 4 == 1) return Inbox::later(d);
    return Inbox::into(d, d.bytes, 3);
  });
  Acceptor acceptor{in};
  Outbox out;
  for (std::uint32_t seq = 0; seq < 24; ++seq) {
    SendOptions o;
    o.protocol = seq % 3 == 2 ? Protocol::eager : Protocol::rendezvous;
    o.notify_remote = seq % 2 == 0;
    out.post(job.ml(0), 3, seq, 3000 + 1000 * seq, message_key(0, 3, seq), o);
  }
  ASSERT_TRUE(job.run_until([&] {
    acceptor.all();
    return in.completed() == 24 && out.all_done();
  }));
  EXPECT_TRUE(in_post_order(in));
  EXPECT_TRUE(contents_ok(in, 3));
  job.settle();
  EXPECT_TRUE(job.ml(0).idle());
}

// ---------------------------------------------------------------------------------------------
// Callbacks

// Ping-pong driven entirely from callbacks: the arrival handler of one side posts the reply, whose
// done callback re-posts the same SendMessage later; 100 round trips per protocol.
TEST(MlCallbacks, HandlersAndDoneCallbacksMayPost) {
  for (Protocol p : kAllProtocols) {
    InProcessJob job(fan_in(p == Protocol::one_packet ? 64 : 16));
    struct Side {
      MessageLayer* ml;
      Rank peer;
      SendMessage m;
      std::vector<std::byte> data, inbox;
      int received = 0, sent = 0;
      bool busy = false;  // m is posted
      int pending = 0;    // replies owed while m was busy
      void send() {
        busy = true;
        ++sent;
        ml->post(m);
      }
    };
    const std::size_t size = p == Protocol::one_packet ? 200 : 3000;
    Side side[2];
    for (int i = 0; i < 2; ++i) {
      Side& s = side[i];
      s.ml = &job.ml(i == 0 ? 0 : 3);
      s.peer = i == 0 ? 3 : 0;
      s.data.resize(size);
      fill_pattern(s.data, 50 + i);
      s.inbox.resize(size);
      s.m.dest = s.peer;
      s.m.handler = 5;
      s.m.protocol = p;
      s.m.data.buffer = s.data;
      s.m.context = &s;
      s.m.done = [](SendMessage& m) {
        auto& self = *static_cast<Side*>(m.context);
        self.busy = false;
        if (self.pending > 0) {
          --self.pending;
          self.send();  // re-post the same message from its own done callback
        }
      };
      s.ml->register_handler(
          5,
          [](void* ctx, const Arrival&) {
            auto& self = *static_cast<Side*>(ctx);
            return RecvTarget::into(
                self.inbox,
                [](void* c, std::uint32_t, std::size_t) {
                  auto& me = *static_cast<Side*>(c);
                  ++me.received;
                  // Rank 3 always answers; rank 0 stops at 100.
                  if (me.peer == 0 || me.received < 100) {
                    if (me.busy)
                      ++me.pending;
                    else
                      me.send();  // reply from the completion
                  }
                },
                ctx);
          },
          &s);
    }
    side[0].send();
    ASSERT_TRUE(job.run_until([&] { return side[0].received == 100 && side[1].received == 100; }))
        << to_string(p) << ": " << side[0].received << "/" << side[1].received;
    for (int i = 0; i < 2; ++i) {
      std::vector<std::byte> expected(size);
      fill_pattern(expected, 50 + (1 - i));
      EXPECT_EQ(side[i].inbox, expected);
    }
    job.settle();
    EXPECT_TRUE(job.ml(0).idle());
  }
}

TEST(MlCallbacks, RendezvousDoneThenRemoteDone) {
  InProcessJob job(fan_in());
  Inbox in(job.ml(3), 1, [](Inbox&, Delivery& d) { return Inbox::into(d, d.bytes, 0); });
  Outbox out;
  SendOptions o;
  o.protocol = Protocol::rendezvous;
  o.notify_remote = true;
  Outgoing& m = out.post(job.ml(0), 3, 0, 50000, message_key(0, 3, 0), o);
  bool remote_before_done = false, done_before_data = false;
  ASSERT_TRUE(job.run_until([&] {
    if (m.remote_done && !m.done) remote_before_done = true;
    if (m.done && job.ml(3)
                          .statistics()
                          .protocol[static_cast<std::size_t>(Protocol::rendezvous)]
                          .packets_received == 0)
      done_before_data = true;
    return m.remote_done == 1;
  }));
  EXPECT_FALSE(remote_before_done);
  EXPECT_FALSE(done_before_data);
  EXPECT_EQ(m.done, 1);
  EXPECT_EQ(in.completed(), 1u);
  EXPECT_TRUE(contents_ok(in, 3));
}

}  // namespace
}  // namespace bgl::message_layer::test
