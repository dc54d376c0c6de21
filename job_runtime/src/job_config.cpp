#include "bgl/job_runtime/job_config.hpp"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <limits>

#include "bgl/job_runtime/env.hpp"
#include "bgl/torus_emu/error.hpp"
#include "bgl/torus_emu/user_text.hpp"

namespace bgl::job_runtime {
namespace {

constexpr int kMaxFifoPackets = 1 << 16;

// A variable's value checked on its own, so that an error names the variable (a flag's value is
// checked by resolve() and named by what it is, e.g. "shape").
template <class Check>
std::optional<std::string> checked(const char* variable, Check&& check) {
  auto v = job_runtime::env::get(variable);
  if (!v) return std::nullopt;
  try {
    check(*v);
  } catch (const ConfigError& e) {
    throw ConfigError(std::string(variable) + "='" + printable(*v) + "': " + e.what());
  }
  return v;
}

std::optional<std::array<int, 3>> cubic_factors(int n) {
  std::optional<std::array<int, 3>> best;
  for (int x = 1; x <= torus_emu::Shape::kMaxExtent; ++x) {
    if (n % x) continue;
    for (int y = 1; y <= x; ++y) {
      if ((n / x) % y) continue;
      const int z = n / x / y;
      if (z > y) continue;
      if (!best || x < (*best)[0]) best = std::array<int, 3>{x, y, z};
    }
  }
  return best;
}

}  // namespace

int parse_fifo_packets(std::string_view text, std::string_view source) {
  const auto v = job_runtime::env::parse_int(text, source, 2, kMaxFifoPackets);
  if ((v & (v - 1)) != 0)
    throw ConfigError(std::string(source) + "='" + printable(text) +
                      "': expected a power of two in [2, " + std::to_string(kMaxFifoPackets) + "]");
  return static_cast<int>(v);
}

std::uint64_t parse_seed(std::string_view text, std::string_view source) {
  return static_cast<std::uint64_t>(
      job_runtime::env::parse_int(text, source, 0, JobOptions::kMaxSeed));
}

// Each variable is read only when no flag set its field. Fields that exclude each other (a mapping
// order and a mapping file; a host count and a host file) form a group: a flag for one of them
// means the variables of the whole group are not read, so the flag wins instead of clashing with a
// variable. Both variables of a group set, with no flag, is the user's conflict and an error.
void JobOptions::merge_environment() {
  if (!shape)
    shape =
        checked("BGL_SHAPE", [](const std::string& v) { (void)torus_emu::Shape::parse(v, ""); });
  if (!mesh)
    mesh = checked("BGL_MESH",
                   [](const std::string& v) { (void)torus_emu::Shape::parse("1x1x1", v); });
  if (!mode) {
    mode = job_runtime::env::get("BGL_MODE");
    if (mode) (void)parse_node_mode(*mode, "BGL_MODE");
  }
  if (!mapping && !mapfile) {
    mapping = checked("BGL_MAPPING", [](const std::string& v) {
      // The letters alone (one task per node lets T be left out; the mode is checked later).
      (void)torus_emu::Mapping::from_order(torus_emu::Shape::parse("1x1x1"), 1, v, 1);
    });
    mapfile = job_runtime::env::get("BGL_MAPFILE");
  }
  if (!fifo_packets) {
    if (auto v = job_runtime::env::get("BGL_FIFO_PACKETS"))
      fifo_packets = parse_fifo_packets(*v, "BGL_FIFO_PACKETS");
  }
  if (!hosts && !hostfile) {
    if (auto v = job_runtime::env::get_int("BGL_HOSTS", 1, Placement::kMaxHosts))
      hosts = static_cast<int>(*v);
    hostfile = job_runtime::env::get("BGL_HOSTFILE");
  }
  if (!transport) {
    transport = checked("BGL_TRANSPORT", [](const std::string& v) {
      if (v != "auto" && v != "shm" && v != "ofi") throw ConfigError("expected shm, ofi or auto");
    });
  }
  if (!seed) {
    if (auto v = job_runtime::env::get("BGL_SEED")) seed = parse_seed(*v, "BGL_SEED");
  }
  if (!virtual_time) {
    if (auto v = job_runtime::env::get_int("BGL_VIRTUAL_TIME", 0, 1)) virtual_time = *v != 0;
  }
  if (!vt_params) vt_params = job_runtime::env::get("BGL_VT_PARAMS");
  if (!vt_cpu_factor) {
    if (auto v = job_runtime::env::get("BGL_VT_CPU_FACTOR"))
      vt_cpu_factor = parse_cpu_factor(*v, "BGL_VT_CPU_FACTOR");
  }
  if (!vt_sync) {
    if (auto v = job_runtime::env::get("BGL_VT_SYNC")) vt_sync = parse_vt_sync(*v, "BGL_VT_SYNC");
  }
}

virtual_time::Sync parse_vt_sync(std::string_view text, std::string_view what) {
  if (text == "conservative") return virtual_time::Sync::conservative;
  if (text == "host") return virtual_time::Sync::host_order;
  throw ConfigError(std::string(what) + "='" + std::string(text.substr(0, 40)) +
                    "': expected conservative or host");
}

double parse_cpu_factor(std::string_view text, std::string_view what) {
  const std::string s(text);
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size() || !(v >= 0) || v > 1e6)
    throw ConfigError(std::string(what) + "='" + s.substr(0, 40) +
                      "': expected a number in [0, 1e6] (BG/L seconds per host CPU second)");
  return v;
}

