// In-process tests of the message layer's error handling: bad input to post(), accept() and
// register_handler() is std::invalid_argument with a clear message and leaves the layer usable;
// forged or stray packets are discarded without calling a handler or corrupting a transfer; a
// lack of receive entries or pool space is backpressure for the source concerned, never loss.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "ml_harness.hpp"
#include "ml_in_process.hpp"
#include "slot_table.hpp"
#include "wire.hpp"

namespace bgl::message_layer::test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

template <class F>
std::string invalid_argument(F&& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected std::invalid_argument, got: " << e.what();
    return "";
  }
  ADD_FAILURE() << "expected std::invalid_argument";
  return "";
}

const JobSpec kNeighbours = {.ntasks = 2, .shape = "2x1x1"};

// ---------------------------------------------------------------------------------------------
// Bad input

TEST(MlInProcessErrors, BadPostsThrowInvalidArgumentAndLeaveTheLayerUsable) {
  Config forced;
  forced.limits.forced = Protocol::one_packet;
  InProcessJob job(kNeighbours);
  InProcessJob job_forced(kNeighbours, forced);
  std::vector<std::byte> data(1000), header(129);
  const iovec huge[] = {{nullptr, std::size_t{1} << 31}};  // never read: rejected first
  struct Case {
    const char* what;
    InProcessJob* job;
    std::function<void(SendMessage&)> set;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"rank = size", &job, [](SendMessage& m) { m.dest = 2; },
       "message to rank 2 of a 2-task job"},
      {"huge rank", &job, [](SendMessage& m) { m.dest = 1000000; },
       "message to rank 1000000 of a 2-task job"},
      {"max rank", &job, [](SendMessage& m) { m.dest = std::numeric_limits<Rank>::max(); },
       "message to rank 4294967295 of a 2-task job"},
      {"129-byte header", &job, [&](SendMessage& m) { m.header = header; },
       "user header of 129 bytes exceeds 128"},
      {"handler 64", &job, [](SendMessage& m) { m.handler = 64; }, "handler id must be below 64"},
      {"handler 255", &job, [](SendMessage& m) { m.handler = 255; }, "handler id must be below 64"},
      {"one-packet forced for the message", &job,
       [&](SendMessage& m) {
         m.protocol = Protocol::one_packet;
         m.data.buffer = std::span(data).first(229);
       },
       "one-packet protocol forced for 229 bytes; at most 228 fit with this header"},
      {"one-packet forced with a header", &job,
       [&](SendMessage& m) {
         m.protocol = Protocol::one_packet;
         m.header = std::span(header).first(100);
         m.data.buffer = std::span(data).first(129);
       },
       "one-packet protocol forced for 129 bytes; at most 128 fit with this header"},
      {"one-packet forced by the configuration", &job_forced,
       [&](SendMessage& m) { m.data.buffer = data; },
       "one-packet protocol forced for 1000 bytes; at most 228 fit with this header "
       "(BGL_ML_PROTOCOL=one_packet takes only messages that fit one packet: unset it, or force "
       "eager, rendezvous or adaptive_eager)"},
      {"one-packet forced, gather list", &job,
       [&](SendMessage& m) {
         m.protocol = Protocol::one_packet;
         m.data.iov = huge;
       },
       "one-packet protocol forced for 2147483648 bytes"},
      {"eager of 2 GiB", &job,
       [&](SendMessage& m) {
         m.protocol = Protocol::eager;
         m.data.iov = huge;
       },
       "eager protocols carry at most 2 GiB; use rendezvous"},
      {"adaptive eager of 2 GiB", &job,
       [&](SendMessage& m) {
         m.protocol = Protocol::adaptive_eager;
         m.data.iov = huge;
       },
       "eager protocols carry at most 2 GiB"},
  };
  for (const auto& c : cases) {
    SendMessage m;
    m.dest = 1;
    m.handler = 1;
    c.set(m);
    const auto what = invalid_argument([&] { c.job->ml(0).post(m); });
    EXPECT_THAT(what, HasSubstr(c.message)) << c.what;
    // Only a protocol the job forced names the variable that forced it.
    if (c.job == &job) {
      EXPECT_THAT(what, Not(HasSubstr("BGL_ML_PROTOCOL"))) << c.what;
    }
  }
  // Nothing was queued, and no message number was used up: valid messages still arrive, in order.
  for (InProcessJob* j : {&job, &job_forced}) {
    EXPECT_TRUE(j->ml(0).idle());
    Inbox in(j->ml(1), 1, [](Inbox&, Delivery& d) { return Inbox::into(d, d.bytes, 0); });
    Outbox out;
    for (std::uint32_t seq = 0; seq < 4; ++seq)
      out.post(j->ml(0), 1, seq, 50 * seq, message_key(0, 1, seq));
    ASSERT_TRUE(j->run_until([&] { return in.completed() == 4; }));
    for (std::uint32_t seq = 0; seq < 4; ++seq)
      EXPECT_EQ(in.got[seq].test_header().seq, seq);
  }
}

