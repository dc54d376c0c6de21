#pragma once
// The configuration of one emulated partition and job, resolved from bglrun's flags and the BGL_*
// environment (flags win). The MPICH device resolves it the same way.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bgl/job_runtime/asymmetric_fence.hpp"
#include "bgl/job_runtime/node_mode.hpp"
#include "bgl/job_runtime/placement.hpp"
#include "bgl/torus_emu/mapping.hpp"
#include "bgl/torus_emu/shape.hpp"
#include "bgl/virtual_time/params.hpp"

namespace bgl::job_runtime {

// What the user said; unset fields take their BGL_* variable, then the default.
struct JobOptions {
  // The same range for --seed and BGL_SEED.
  static constexpr long long kMaxSeed = 0x7fff'ffff'ffff'ffffLL;

  std::optional<int> ntasks;
  std::optional<std::string> shape;      // "4x4x2" (BGL_SHAPE)
  std::optional<std::string> mesh;       // dimensions without wrap links, "xyz" subset (BGL_MESH)
  std::optional<std::string> mode;       // heater | coprocessor | vn (BGL_MODE)
  std::optional<std::string> mapping;    // order such as XYZT (BGL_MAPPING)
  std::optional<std::string> mapfile;    // mapping file (BGL_MAPFILE)
  std::optional<int> fifo_packets;       // reception FIFO capacity (BGL_FIFO_PACKETS)
  std::optional<std::uint64_t> seed;     // adaptive-routing seed (BGL_SEED)
  std::optional<std::string> hostfile;   // hosts and their nodes (BGL_HOSTFILE)
  std::optional<int> hosts;              // number of hosts without a file (BGL_HOSTS)
  std::optional<std::string> transport;  // shm | ofi | auto (BGL_TRANSPORT)
  std::optional<int> host_index;         // which host this is (from the process manager)
  std::optional<bool> virtual_time;      // BG/L clocks (BGL_VIRTUAL_TIME)
  std::optional<std::string> vt_params;  // model parameters file (BGL_VT_PARAMS)
  std::optional<double> vt_cpu_factor;   // host CPU time -> BG/L time (BGL_VT_CPU_FACTOR)
  std::optional<virtual_time::Sync> vt_sync;  // how clocks keep in step (BGL_VT_SYNC)

  // Fills every unset field from its BGL_* variable (a flag always wins: a set field's variable is
  // not read, nor the variables of the fields it excludes); ConfigError names a malformed variable.
  void merge_environment();
};

// "--vt-cpu-factor" and BGL_VT_CPU_FACTOR: a number in [0, 1e6]; ConfigError naming `what`.
double parse_cpu_factor(std::string_view text, std::string_view what);
// "--vt-sync" and BGL_VT_SYNC: conservative or host; ConfigError naming `what`.
virtual_time::Sync parse_vt_sync(std::string_view text, std::string_view what);

// A flag's or a variable's text for the FIFO size (a power of two in [2, 65536]) and the seed
// ([0, JobOptions::kMaxSeed]): one parser each, so that both sources accept the same values.
// `source` names the flag or variable in errors.
int parse_fifo_packets(std::string_view text, std::string_view source);
std::uint64_t parse_seed(std::string_view text, std::string_view source);

// A region of the segment reserved for a component (the packet layer's FIFOs, the collective
// network's tree, ...), zero-filled; the component formats and interprets it. A per-node region
// has a block of `bytes` for every node that hosts tasks (Job::node_slot order).
struct RegionRequest {
  std::string name;  // at most 15 characters
  std::size_t bytes = 0;
  bool per_node = false;
};

struct JobConfig {
  static constexpr int kDefaultFifoPackets = 64;

  torus_emu::Shape shape;
  NodeMode mode;
  torus_emu::Mapping mapping;
  std::uint32_t fifo_packets;
  std::uint64_t seed;
  std::string mapping_source;  // "order XYZT" or the mapping file's path
  std::vector<RegionRequest> regions;
  Placement placement;  // which nodes are on which host; one host unless configured
  // Identifies the job: the same on every host of a multi-host job (bglrun agrees on it), so
  // that tasks can check they joined the same job.
  std::uint64_t job_id = 0;
  // The timing model's parameters when virtual time is on, and where they came from.
  std::optional<virtual_time::Params> virtual_time;
  std::string vt_params_source;
  // Which side of a doorbell handshake fences (asymmetric_fence.hpp); unset: decided when the
  // segment is formatted, by this host's tasks per core and BGL_FENCES.
  std::optional<FenceMode> fences;

  int ntasks() const { return mapping.size(); }
  int local_tasks() const;  // tasks on this host
  // The job's threads that wait by polling on this machine's cores: the tasks and, with the
  // libfabric transport, the hosts' agents; when the hosts are emulated on this machine
  // (Placement::emulated), every host's, else this host's.
  int busy_threads() const;

  // Validates everything (ntasks fits shape and mode, mapping, FIFO size); throws ConfigError.
  static JobConfig resolve(const JobOptions& options);

  // The most cubic X >= Y >= Z shape with at least `nodes` nodes (exactly `nodes` when possible).
  static torus_emu::Shape default_shape(int nodes);

  std::string summary() const;  // one line for logs and --dry-run
};

}  // namespace bgl::job_runtime
