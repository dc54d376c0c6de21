#include "bgl/message_layer/message_layer.hpp"

#include <nlohmann/json.hpp>

#include "bgl/job_runtime/env.hpp"
#include "bgl/torus_emu/error.hpp"
#include "data_copy.hpp"
#include "engine.hpp"

namespace bgl::message_layer {

ProtocolLimits ProtocolLimits::from_environment() {
  ProtocolLimits l;
  if (auto v = job_runtime::env::get_int("BGL_ML_EAGER_LIMIT", 0, 1LL << 30))
    l.eager_limit = static_cast<std::size_t>(*v);
  if (auto v = job_runtime::env::get_int("BGL_ML_ADAPTIVE_EAGER", 0, 1)) l.adaptive_eager = *v != 0;
  if (auto v = job_runtime::env::get("BGL_ML_PROTOCOL")) {
    l.forced = parse_protocol(*v);
    if (!l.forced) throw ConfigError("BGL_ML_PROTOCOL='" + *v + "': expected " + protocol_names());
  }
  return l;
}

Config Config::from_environment() {
  Config c;
  c.limits = ProtocolLimits::from_environment();
  if (auto v = job_runtime::env::get_int("BGL_ML_POOL_BYTES", 0, 1LL << 40))
    c.pool_bytes = static_cast<std::size_t>(*v);
  if (auto v = job_runtime::env::get_int("BGL_ML_MAX_RECVS", 1, 1 << 20))
    c.max_receives = static_cast<std::uint32_t>(*v);
  if (auto v = job_runtime::env::get_int("BGL_ML_MAX_RZV", 1, 1 << 20))
    c.max_rendezvous = static_cast<std::uint32_t>(*v);
  if (auto v = job_runtime::env::get_int("BGL_ML_HOLD_PACKETS", 1, 1 << 20))
    c.hold_packets = static_cast<std::uint32_t>(*v);
  if (auto v = job_runtime::env::get_int("BGL_ML_VN_COPY", 0, 1)) c.vn_direct_copy = *v != 0;
  if (auto v = job_runtime::env::get_int("BGL_ML_VN_CELLS", 0, 1)) c.vn_cells = *v != 0;
  if (auto v = job_runtime::env::get_int("BGL_ML_COPROCESSOR_RECEIVE", 0, 1))
    c.coprocessor_receive = *v != 0;
  return c;
}

std::size_t SendData::size() const {
  return iov.empty() ? buffer.size() : iov_bytes(iov);
}

std::string Statistics::to_json() const {
  nlohmann::json p = nlohmann::json::object();
  for (int i = 0; i < kProtocols; ++i) {
    const auto& c = protocol[static_cast<std::size_t>(i)];
    p[std::string(message_layer::to_string(static_cast<Protocol>(i)))] = {
        {"messages_sent", c.messages_sent},
        {"packets_sent", c.packets_sent},
        {"bytes_sent", c.bytes_sent},
        {"messages_received", c.messages_received},
        {"packets_received", c.packets_received},
        {"bytes_received", c.bytes_received}};
  }
  nlohmann::json out{{"protocols", p},
                     {"control_packets_sent", control_packets_sent},
                     {"unexpected_messages", unexpected_messages},
                     {"unexpected_depth", unexpected_depth},
                     {"unexpected_depth_max", unexpected_depth_max},
                     {"pool_bytes_limit", pool_bytes_limit},
                     {"pool_bytes_in_use", pool_bytes_in_use},
                     {"pool_bytes_max", pool_bytes_max},
                     {"pool_waits", pool_waits},
                     {"table_waits", table_waits},
                     {"held_packets", held_packets},
                     {"held_packets_max", held_packets_max},
                     {"hold_full_waits", hold_full_waits},
                     {"early_adaptive_packets", early_adaptive_packets},
                     {"early_adaptive_bytes", early_adaptive_bytes},
                     {"early_adaptive_bytes_max", early_adaptive_bytes_max},
                     {"malformed_packets", malformed_packets},
                     {"token_waits", token_waits},
                     {"coprocessor_messages", coprocessor_messages},
                     {"coprocessor_packets", coprocessor_packets},
                     {"coherence_operations", coherence_operations}};
  // Virtual time: each protocol's latency histogram, its non-empty buckets as [index, count].
  nlohmann::json latencies = nlohmann::json::object();
  for (int i = 0; i < kProtocols; ++i) {
    const auto& h = latency[static_cast<std::size_t>(i)];
    if (h.count() == 0) continue;
    nlohmann::json buckets = nlohmann::json::array();
    for (int b = 0; b < virtual_time::LatencyHistogram::kBuckets; ++b)
      if (h.bucket(b) != 0) buckets.push_back({b, h.bucket(b)});
    latencies[std::string(message_layer::to_string(static_cast<Protocol>(i)))] = {
        {"min", h.min()}, {"max", h.max()}, {"sum", h.sum()}, {"buckets", std::move(buckets)}};
  }
  if (!latencies.empty()) out["latency_cycles"] = std::move(latencies);
  return out.dump();
}

MessageLayer::MessageLayer(packet_layer::Endpoint& endpoint, Config config)
    : engine_(std::make_unique<Engine>(endpoint, config)), metered_(endpoint.metered()) {}
MessageLayer::~MessageLayer() = default;
Rank MessageLayer::rank() const {
  return engine_->rank();
}
int MessageLayer::size() const {
  return engine_->size();
}
void MessageLayer::register_handler(HandlerId id, ArrivalHandler h, void* ctx) {
  engine_->register_handler(id, h, ctx);
}
void MessageLayer::register_packet_handler(std::uint8_t dispatch, PacketHandler h, void* ctx) {
  engine_->register_packet_handler(dispatch, h, ctx);
}
packet_layer::Endpoint& MessageLayer::endpoint() {
  return engine_->endpoint();
}
namespace {
// Time the program spends between calls is its own computation (virtual time's CPU factor).
class InStack {
 public:
  explicit InStack(packet_layer::Endpoint& ep) : ep_(ep) { ep_.enter_stack(); }
  InStack(const InStack&) = delete;
  InStack& operator=(const InStack&) = delete;
  ~InStack() { ep_.leave_stack(); }

