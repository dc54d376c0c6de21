#include "bgl/msg/session.hpp"

#include <cstring>
#include <functional>

#include "bgl/env.hpp"
#include "bgl/log.hpp"
#include "bgl/torus/error.hpp"

namespace bgl::msg {

HostBootstrap::HostBootstrap(const HostCallbacks& callbacks) : cb_(callbacks) {
  if (!cb_.barrier || !cb_.allgather || cb_.size <= 0)
    throw ConfigError("host bootstrap needs a size, a barrier and an allgather");
}

void HostBootstrap::barrier() {
  if (cb_.barrier(cb_.context) != 0) throw ConfigError("host bootstrap barrier failed");
}

void HostBootstrap::allgather(std::span<const std::byte> mine, std::span<std::byte> all) {
  if (cb_.allgather(cb_.context, mine.data(), mine.size(), all.data()) != 0)
    throw ConfigError("host bootstrap allgather failed");
}

std::unique_ptr<Session> Session::from_launcher(const Config& config) {
  auto runtime = pkt::Runtime::from_environment();
  auto session = std::unique_ptr<Session>(new Session(std::move(runtime), nullptr, config));
  session->bootstrap_ = std::make_unique<LauncherBootstrap>(session->runtime_);
  session->check_agreement();
  return session;
}

std::unique_ptr<Session> Session::with_bootstrap(std::unique_ptr<Bootstrap> host,
                                                 const Config& config) {
  auto runtime = pkt::Runtime::from_environment(host->rank());
  if (runtime.size() != host->size())
    throw ConfigError("the process manager started " + std::to_string(host->size()) +
                      " processes but the emulated job has " + std::to_string(runtime.size()) +
                      " tasks (bglrun -np and the host's process count must agree)");
  auto session = std::unique_ptr<Session>(new Session(std::move(runtime), std::move(host), config));
  session->check_agreement();
  return session;
}

Session::Session(pkt::Runtime runtime, std::unique_ptr<Bootstrap> bootstrap, const Config& config)
    : runtime_(std::move(runtime)), bootstrap_(std::move(bootstrap)) {
  layer_ = std::make_unique<MessageLayer>(runtime_.endpoint(), config);
}

// Every task must have attached the same segment: a host that mixed up environments would
// otherwise exchange packets with strangers.
void Session::check_agreement() {
  const std::string name = env::get("BGL_SEGMENT").value_or("");
  const std::uint64_t mine =
      std::hash<std::string>{}(name) ^ static_cast<std::uint64_t>(runtime_.size());
  std::vector<std::uint64_t> all(static_cast<std::size_t>(bootstrap_->size()));
  bootstrap_->allgather(std::as_bytes(std::span(&mine, 1)), std::as_writable_bytes(std::span(all)));
  for (std::size_t r = 0; r < all.size(); ++r)
    if (all[r] != mine)
      throw ConfigError("task " + std::to_string(r) +
                        " attached a different emulated job than task " + std::to_string(rank()));
}

Session::~Session() {
  const std::string json = layer_->statistics().to_json();
  auto& report = runtime_.machine().task(rank()).report;
  if (json.size() < report.size())
    std::memcpy(report.data(), json.c_str(), json.size() + 1);
  else
    spdlog::warn("message-layer statistics too large for the job report ({} bytes)", json.size());
  layer_.reset();
}

}  // namespace bgl::msg
