#pragma once
// The launcher's hooks: reserve the collective network's region in the job segment, and format it
// once the segment exists. bglrun calls both; an in-process test does the same around
// packet_layer::Machine::format.
#include <cstddef>
#include <span>
#include <string_view>
#include <vector>

#include "bgl/collective_net_emu/options.hpp"
#include "bgl/job_runtime/job_config.hpp"
#include "bgl/packet_layer/machine.hpp"

namespace bgl::collective_net_emu {

inline constexpr std::string_view kRegionName = "collnet";

// Bytes of the "collnet" region for this job; options from the environment (ConfigError names a
// malformed BGL_TREE* variable).
std::size_t region_bytes(const job_runtime::JobConfig& config);
std::size_t region_bytes(const job_runtime::JobConfig& config, const Options& options);

// Lays the region out (tree, rings, wires, inboxes). The options must be those region_bytes saw.
void format(const packet_layer::Machine& machine);
void format(const packet_layer::Machine& machine, const Options& options);

// The job's formatted region, validated; ConfigError when the job has none (not started by a
// launcher with collective network support) or it does not match the job.
std::span<std::byte> attach_region(const packet_layer::Machine& machine);

// The parts of the formatted region nobody writes after start-up (its header and the tree's node
// table), for the launcher's corruption watch; none when the job has no region.
std::vector<packet_layer::ControlPart> constant_parts(const packet_layer::Machine& machine);

}  // namespace bgl::collective_net_emu