torus_emu::Shape JobConfig::default_shape(int nodes) {
  for (int n = std::max(nodes, 1);; ++n) {
    if (auto f = cubic_factors(n)) return torus_emu::Shape(*f, {true, true, true});
  }
}

JobConfig JobConfig::resolve(const JobOptions& o) {
  if (!o.ntasks) throw ConfigError("the number of tasks is not set (bglrun -np N)");
  const int ntasks = *o.ntasks;
  const NodeMode mode = o.mode ? parse_node_mode(*o.mode, "mode") : NodeMode::heater;
  const int tpn = tasks_per_node(mode);
  const int max_tasks = torus_emu::Shape::kMaxExtent * torus_emu::Shape::kMaxExtent *
                        torus_emu::Shape::kMaxExtent * tpn;
  if (ntasks < 1 || ntasks > max_tasks)
    throw ConfigError("-np " + std::to_string(ntasks) + ": expected 1.." +
                      std::to_string(max_tasks));

  std::optional<torus_emu::Shape> shape;
  if (o.shape) {
    shape = torus_emu::Shape::parse(*o.shape, o.mesh.value_or(""));
  } else {
    shape = default_shape((ntasks + tpn - 1) / tpn);
    if (o.mesh) shape = torus_emu::Shape::parse(shape->to_string(), *o.mesh);
  }
  if (ntasks > shape->node_count() * tpn) {
    throw ConfigError(std::to_string(ntasks) + " tasks do not fit shape " + shape->to_string() +
                      " in " + std::string(to_string(mode)) + " mode (" +
                      std::to_string(shape->node_count() * tpn) + " task slots)");
  }
  if (o.mapping && o.mapfile)
    throw ConfigError(
        "give either a mapping order (--mapping/BGL_MAPPING) or a mapping file "
        "(--mapfile/BGL_MAPFILE), not both");

  const int fifo = o.fifo_packets.value_or(kDefaultFifoPackets);
  if (fifo < 2 || fifo > kMaxFifoPackets || (fifo & (fifo - 1)) != 0)
    throw ConfigError("FIFO size " + std::to_string(fifo) + ": expected a power of two in [2, " +
                      std::to_string(kMaxFifoPackets) + "]");

  std::string source;
  torus_emu::Mapping mapping = [&] {
    if (o.mapfile) {
      source = "file " + printable(*o.mapfile, 256);
      return torus_emu::Mapping::from_file(*shape, tpn, *o.mapfile, ntasks);
    }
    const std::string order = o.mapping.value_or("XYZT");
    source = "order " + order;
    return torus_emu::Mapping::from_order(*shape, tpn, order, ntasks);
  }();
  JobConfig config{
      *shape,
      mode,
      std::move(mapping),
      static_cast<std::uint32_t>(fifo),
      o.seed.value_or(0x5eed),
      std::move(source),
      {},
      Placement::resolve(*shape, o.hostfile, o.hosts, o.transport, o.host_index.value_or(0))};
  if (o.virtual_time.value_or(false)) {
    config.virtual_time =
        o.vt_params ? virtual_time::Params::from_file(*o.vt_params) : virtual_time::Params{};
    config.vt_params_source = o.vt_params ? "file " + *o.vt_params : "built-in defaults";
    if (o.vt_cpu_factor) config.virtual_time->cpu_factor = *o.vt_cpu_factor;
    if (o.vt_sync) config.virtual_time->sync = *o.vt_sync;
  } else if (o.vt_params || o.vt_cpu_factor || o.vt_sync) {
    throw ConfigError(
        "--vt-params, --vt-cpu-factor and --vt-sync (BGL_VT_PARAMS, BGL_VT_CPU_FACTOR, "
        "BGL_VT_SYNC) need virtual time (--virtual-time or BGL_VIRTUAL_TIME=1)");
  }
  return config;
}

std::string JobConfig::summary() const {
  return std::to_string(ntasks()) + " tasks on " + shape.to_string() + " (" +
         std::to_string(shape.node_count()) + " nodes), " + std::string(to_string(mode)) +
         " mode, mapping " + mapping_source + ", " + std::to_string(fifo_packets) +
         "-packet reception FIFOs" +
         (placement.host_count() > 1 || placement.transport != Transport::shm
              ? ", " + std::to_string(placement.host_count()) + " host(s) over " +
                    std::string(to_string(placement.transport))
              : std::string()) +
         (virtual_time ? ", virtual time (" + vt_params_source + ")" : std::string());
}

int JobConfig::busy_threads() const {
  const int agent = placement.transport == Transport::ofi ? 1 : 0;
  if (placement.hosts.empty() || placement.emulated())
    return ntasks() + agent * std::max(1, placement.host_count());
  return local_tasks() + agent;
}

int JobConfig::local_tasks() const {
  if (placement.node_host.empty()) return ntasks();
  int n = 0;
  for (int r = 0; r < ntasks(); ++r)
    n += placement.local(mapping.location(static_cast<torus_emu::Rank>(r)).node);
  return n;
}

}  // namespace bgl::job_runtime