TEST(MlInProcessErrors, VirtualNodeProtocolOnlyToTheNodesOtherTaskAndContiguous) {
  InProcessJob vn({.ntasks = 4, .shape = "2x1x1", .mode = "vn"});  // ranks 0 and 2 share a node
  InProcessJob heater(kNeighbours);
  std::vector<std::byte> data(5000);
  const iovec list[] = {{data.data(), 2000}, {data.data() + 2000, 3000}};
  const std::string kMessage =
      "the virtual-node protocol needs a contiguous message to this node's other task in "
      "virtual-node mode";
  const auto post = [&](InProcessJob& job, Rank dest, bool gather) {
    SendMessage m;
    m.dest = dest;
    m.handler = 1;
    m.protocol = Protocol::virtual_node;
    if (gather)
      m.data.iov = list;
    else
      m.data.buffer = data;
    job.ml(0).post(m);
  };
  EXPECT_THAT(invalid_argument([&] { post(vn, 1, false); }), HasSubstr(kMessage)) << "another node";
  EXPECT_THAT(invalid_argument([&] { post(vn, 0, false); }), HasSubstr(kMessage)) << "oneself";
  EXPECT_THAT(invalid_argument([&] { post(vn, 2, true); }), HasSubstr(kMessage)) << "gather list";
  EXPECT_THAT(invalid_argument([&] { post(heater, 1, false); }), HasSubstr(kMessage)) << "heater";
  EXPECT_TRUE(vn.ml(0).idle());
}

TEST(MlInProcessErrors, RegisterHandlerOutOfRange) {
  InProcessJob job(kNeighbours);
  const ArrivalHandler h = [](void*, const Arrival&) { return RecvTarget::later(); };
  for (int id : {64, 100, 255})
    EXPECT_THAT(invalid_argument(
                    [&] { job.ml(0).register_handler(static_cast<HandlerId>(id), h, nullptr); }),
                HasSubstr("handler id must be below 64"));
  job.ml(0).register_handler(63, h, nullptr);
  job.ml(0).register_handler(0, h, nullptr);
}

TEST(MlInProcessErrors, AcceptOfAnUnknownOrUsedHandleIsRejected) {
  InProcessJob job(kNeighbours);
  Inbox in(job.ml(1), 1, [](Inbox&, Delivery& d) {
    if (d.test_header().seq == 0) return Inbox::later(d);
    return Inbox::into(d, d.bytes, 0);
  });
  const std::string kNotWaiting = "accept() of a message that is not waiting for a buffer";
  std::vector<std::byte> buffer(200000);
  const auto target = RecvTarget::into(buffer, nullptr, nullptr);
  // Nothing has arrived yet: every handle is unknown.
  for (std::uint32_t id : {0u, 1u, 12345u, 0xffffffffu})
    EXPECT_THAT(invalid_argument([&] { job.ml(1).accept(RecvHandle{id}, target); }),
                HasSubstr(kNotWaiting))
        << id;
  Outbox out;
  out.post(job.ml(0), 1, 0, 3000, message_key(0, 1, 0));  // unexpected
  SendOptions eager;
  eager.protocol = Protocol::eager;
  out.post(job.ml(0), 1, 1, 100000, message_key(0, 1, 1), eager);  // expected, long
  ASSERT_TRUE(job.run_until([&] { return in.arrived() == 2; }));
  auto& unexpected = in.got[0];
  auto& expected = in.got[1];
  ASSERT_EQ(expected.completions, 0) << "still receiving";
  // The handle of a message that has its destination already.
  EXPECT_THAT(invalid_argument([&] { job.ml(1).accept(RecvHandle{expected.handle}, target); }),
              HasSubstr(kNotWaiting));
  // later() is not a destination; the message stays acceptable.
  EXPECT_THAT(invalid_argument(
                  [&] { job.ml(1).accept(RecvHandle{unexpected.handle}, RecvTarget::later()); }),
              HasSubstr("accept() needs a destination"));
  in.accept(unexpected, Inbox::into(unexpected, unexpected.bytes, 3));
  ASSERT_TRUE(job.run_until([&] { return in.completed() == 2; }));
  EXPECT_EQ(unexpected.completions, 1);
  // Accepted once: the handle is used up, also after its slot was reused by a later message.
  EXPECT_THAT(invalid_argument([&] { job.ml(1).accept(RecvHandle{unexpected.handle}, target); }),
              HasSubstr(kNotWaiting));
  out.post(job.ml(0), 1, 2, 10, message_key(0, 1, 2));
  ASSERT_TRUE(job.run_until([&] { return in.completed() == 3; }));
  EXPECT_THAT(invalid_argument([&] { job.ml(1).accept(RecvHandle{unexpected.handle}, target); }),
              HasSubstr(kNotWaiting));
  EXPECT_THAT(invalid_argument([&] { job.ml(1).accept(RecvHandle{expected.handle}, target); }),
              HasSubstr(kNotWaiting));
}

