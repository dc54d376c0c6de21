// Unit tests of the message layer's configuration: protocol names, the size thresholds that choose
// a protocol, the BGL_ML_* environment, and the statistics' JSON form.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "bgl/message_layer/bgl_msg.h"
#include "bgl/message_layer/message_layer.hpp"
#include "bgl/torus_emu/error.hpp"
#include "ml_in_process.hpp"
#include "protocols/protocol_ops.hpp"

namespace bgl::message_layer::test {
namespace {

using ::testing::HasSubstr;

constexpr const char* kMlVariables[] = {"BGL_ML_PROTOCOL",    "BGL_ML_ADAPTIVE_EAGER",
                                        "BGL_ML_EAGER_LIMIT", "BGL_ML_POOL_BYTES",
                                        "BGL_ML_MAX_RECVS",   "BGL_ML_MAX_RZV"};

// Clears every BGL_ML_* variable for the test's duration.
class CleanEnv : public ScopedEnv {
 public:
  CleanEnv() {
    for (const char* v : kMlVariables)
      unset(v);
  }
};

template <class F>
std::string config_error(F&& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a ConfigError";
  return "";
}

SendMessage message_of(std::size_t data_bytes, std::size_t header_bytes) {
  static std::vector<std::byte> storage(1 << 20);
  SendMessage m;
  m.dest = 1;
  m.header = std::span<const std::byte>(storage.data(), header_bytes);
  m.data.buffer = std::span<const std::byte>(storage.data(), data_bytes);
  return m;
}

// ---------------------------------------------------------------------------------------------
// Names

TEST(MlProtocolNames, RoundTripAndAliases) {
  for (int i = 0; i < kProtocols; ++i) {
    const auto p = static_cast<Protocol>(i);
    EXPECT_EQ(parse_protocol(to_string(p)), p) << to_string(p);
  }
  EXPECT_EQ(to_string(Protocol::one_packet), "one_packet");
  EXPECT_EQ(to_string(Protocol::eager), "eager");
  EXPECT_EQ(to_string(Protocol::rendezvous), "rendezvous");
  EXPECT_EQ(to_string(Protocol::adaptive_eager), "adaptive_eager");
  EXPECT_EQ(parse_protocol("one-packet"), Protocol::one_packet);
  EXPECT_EQ(parse_protocol("onepacket"), Protocol::one_packet);
  EXPECT_EQ(parse_protocol("rzv"), Protocol::rendezvous);
  EXPECT_EQ(parse_protocol("adaptive-eager"), Protocol::adaptive_eager);
  EXPECT_EQ(parse_protocol("ae"), Protocol::adaptive_eager);
  EXPECT_EQ(parse_protocol("vn"), Protocol::virtual_node);
  EXPECT_EQ(parse_protocol("virtual-node"), Protocol::virtual_node);
  EXPECT_EQ(to_string(Protocol::virtual_node), "virtual_node");
  for (const char* bad : {"", "EAGER", "fast", "one_packet ", "rendezvous2"})
    EXPECT_EQ(parse_protocol(bad), std::nullopt) << "'" << bad << "'";
}

// The one list: every protocol once, at its enumerator's index, with its own first packet type
// and no packet type claimed twice (the engine's dispatch tables are built from it).
TEST(MlProtocolTable, EveryProtocolOnceAtItsIndexWithItsOwnPacketTypes) {
  std::set<std::uint8_t> types;
  for (int i = 0; i < kProtocols; ++i) {
    const ProtocolOps& ops = *kProtocolTable[static_cast<std::size_t>(i)];
    EXPECT_EQ(static_cast<int>(ops.id), i);
    EXPECT_EQ(to_string(ops.id), ops.name);
    EXPECT_EQ(parse_protocol(ops.name), ops.id);
    for (std::string_view alias : ops.aliases)
      if (!alias.empty()) {
        EXPECT_EQ(parse_protocol(alias), ops.id) << alias;
      }
    EXPECT_TRUE(ops.check_post && ops.send && ops.check_first && ops.start && ops.accepted &&
                ops.complete)
        << ops.name;
    EXPECT_EQ(ops.slotted, ops.send_data != nullptr) << ops.name;
    EXPECT_TRUE(types.insert(ops.first_packet).second) << ops.name;
    for (const PacketOps& p : ops.packets) {
      EXPECT_TRUE(types.insert(p.type).second) << ops.name << " packet " << int{p.type};
      EXPECT_LT(p.type, MessageLayer::kForeignDispatchFirst);
    }
  }
  EXPECT_EQ(protocol_names(), "one_packet, eager, rendezvous, adaptive_eager or virtual_node");
}

TEST(MlProtocolNames, CEnumeratorsMatchTheCxxProtocols) {
  EXPECT_EQ(BGL_MSG_ONE_PACKET, static_cast<int>(Protocol::one_packet));
  EXPECT_EQ(BGL_MSG_EAGER, static_cast<int>(Protocol::eager));
  EXPECT_EQ(BGL_MSG_RENDEZVOUS, static_cast<int>(Protocol::rendezvous));
  EXPECT_EQ(BGL_MSG_ADAPTIVE_EAGER, static_cast<int>(Protocol::adaptive_eager));
  EXPECT_EQ(BGL_MSG_VIRTUAL_NODE, static_cast<int>(Protocol::virtual_node));
  EXPECT_EQ(BGL_MSG_PROTOCOLS, kProtocols);
  EXPECT_EQ(BGL_MSG_MAX_USER_HEADER, static_cast<int>(kMaxUserHeader));
  EXPECT_EQ(BGL_MSG_MAX_HANDLERS, kMaxHandlers);
  for (std::size_t h : {0u, 1u, 8u, 127u, 128u})
    EXPECT_EQ(bgl_msg_max_one_packet(h), 228 - h);
  EXPECT_EQ(bgl_msg_max_one_packet(129), 0u);
  EXPECT_EQ(bgl_msg_max_one_packet(1000), 0u);
}

// ---------------------------------------------------------------------------------------------
// Choice by size

class MlProtocolChoice : public ::testing::Test {
 protected:
  Protocol choose(const Config& c, std::size_t data, std::size_t header = 0,
                  std::optional<Protocol> forced = std::nullopt) {
    InProcessJob job({.ntasks = 2, .shape = "2x1x1"}, c);
    SendMessage m = message_of(data, header);
    m.protocol = forced;
    return job.ml(0).choose(m);
  }
};

TEST_F(MlProtocolChoice, OnePacketUpToWhatFitsBesideTheHeader) {
  const Config c;
  for (std::size_t header : {0u, 1u, 8u, 100u, 127u, 128u}) {
    const std::size_t fits = 240 - 12 - header;
    EXPECT_EQ(choose(c, 0, header), Protocol::one_packet) << header;
    EXPECT_EQ(choose(c, fits, header), Protocol::one_packet) << header;
    EXPECT_EQ(choose(c, fits + 1, header), Protocol::eager) << header;
  }
}

TEST_F(MlProtocolChoice, EagerUpToTheEagerLimitThenRendezvous) {
  Config c;
  EXPECT_EQ(c.limits.eager_limit, 16384u);
  EXPECT_EQ(choose(c, 16384), Protocol::eager);
  EXPECT_EQ(choose(c, 16385), Protocol::rendezvous);
  EXPECT_EQ(choose(c, 1 << 20), Protocol::rendezvous);
  c.limits.eager_limit = 1000;
  EXPECT_EQ(choose(c, 1000), Protocol::eager);
  EXPECT_EQ(choose(c, 1001), Protocol::rendezvous);
  // A limit below the one-packet capacity leaves one-packet messages alone.
  c.limits.eager_limit = 0;
  EXPECT_EQ(choose(c, 228), Protocol::one_packet);
  EXPECT_EQ(choose(c, 229), Protocol::rendezvous);
}

TEST_F(MlProtocolChoice, AdaptiveEagerReplacesEagerWhenEnabled) {
  Config c;
  c.limits.adaptive_eager = true;
  EXPECT_EQ(choose(c, 228), Protocol::one_packet);
  EXPECT_EQ(choose(c, 229), Protocol::adaptive_eager);
  EXPECT_EQ(choose(c, 16384), Protocol::adaptive_eager);
  EXPECT_EQ(choose(c, 16385), Protocol::rendezvous);
}

TEST_F(MlProtocolChoice, ForcedProtocolWinsAndPerMessageChoiceWinsOverIt) {
  Config c;
  c.limits.forced = Protocol::rendezvous;
  EXPECT_EQ(choose(c, 0), Protocol::rendezvous);
  EXPECT_EQ(choose(c, 1), Protocol::rendezvous);
  EXPECT_EQ(choose(c, 0, 0, Protocol::eager), Protocol::eager);
  EXPECT_EQ(choose(c, 5000, 0, Protocol::adaptive_eager), Protocol::adaptive_eager);
  c.limits.forced = Protocol::one_packet;
  EXPECT_EQ(choose(c, 100000), Protocol::one_packet);  // post() rejects it (see the error tests)
}

// In virtual-node mode, a message to the node's other task that does not fit one packet uses the
// virtual-node protocol (contiguous data only); to anybody else the usual choice holds.
TEST_F(MlProtocolChoice, VirtualNodeProtocolToTheNodesOtherTask) {
  for (Config c : {Config{}, [] {
                     Config f;
                     f.limits.forced = Protocol::virtual_node;  // falls back elsewhere
                     return f;
                   }()}) {
    InProcessJob job({.ntasks = 4, .shape = "2x1x1", .mode = "vn"}, c);  // XYZT: 0, 2 share node 0
    ASSERT_EQ(job.machine().mapping().location(2).node, job.machine().mapping().location(0).node);
    SendMessage m = message_of(5000, 8);
    m.dest = 2;
    EXPECT_EQ(job.ml(0).choose(m), Protocol::virtual_node);
    m.dest = 1;
    EXPECT_EQ(job.ml(0).choose(m), Protocol::eager);
    m = message_of(100000, 8);
    m.dest = 3;
    EXPECT_EQ(job.ml(0).choose(m), Protocol::rendezvous);
    m = message_of(220, 8);
    m.dest = 2;
    EXPECT_EQ(job.ml(0).choose(m), c.limits.forced ? Protocol::virtual_node : Protocol::one_packet);
    std::vector<std::byte> a(3000);
    const iovec one[] = {{a.data(), a.size()}};
    m = message_of(0, 8);
    m.dest = 2;
    m.data.iov = one;
    EXPECT_EQ(job.ml(0).choose(m), Protocol::eager) << "a gather list is not contiguous";
  }
}

TEST_F(MlProtocolChoice, GatherListsCountTheirTotalSize) {
  InProcessJob job({.ntasks = 2, .shape = "2x1x1"});
  std::vector<std::byte> a(200), b(28), c(1);
  const std::vector<iovec> two = {{a.data(), a.size()}, {b.data(), b.size()}};
  const std::vector<iovec> three = {{a.data(), a.size()}, {b.data(), b.size()}, {c.data(), 1}};
  SendMessage m;
  m.dest = 1;
  m.data.iov = two;
  EXPECT_EQ(m.data.size(), 228u);
  EXPECT_EQ(job.ml(0).choose(m), Protocol::one_packet);
  m.data.iov = three;
  EXPECT_EQ(m.data.size(), 229u);
  EXPECT_EQ(job.ml(0).choose(m), Protocol::eager);
  // The gather list wins over the buffer.
  m.data.buffer = std::span<const std::byte>(a.data(), 1);
  EXPECT_EQ(m.data.size(), 229u);
}

// ---------------------------------------------------------------------------------------------
// Environment

TEST(MlEnvironment, DefaultsWithoutVariables) {
  CleanEnv env;
  const Config c = Config::from_environment();
  EXPECT_EQ(c.limits.eager_limit, 16384u);
  EXPECT_FALSE(c.limits.adaptive_eager);
  EXPECT_EQ(c.limits.forced, std::nullopt);
  EXPECT_EQ(c.pool_bytes, 64u << 20);
  EXPECT_EQ(c.max_receives, 16384u);
  EXPECT_EQ(c.max_rendezvous, 1024u);
}

TEST(MlEnvironment, ReadsEveryVariable) {
  CleanEnv env;
  env.set("BGL_ML_PROTOCOL", "rzv");
  env.set("BGL_ML_ADAPTIVE_EAGER", "1");
  env.set("BGL_ML_EAGER_LIMIT", "4096");
  env.set("BGL_ML_POOL_BYTES", "12345");
  env.set("BGL_ML_MAX_RECVS", "7");
  env.set("BGL_ML_MAX_RZV", "3");
  const Config c = Config::from_environment();
  EXPECT_EQ(c.limits.forced, Protocol::rendezvous);
  EXPECT_TRUE(c.limits.adaptive_eager);
  EXPECT_EQ(c.limits.eager_limit, 4096u);
  EXPECT_EQ(c.pool_bytes, 12345u);
  EXPECT_EQ(c.max_receives, 7u);
  EXPECT_EQ(c.max_rendezvous, 3u);
  for (const char* name : {"one_packet", "eager", "rendezvous", "adaptive_eager"}) {
    env.set("BGL_ML_PROTOCOL", name);
    EXPECT_EQ(ProtocolLimits::from_environment().forced, parse_protocol(name));
  }
  env.set("BGL_ML_PROTOCOL", "");  // empty counts as unset
  EXPECT_EQ(ProtocolLimits::from_environment().forced, std::nullopt);
}

TEST(MlEnvironment, BadValuesAreConfigErrorsNamingTheVariable) {
  struct Case {
    const char* name;
    const char* value;
    const char* message;
  };
  const std::vector<Case> cases = {
      {"BGL_ML_PROTOCOL", "fast", "BGL_ML_PROTOCOL='fast': expected one_packet, eager, rendezvous"},
      {"BGL_ML_PROTOCOL", "EAGER", "BGL_ML_PROTOCOL='EAGER'"},
      {"BGL_ML_ADAPTIVE_EAGER", "2",
       "BGL_ML_ADAPTIVE_EAGER='2': out of range; expected an integer in [0, 1]"},
      {"BGL_ML_ADAPTIVE_EAGER", "yes", "BGL_ML_ADAPTIVE_EAGER='yes'"},
      {"BGL_ML_EAGER_LIMIT", "-1", "BGL_ML_EAGER_LIMIT='-1'"},
      {"BGL_ML_EAGER_LIMIT", "16k", "BGL_ML_EAGER_LIMIT='16k'"},
      {"BGL_ML_EAGER_LIMIT", "2147483648", "BGL_ML_EAGER_LIMIT='2147483648'"},
      {"BGL_ML_POOL_BYTES", "lots", "BGL_ML_POOL_BYTES='lots'"},
      {"BGL_ML_MAX_RECVS", "0",
       "BGL_ML_MAX_RECVS='0': out of range; expected an integer in [1, 1048576]"},
      {"BGL_ML_MAX_RZV", "2000000", "BGL_ML_MAX_RZV='2000000'"},
  };
  for (const auto& c : cases) {
    CleanEnv env;
    env.set(c.name, c.value);
    EXPECT_THAT(config_error([] { Config::from_environment(); }), HasSubstr(c.message))
        << c.name << "=" << c.value;
  }
  CleanEnv env;
  env.set("BGL_ML_PROTOCOL", "bogus");
  EXPECT_THAT(config_error([] { ProtocolLimits::from_environment(); }),
              HasSubstr("BGL_ML_PROTOCOL='bogus'"));
}

// ---------------------------------------------------------------------------------------------
// Statistics

TEST(MlStatisticsJson, JsonCarriesEveryCounterUnderItsName) {
  Statistics s;
  std::uint64_t v = 1;
  for (auto& p : s.protocol) {
    p.messages_sent = v++;
    p.packets_sent = v++;
    p.bytes_sent = v++;
    p.messages_received = v++;
    p.packets_received = v++;
    p.bytes_received = v++;
  }
  s.control_packets_sent = 101;
  s.unexpected_messages = 102;
  s.unexpected_depth = 103;
  s.unexpected_depth_max = 104;
  s.pool_bytes_max = 106;
  s.pool_waits = 107;
  s.early_adaptive_packets = 108;
  s.token_waits = (1ULL << 40) + 109;  // 64-bit values survive
  s.table_waits = 110;
  s.held_packets = 111;
  s.held_packets_max = 112;
  s.hold_full_waits = 113;
  const auto j = nlohmann::json::parse(s.to_json());
  ASSERT_TRUE(j.is_object());
  v = 1;
  for (int i = 0; i < kProtocols; ++i) {
    const auto& p = j.at("protocols").at(std::string(to_string(static_cast<Protocol>(i))));
    for (const char* key : {"messages_sent", "packets_sent", "bytes_sent", "messages_received",
                            "packets_received", "bytes_received"})
      EXPECT_EQ(p.at(key).get<std::uint64_t>(), v++) << to_string(static_cast<Protocol>(i)) << key;
  }
  EXPECT_EQ(j.at("protocols").size(), static_cast<std::size_t>(kProtocols));
  EXPECT_EQ(j.at("control_packets_sent"), 101u);
  EXPECT_EQ(j.at("unexpected_messages"), 102u);
  EXPECT_EQ(j.at("unexpected_depth"), 103u);
  EXPECT_EQ(j.at("unexpected_depth_max"), 104u);
  EXPECT_EQ(j.at("pool_bytes_max"), 106u);
  EXPECT_EQ(j.at("pool_waits"), 107u);
  EXPECT_EQ(j.at("early_adaptive_packets"), 108u);
  EXPECT_EQ(j.at("token_waits").get<std::uint64_t>(), (1ULL << 40) + 109);
  EXPECT_EQ(j.at("table_waits"), 110u);
  EXPECT_EQ(j.at("held_packets"), 111u);
  EXPECT_EQ(j.at("held_packets_max"), 112u);
  EXPECT_EQ(j.at("hold_full_waits"), 113u);
  // Fits the launcher's per-task report slot even with large counters.
  for (auto& p : s.protocol)
    p.bytes_received = ~0ULL;
  EXPECT_LT(s.to_json().size(), job_runtime::TaskSlot{}.report.size());
}

TEST(MlStatisticsJson, FreshLayerReportsZeros) {
  InProcessJob job({.ntasks = 2, .shape = "2x1x1"});
  const auto j = nlohmann::json::parse(job.ml(0).statistics().to_json());
  for (const auto& [name, p] : j.at("protocols").items())
    for (const auto& [key, value] : p.items())
      EXPECT_EQ(value, 0u) << name << "." << key;
  EXPECT_EQ(j.at("control_packets_sent"), 0u);
  EXPECT_EQ(j.at("unexpected_messages"), 0u);
  EXPECT_TRUE(job.ml(0).idle());
  EXPECT_EQ(job.ml(0).rank(), 0u);
  EXPECT_EQ(job.ml(1).rank(), 1u);
  EXPECT_EQ(job.ml(0).size(), 2);
}

}  // namespace
}  // namespace bgl::message_layer::test
