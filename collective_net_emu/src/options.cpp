#include "bgl/collective_net_emu/options.hpp"

#include "bgl/job_runtime/env.hpp"
#include "bgl/torus_emu/error.hpp"

namespace bgl::collective_net_emu {
namespace {

bool power_of_two(std::uint32_t v) {
  return v != 0 && (v & (v - 1)) == 0;
}

std::uint32_t power_of_two_variable(const char* name, std::uint32_t fallback, long long min,
                                    long long max) {
  const auto v = job_runtime::env::get_int(name, min, max);
  if (!v) return fallback;
  if (!power_of_two(static_cast<std::uint32_t>(*v)))
    throw ConfigError(std::string(name) + "='" + std::to_string(*v) +
                      "': expected a power of two in [" + std::to_string(min) + ", " +
                      std::to_string(max) + "]");
  return static_cast<std::uint32_t>(*v);
}

}  // namespace

TreeSpec TreeSpec::parse(std::string_view text, std::string_view source) {
  const auto bad = [&] {
    return ConfigError(std::string(source) + "='" + std::string(text) +
                       "': expected torus, torus:K or kary:K with K in 1.." +
                       std::to_string(kMaxFanout));
  };
  const auto colon = text.find(':');
  const std::string_view name = text.substr(0, colon);
  TreeSpec spec;
  if (name == "torus")
    spec.kind = TreeKind::torus;
  else if (name == "kary")
    spec.kind = TreeKind::kary;
  else
    throw bad();
  if (colon == std::string_view::npos) {
    if (spec.kind == TreeKind::kary) throw bad();
    return spec;
  }
  try {
    spec.fanout = static_cast<int>(
        job_runtime::env::parse_int(text.substr(colon + 1), source, 1, kMaxFanout));
  } catch (const ConfigError&) {
    throw bad();
  }
  return spec;
}

std::string TreeSpec::to_string() const {
  return std::string(kind == TreeKind::torus ? "torus" : "kary") + ":" + std::to_string(fanout);
}

Options Options::from_environment() {
  Options o;
  if (auto v = job_runtime::env::get("BGL_TREE")) o.tree = TreeSpec::parse(*v, "BGL_TREE");
  o.ring_packets = power_of_two_variable("BGL_TREE_RING", o.ring_packets, 2, 4096);
  o.inbox_packets = power_of_two_variable("BGL_TREE_INBOX", o.inbox_packets, 2, 1024);
  return o;
}

void Options::validate(std::string_view source) const {
  const std::string s(source);
  if (tree.fanout < 1 || tree.fanout > kMaxFanout)
    throw ConfigError(s + ": tree fan-out " + std::to_string(tree.fanout) + " is not in 1.." +
                      std::to_string(kMaxFanout));
  if (ring_packets != kAutomaticRing &&
      (!power_of_two(ring_packets) || ring_packets < 2 || ring_packets > 4096))
    throw ConfigError(s + ": ring depth " + std::to_string(ring_packets) +
                      " is not a power of two in [2, 4096]");
  if (!power_of_two(inbox_packets) || inbox_packets < 2 || inbox_packets > 1024)
    throw ConfigError(s + ": inbox capacity " + std::to_string(inbox_packets) +
                      " is not a power of two in [2, 1024]");
}

}  // namespace bgl::collective_net_emu