// ---------------------------------------------------------------------------------------------
// Forged and stray packets

class Forger {
 public:
  Forger(InProcessJob& job, Rank from, Rank to) : job_(job), from_(from), to_(to) {}
  void send(std::uint8_t type, std::uint32_t word, std::span<const std::byte> payload = {}) {
    packet_layer::PacketSpec spec{
        .dest = job_.ep(from_).destination_of(to_), .dispatch = type, .word = word};
    while (job_.ep(from_).inject(0, spec, payload) == packet_layer::InjectStatus::full)
      job_.advance_all();
  }
  void first(std::uint8_t type, std::uint32_t word, wire::First f, std::size_t header,
             std::size_t data) {
    std::vector<std::byte> p(sizeof f + header + data);
    std::memcpy(p.data(), &f, sizeof f);
    send(type, word, p);
  }

 private:
  InProcessJob& job_;
  Rank from_, to_;
};

wire::First first_of(std::uint8_t handler, std::uint8_t header, std::uint16_t seq,
                     std::uint64_t bytes) {
  return {handler, header, seq, static_cast<std::uint32_t>(bytes),
          static_cast<std::uint32_t>(bytes >> 32)};
}

// Rank 2 has no message layer; it injects packets with the message layer's types that no correct
// sender would send. Rank 1 must drop them all, call no handler, and go on working.
TEST(MlRobustness, ForgedPacketsAreDiscardedAndTheLayerCarriesOn) {
  QuietLog quiet;
  InProcessJob job({.ntasks = 3, .shape = "3x1x1"}, Config{}, std::vector<Rank>{0, 1});
  Inbox in(job.ml(1), 1, [](Inbox&, Delivery& d) {
    if (d.test_header().seq == 0) return Inbox::later(d);
    return Inbox::into(d, d.bytes, 0);
  });
  Inbox back(job.ml(0), 1, [](Inbox&, Delivery& d) { return Inbox::into(d, d.bytes, 0); });
  Forger forge(job, 2, 1);
  const std::byte five[5] = {};
  forge.send(0, 0);  // not a message-layer type
  forge.send(11, 0);
  forge.send(200, 0, five);
  forge.send(wire::kOnePacket, 0, five);                           // shorter than the First record
  forge.first(wire::kOnePacket, 0, first_of(1, 200, 0, 0), 0, 0);  // header beyond the packet
  forge.first(wire::kOnePacket, 0, first_of(7, 0, 0, 0), 0, 0);    // no such handler
  forge.first(wire::kOnePacket, 0, first_of(1, 0, 0, 50), 0, 10);  // 10 data bytes, claims 50
  forge.first(wire::kOnePacket, 0, first_of(1, 0, 5, 0), 0, 0);    // out of sequence
  forge.first(wire::kScout, 0, first_of(1, 0, 0, 1000), 0, 8);     // a scout with data
  forge.first(wire::kEagerFirst, 0, first_of(1, 0, 0, 100), 0, 200);  // more data than the message
  forge.first(wire::kAeFirst, wire::kParityBit, first_of(1, 0, 0, 500), 0, 100);  // wrong parity
  forge.send(wire::kEagerData, 0, five);                   // no eager message in progress
  forge.send(wire::kAeData, wire::kParityBit | 16, five);  // out of turn
  forge.send(wire::kRzvAck, 0, five);                      // wrong size
  const wire::Ack ack{12345, 678};
  forge.send(wire::kRzvAck, 0, std::as_bytes(std::span(&ack, 1)));  // for no send
  forge.send(wire::kRzvData, 12345, five);                          // for no receive
  forge.send(wire::kRzvFin, 777);                                   // for no send
  forge.send(wire::kAeToken, 0);                                    // never lent
  job.settle();
  EXPECT_EQ(in.arrived(), 0u) << "no handler call for a forged message";

  // A real rendezvous from rank 0, unexpected at first: forged data for its receive slot, before
  // and after accept(), must not land in it.
  Outbox out;
  SendOptions rzv;
  rzv.protocol = Protocol::rendezvous;
  out.post(job.ml(0), 1, 0, 5000, message_key(0, 1, 0), rzv);
  ASSERT_TRUE(job.run_until([&] { return in.arrived() == 1; }));
  const std::uint32_t slot = in.got[0].handle;
  std::vector<std::byte> junk(4 + 236, std::byte{0x66});  // chunk 0, all 0x66
  forge.send(wire::kRzvData, slot, junk);
  job.settle();
  in.accept(in.got[0], Inbox::into(in.got[0], 5000, 0));
  forge.send(wire::kRzvData, slot, junk);
  ASSERT_TRUE(job.run_until([&] { return in.completed() == 1; }));
  for (int i = 0; i < 50; ++i)
    forge.send(wire::kRzvData, slot, junk);
  job.settle();
  // Every protocol still works both ways.
  std::uint32_t seq = 1;
  for (Protocol p :
       {Protocol::one_packet, Protocol::eager, Protocol::rendezvous, Protocol::adaptive_eager}) {
    SendOptions o;
    o.protocol = p;
    const std::size_t size = p == Protocol::one_packet ? 200 : 3000;
    out.post(job.ml(0), 1, seq, size, message_key(0, 1, seq), o);
    out.post(job.ml(1), 0, seq - 1, size, message_key(1, 0, seq - 1), o);
    ++seq;
  }
  ASSERT_TRUE(job.run_until([&] { return in.completed() == 5 && back.completed() == 4; }));
  for (const auto& d : in.got) {
    EXPECT_EQ(d.source, 0u);
    EXPECT_EQ(d.completed_bytes, d.bytes);
    EXPECT_EQ(find_mismatch(d.contents(), message_key(0, 1, d.test_header().seq)), kNoMismatch)
        << describe(d);
  }
  for (const auto& d : back.got)
    EXPECT_EQ(find_mismatch(d.contents(), message_key(1, 0, d.test_header().seq)), kNoMismatch);
  EXPECT_EQ(job.ep(1).counters().malformed, 0u) << "the packet layer found nothing wrong";
}