 private:
  packet_layer::Endpoint& ep_;
};

// The guard only when metering, out of line: the common calls stay plain jumps into the engine.
template <class F>
[[gnu::noinline]] auto metered(packet_layer::Endpoint& ep, F&& call) {
  const InStack in(ep);
  return call();
}
}  // namespace

void MessageLayer::post(SendMessage& m) {
  if (metered_) [[unlikely]]
    return metered(engine_->endpoint(), [&] { engine_->post(m); });
  engine_->post(m);
}
void MessageLayer::accept(RecvHandle h, const RecvTarget& t) {
  if (metered_) [[unlikely]]
    return metered(engine_->endpoint(), [&] { engine_->accept(h, t); });
  engine_->accept(h, t);
}
bool MessageLayer::advance() {
  if (metered_) [[unlikely]]
    return metered(engine_->endpoint(), [&] { return engine_->advance(); });
  return engine_->advance();
}
void MessageLayer::wait() {
  if (metered_) [[unlikely]]
    return metered(engine_->endpoint(), [&] { engine_->wait(); });
  engine_->wait();
}
void MessageLayer::expect_counted(std::uint32_t messages) {
  engine_->expect_counted(messages);
}
void MessageLayer::poll_yield() const {
  engine_->endpoint().poll_yield();
}
bool MessageLayer::idle() const {
  return engine_->idle();
}
bool MessageLayer::flushed() const {
  return engine_->flushed();
}
Protocol MessageLayer::choose(const SendMessage& m) const {
  return engine_->choose(m);
}
const Statistics& MessageLayer::statistics() const {
  return engine_->statistics();
}
std::span<const job_runtime::PairTraffic> MessageLayer::traffic() const {
  return engine_->traffic();
}
const Config& MessageLayer::config() const {
  return engine_->config();
}
Coprocessor* MessageLayer::coprocessor() {
  return engine_->coprocessor();
}

}  // namespace bgl::message_layer