// ---------------------------------------------------------------------------------------------
// Resources: backpressure per source, never loss

// MessageLayer::Engine::match used to reserve pool space for every one-packet, eager and
// adaptive-eager message *before* asking the arrival handler, so a message whose handler gives it
// a buffer still waited for the unexpected pool: one larger than BGL_ML_POOL_BYTES was never
// matched (the job hung). Now the handler is asked first and only "later" is charged to the pool.
TEST(MlResources, ExpectedEagerMessageLargerThanThePoolIsDelivered) {
  for (Protocol p : {Protocol::eager, Protocol::adaptive_eager, Protocol::one_packet}) {
    Config c;
    c.pool_bytes = p == Protocol::one_packet ? 100 : 1000;
    InProcessJob job(kNeighbours, c);
    Inbox in(job.ml(1), 1, [](Inbox&, Delivery& d) { return Inbox::into(d, d.bytes, 0); });
    Outbox out;
    SendOptions o;
    o.protocol = p;
    out.post(job.ml(0), 1, 0, p == Protocol::one_packet ? 200 : 5000, message_key(0, 1, 0), o);
    EXPECT_TRUE(job.run_until([&] { return in.completed() == 1; }))
        << to_string(p) << ": an expected message bigger than the unexpected pool never arrives";
  }
}

// Rank 1 waits for rank 2's message before it accepts the two unexpected messages from rank 0
// that filled its pool; rank 2's message, which has a buffer, must not be held back (it used to
// be: same cause as above).
TEST(MlResources, ExpectedMessageIsNotHeldBackByAFullPool) {
  Config c;
  c.pool_bytes = 4096;
  InProcessJob job({.ntasks = 3, .shape = "3x1x1"}, c);
  Inbox in(job.ml(1), 1, [](Inbox&, Delivery& d) {
    if (d.source == 0) return Inbox::later(d);
    return Inbox::into(d, d.bytes, 0);
  });
  Outbox out;
  for (std::uint32_t seq = 0; seq < 2; ++seq)
    out.post(job.ml(0), 1, seq, 2000, message_key(0, 1, seq));
  ASSERT_TRUE(job.run_until([&] { return in.arrived() == 2; }));
  out.post(job.ml(2), 1, 0, 500, message_key(2, 1, 0));
  EXPECT_TRUE(job.run_until([&] { return in.completed() == 1; }))
      << "rank 2's expected 500-byte message waits for pool space it does not need";
}

// receive_some used to block a whole reception FIFO when a first packet found the receive table
// full (BGL_ML_MAX_RECVS), but the packets that would free a table entry (the data of the
// messages being received) queue in the same FIFO behind it: with one entry, a second rendezvous
// from a neighbour deadlocked the pair. Now the first packet waits in its source's stall queue.
TEST(MlResources, FullReceiveTableDoesNotDeadlockRendezvous) {
  Config c;
  c.max_receives = 1;
  InProcessJob job(kNeighbours, c);
  Inbox in(job.ml(1), 1, [](Inbox&, Delivery& d) { return Inbox::into(d, d.bytes, 0); });
  Outbox out;
  SendOptions o;
  o.protocol = Protocol::rendezvous;
  for (std::uint32_t seq = 0; seq < 2; ++seq)
    out.post(job.ml(0), 1, seq, 10000, message_key(0, 1, seq), o);
  EXPECT_TRUE(job.run_until([&] { return in.completed() == 2; }))
      << "completed " << in.completed() << " of 2 rendezvous messages with a 1-entry table";
}

// Every message of `in` arrived whole, in posting order per source, with the contents it was sent.
void expect_intact(const Inbox& in) {
  std::map<Rank, std::uint32_t> next;
  for (const auto& d : in.got) {
    EXPECT_EQ(d.test_header().seq, next[d.source]++) << "order: " << describe(d);
    EXPECT_EQ(d.completions, 1) << describe(d);
    EXPECT_EQ(d.completed_bytes, d.bytes) << describe(d);
    EXPECT_EQ(find_mismatch(d.contents(), message_key(d.source, 1, d.test_header().seq)),
              kNoMismatch)
        << describe(d);
    EXPECT_TRUE(d.guards_intact()) << describe(d);
  }
}

// Many rendezvous messages queue up behind a one-entry receive table: their scouts wait in the
// source's stall queue (not in the FIFO the data come through) and are matched one by one.
TEST(MlResources, ManyRendezvousThroughAOneEntryTable) {
  Config c;
  c.max_receives = 1;
  InProcessJob job({.ntasks = 3, .shape = "3x1x1"}, c);
  Inbox in(job.ml(1), 1, [](Inbox&, Delivery& d) { return Inbox::into(d, d.bytes, 3); });
  Outbox out;
  SendOptions o;
  o.protocol = Protocol::rendezvous;
  for (std::uint32_t seq = 0; seq < 12; ++seq) {
    out.post(job.ml(0), 1, seq, 3000 + 7 * seq, message_key(0, 1, seq), o);
    out.post(job.ml(2), 1, seq, 2000 + 5 * seq, message_key(2, 1, seq), o);
  }
  ASSERT_TRUE(job.run_until([&] { return in.completed() == 24 && out.all_done(); }));
  expect_intact(in);
  const auto& st = job.ml(1).statistics();
  EXPECT_GT(st.table_waits, 0u);
  EXPECT_GT(st.held_packets_max, 0u);
  EXPECT_EQ(st.held_packets, 0u);
}

// Unexpected messages beyond the pool: the one that does not fit has had its handler called; it
// and everything its source sent after it wait (in order) until pool space frees up. Another
// source's expected message is not held back meanwhile.
TEST(MlResources, UnexpectedBeyondThePoolWaitsForPoolSpaceInOrder) {
  for (Protocol p : {Protocol::eager, Protocol::one_packet}) {
    SCOPED_TRACE(to_string(p));
    Config c;
    const std::size_t size = p == Protocol::one_packet ? 200 : 2000;
    // Room for two messages per task (a virtual-node task has half of the node's pool).
    c.pool_bytes = 2 * size * (default_node_mode() == "vn" ? 2 : 1);
    InProcessJob job({.ntasks = 3, .shape = "3x1x1"}, c);
    Inbox in(job.ml(1), 1, [](Inbox&, Delivery& d) {
      if (d.source == 0 && d.test_header().seq < 3) return Inbox::later(d);
      return Inbox::into(d, d.bytes, 1);
    });
    Outbox out;
    SendOptions o;
    o.protocol = p;
    for (std::uint32_t seq = 0; seq < 5; ++seq)  // 0..2 unexpected, 3 and 4 expected
      out.post(job.ml(0), 1, seq, size, message_key(0, 1, seq), o);
    ASSERT_TRUE(job.run_until([&] { return in.arrived() == 3; }));
    job.settle();
    EXPECT_EQ(in.arrived(), 3u) << "message 3 must not overtake message 2, which waits";
    EXPECT_EQ(job.ml(1).statistics().pool_bytes_in_use, 2 * size);
    EXPECT_GE(job.ml(1).statistics().pool_waits, 1u);
    out.post(job.ml(2), 1, 0, 700, message_key(2, 1, 0));
    ASSERT_TRUE(job.run_until([&] { return in.completed() == 1; }))
        << "another source's expected message is held back";
    EXPECT_EQ(in.got.back().source, 2u);
    // Accepting message 0 frees pool space: message 2 takes it, 3 and 4 follow.
    in.accept(in.got[0], Inbox::into(in.got[0], size, 2));
    ASSERT_TRUE(job.run_until([&] { return in.arrived() == 6 && in.completed() == 4; }));
    in.accept(in.got[1], Inbox::into(in.got[1], size, 0));
    in.accept(in.got[2], Inbox::into(in.got[2], size, 5));
    ASSERT_TRUE(job.run_until([&] { return in.completed() == 6 && out.all_done(); }));
    expect_intact(in);
    EXPECT_EQ(job.ml(1).statistics().pool_bytes_in_use, 0u);
    EXPECT_EQ(job.ml(1).statistics().held_packets, 0u);
  }
}

// A message waiting for pool space that the receiver accepts goes straight to its destination.
// Adaptive eager too: its data (which overtake nothing here but may arrive early) are staged
// until then, and the token goes back only when it is complete.
TEST(MlResources, AcceptingAMessageThatWaitsForPoolSpaceDeliversIt) {
  for (Protocol p : {Protocol::eager, Protocol::adaptive_eager, Protocol::one_packet}) {
    SCOPED_TRACE(to_string(p));
    Config c;
    c.pool_bytes = 100;  // smaller than every message
    InProcessJob job(kNeighbours, c);
    Inbox in(job.ml(1), 1, [](Inbox&, Delivery& d) { return Inbox::later(d); });
    Outbox out;
    SendOptions o;
    o.protocol = p;
    const std::size_t size = p == Protocol::one_packet ? 150 : 5000;
    for (std::uint32_t seq = 0; seq < 3; ++seq)
      out.post(job.ml(0), 1, seq, size + seq, message_key(0, 1, seq), o);
    for (std::uint32_t seq = 0; seq < 3; ++seq) {
      ASSERT_TRUE(job.run_until([&] { return in.arrived() == seq + 1; })) << seq;
      job.settle();
      EXPECT_EQ(in.arrived(), seq + 1) << "later messages wait behind the one without pool";
      in.accept(in.got[seq], Inbox::into(in.got[seq], size + seq, seq));
      ASSERT_TRUE(job.run_until([&] { return in.completed() == seq + 1; })) << seq;
    }
    ASSERT_TRUE(job.run_until([&] { return out.all_done(); }));
    expect_intact(in);
    EXPECT_EQ(job.ml(1).statistics().pool_bytes_max, 0u);
    EXPECT_EQ(job.ml(1).statistics().pool_waits, 3u);
  }
}

// The stall queues are bounded (BGL_ML_HOLD_PACKETS): beyond them packets stay in their FIFO
// (backpressure), and everything still arrives once the receiver accepts.
TEST(MlResources, FullStallQueuesAreBackpressureNotLoss) {
  Config c;
  c.pool_bytes = 1000;
  c.hold_packets = 4;
  InProcessJob job({.ntasks = 3, .shape = "3x1x1"}, c);
  Inbox in(job.ml(1), 1, [](Inbox&, Delivery& d) { return Inbox::later(d); });
  Outbox out;
  for (std::uint32_t seq = 0; seq < 6; ++seq) {
    out.post(job.ml(0), 1, seq, 3000, message_key(0, 1, seq));  // eager, 13 packets each
    out.post(job.ml(2), 1, seq, 150, message_key(2, 1, seq));
  }
  job.settle();
  const auto& st = job.ml(1).statistics();
  EXPECT_LE(st.held_packets_max, 4u);
  EXPECT_GT(st.hold_full_waits, 0u);
  // Accept everything that has arrived, repeatedly, until all twelve are complete.
  std::size_t accepted = 0;
  ASSERT_TRUE(job.run_until([&] {
    for (; accepted < in.arrived(); ++accepted) {
      Delivery& d = in.got[accepted];
      in.accept(d, Inbox::into(d, d.bytes, accepted % 8));
    }
    return in.completed() == 12;
  }));
  expect_intact(in);
  EXPECT_EQ(st.held_packets, 0u);
}

// idle() used to look only at the destinations that may send, so it said true while a posted
// message waited for the adaptive-eager token (fixed: the engine counts queued messages).
TEST(MlRegressions, NotIdleWhileAMessageWaitsForTheAdaptiveEagerToken) {
  InProcessJob job(kNeighbours);
  Inbox in(job.ml(1), 1, [](Inbox&, Delivery& d) { return Inbox::into(d, d.bytes, 0); });
  Outbox out;
  SendOptions ae;
  ae.protocol = Protocol::adaptive_eager;
  out.post(job.ml(0), 1, 0, 1000, message_key(0, 1, 0), ae);
  Outgoing& second = out.post(job.ml(0), 1, 1, 100, message_key(0, 1, 1));
  for (int i = 0; i < 10; ++i)
    job.ml(0).advance();  // the receiver does not run
  ASSERT_EQ(second.done, 0) << "waits for the token";
  EXPECT_FALSE(job.ml(0).idle()) << "a posted message has not been sent";
  ASSERT_TRUE(job.run_until([&] { return in.completed() == 2; }));
  job.settle();
  EXPECT_TRUE(job.ml(0).idle());
}

// Statistics::pool_bytes_in_use used to stay 0 and was missing from to_json() (fixed).
TEST(MlRegressions, PoolBytesInUseReportsTheUnexpectedDataHeld) {
  InProcessJob job(kNeighbours);
  Inbox in(job.ml(1), 1, [](Inbox&, Delivery& d) { return Inbox::later(d); });
  Outbox out;
  out.post(job.ml(0), 1, 0, 3000, message_key(0, 1, 0));
  out.post(job.ml(0), 1, 1, 200, message_key(0, 1, 1));
  ASSERT_TRUE(job.run_until([&] { return in.arrived() == 2; }));
  job.settle();
  EXPECT_EQ(job.ml(1).statistics().pool_bytes_max, 3200u);
  EXPECT_EQ(job.ml(1).statistics().pool_bytes_in_use, 3200u);
  const auto j = nlohmann::json::parse(job.ml(1).statistics().to_json());
  EXPECT_TRUE(j.contains("pool_bytes_in_use")) << j.dump();
  in.accept(in.got[0], Inbox::into(in.got[0], 3000, 0));
  EXPECT_EQ(job.ml(1).statistics().pool_bytes_in_use, 200u);
}

// Acks and fins used to be matched by slot id alone: a stray fin from another task completed a
// rendezvous send (remote_done) before the receiver had the data (fixed: they must come from the
// send's destination).
TEST(MlRegressions, RendezvousFinFromAnotherTaskIsIgnored) {
  QuietLog quiet;
  InProcessJob job({.ntasks = 3, .shape = "3x1x1"}, Config{}, std::vector<Rank>{0, 1});
  Inbox in(job.ml(1), 1, [](Inbox&, Delivery& d) { return Inbox::later(d); });
  Outbox out;
  SendOptions o;
  o.protocol = Protocol::rendezvous;
  o.notify_remote = true;
  Outgoing& m = out.post(job.ml(0), 1, 0, 5000, message_key(0, 1, 0), o);
  ASSERT_TRUE(job.run_until([&] { return in.arrived() == 1; }));
  // The first slot of a fresh table has id 0 (SlotTable hands out index 0, generation 0 first).
  Forger(job, 2, 0).send(wire::kRzvFin, 0);
  job.settle();
  EXPECT_EQ(m.remote_done, 0) << "remote_done before the receiver even accepted the message";
  in.accept(in.got[0], Inbox::into(in.got[0], 5000, 0));
  EXPECT_TRUE(job.run_until([&] { return m.remote_done == 1 && in.completed() == 1; }));
}

// The tables behind receive and rendezvous ids: slots are made when first needed (a fresh table
// touches none of its storage), handed out in index order, reused last-released first with a new
// generation, so that an old id finds nothing; pointers stay valid while the table grows.
TEST(MlSlotTable, SlotsAreMadeWhenNeededAndReleasedIdsGoStale) {
  SlotTable<int> t(3);
  EXPECT_EQ(t.in_use(), 0u);
  EXPECT_FALSE(t.full());
  EXPECT_EQ(t.find(0), nullptr);  // never made
  std::uint32_t a = 9, b = 9, c = 9, d = 9;
  ASSERT_TRUE(t.acquire(a));
  ASSERT_TRUE(t.acquire(b));
  ASSERT_TRUE(t.acquire(c));
  EXPECT_EQ(a, 0u);
  EXPECT_EQ(b, 1u);
  EXPECT_EQ(c, 2u);
  EXPECT_TRUE(t.full());
  EXPECT_FALSE(t.acquire(d));
  EXPECT_EQ(t.acquire_as_is(d), nullptr);
  *t.find(b) = 7;
  t.release(b);
  EXPECT_EQ(t.find(b), nullptr);
  EXPECT_FALSE(t.full());
  EXPECT_EQ(t.in_use(), 2u);
  ASSERT_TRUE(t.acquire(d));
  EXPECT_EQ(d & (SlotTable<int>::kMaxCapacity - 1), 1u);
  EXPECT_NE(d, b);
  EXPECT_EQ(*t.find(d), 0);  // acquire() resets the value
  t.release(d);
  std::uint32_t e = 0;
  ASSERT_NE(t.acquire_as_is(e), nullptr);
  EXPECT_EQ(*t.find(e), 0);  // as the last user left it

  SlotTable<std::uint64_t> big(1000);
  std::uint32_t first = 0;
  ASSERT_TRUE(big.acquire(first));
  std::uint64_t* at = big.find(first);
  for (int i = 1; i < 1000; ++i) {
    std::uint32_t id = 0;
    ASSERT_TRUE(big.acquire(id));
  }
  EXPECT_TRUE(big.full());
  EXPECT_EQ(big.find(first), at);
}

// ---------------------------------------------------------------------------------------------
// Regressions

// Rendezvous acks used to name FIFO group 0 for the data, but a virtual-node task with t = 1
// receives on group 1: its rendezvous data went to the node's other task, which dropped them, and
// the message never completed (fixed in ea220c0). From a neighbour node and from the node's
// other task.
TEST(MlRegressions, RendezvousToTheSecondTaskOfAVirtualNodeArrives) {
  QuietLog quiet;
  for (const char* mapping : {"0 0 0 0\n1 0 0 1\n", "0 0 0 0\n0 0 0 1\n"}) {
    InProcessJob job({.ntasks = 2, .shape = "2x1x1", .mode = "vn", .mapping_text = mapping});
    ASSERT_EQ(job.machine().mapping().location(1).t, 1);
    Inbox in(job.ml(1), 1, [](Inbox&, Delivery& d) { return Inbox::into(d, d.bytes, 0); });
    Outbox out;
    SendOptions o;
    o.protocol = Protocol::rendezvous;
    out.post(job.ml(0), 1, 0, 1000, message_key(0, 1, 0), o);
    EXPECT_TRUE(job.run_until([&] { return in.completed() == 1 && out.all_done(); }))
        << "rank 1 (t = 1) never gets the data of a rendezvous from rank " << mapping;
  }
}

// ---------------------------------------------------------------------------------------------
// Foreign packets: a component sharing the endpoint (the collectives' deposit-bit lines)

TEST(MlForeignPackets, RegisteredDispatchIdsReachTheirHandlerOnEveryNodeOfALine) {
  QuietLog quiet;
  InProcessJob job({.ntasks = 3, .shape = "3x1x1"});
  struct Got {
    std::vector<std::pair<std::uint32_t, std::vector<std::byte>>> packets;  // (word, payload)
    std::uint32_t source = 99;
  };
  Got got[3];
  const MessageLayer::PacketHandler take = [](void* ctx, const packet_layer::PacketHeader& h,
                                              std::span<const std::byte> payload) {
    auto& g = *static_cast<Got*>(ctx);
    g.source = h.source_rank();
    g.packets.push_back({h.word, {payload.begin(), payload.end()}});
  };
  for (int id : {0, 15, 32, 255})
    EXPECT_THAT(invalid_argument([&] {
                  job.ml(1).register_packet_handler(static_cast<std::uint8_t>(id), take, nullptr);
                }),
                HasSubstr("dispatch ids 16..31"));
  for (Rank r : {1u, 2u})
    job.ml(r).register_packet_handler(MessageLayer::kForeignDispatchFirst, take, &got[r]);

  packet_layer::Endpoint& ep = job.ml(0).endpoint();
  EXPECT_EQ(&ep, &job.ep(0));
  const std::byte data[3] = {std::byte{1}, std::byte{2}, std::byte{3}};
  // A deposit-bit line from node 0 through node 1 to node 2, and an unregistered id to node 1.
  packet_layer::PacketSpec line{.dest = ep.destination_of(2), .dispatch = 16, .word = 42};
  line.deposit_line = torus_emu::Direction::x_plus;
  ASSERT_EQ(ep.inject(0, line, data), packet_layer::InjectStatus::ok);
  const packet_layer::PacketSpec stray{.dest = ep.destination_of(1), .dispatch = 17, .word = 7};
  ASSERT_EQ(ep.inject(0, stray, data), packet_layer::InjectStatus::ok);
  ASSERT_TRUE(
      job.run_until([&] { return got[1].packets.size() == 1 && got[2].packets.size() == 1; }));
  job.settle();
  for (Rank r : {1u, 2u}) {
    ASSERT_EQ(got[r].packets.size(), 1u) << "rank " << r << ": the stray id is not delivered";
    EXPECT_EQ(got[r].source, 0u);
    EXPECT_EQ(got[r].packets[0].first, 42u);
    EXPECT_EQ(got[r].packets[0].second, std::vector<std::byte>(data, data + 3));
  }
  EXPECT_EQ(job.ep(0).counters().deposit_copies, 1u);
  // The layer carries on with its own messages.
  Inbox in(job.ml(1), 1, [](Inbox&, Delivery& d) { return Inbox::into(d, d.bytes, 0); });
  Outbox out;
  out.post(job.ml(0), 1, 0, 3000, message_key(0, 1, 0), SendOptions{});
  ASSERT_TRUE(job.run_until([&] { return in.completed() == 1; }));
  EXPECT_EQ(find_mismatch(in.got[0].contents(), message_key(0, 1, 0)), kNoMismatch);
}

}  // namespace
}  // namespace bgl::message_layer::test
