#pragma once
// The launcher's hooks: reserve the collective network's region in the job segment, and format it
// once the segment exists. bglrun calls both; an in-process test does the same around
// job_runtime::Job::format.
#include <cstddef>
#include <span>
#include <string_view>
#include <vector>

#include "bgl/collective_net_emu/options.hpp"
#include "bgl/job_runtime/job.hpp"
#include "bgl/job_runtime/job_config.hpp"

namespace bgl::collective_net_emu {

inline constexpr std::string_view kRegionName = "collnet";

// Bytes of the "collnet" region for this job; options from the environment (ConfigError names a
// malformed BGL_TREE* variable).
std::size_t region_bytes(const job_runtime::JobConfig& config);
std::size_t region_bytes(const job_runtime::JobConfig& config, const Options& options);

// Lays the region out (tree, rings, wires, inboxes). The options must be those region_bytes saw.
void format(const job_runtime::Job& job);
void format(const job_runtime::Job& job, const Options& options);

// The job's formatted region, validated; ConfigError when the job has none (not started by a
// launcher with collective network support) or it does not match the job.
std::span<std::byte> attach_region(const job_runtime::Job& job);

// The parts of the formatted region nobody writes after start-up (its header and the tree's node
// table), for the launcher's corruption watch; none when the job has no region.
std::vector<job_runtime::ControlPart> constant_parts(const job_runtime::Job& job);

}  // namespace bgl::collective_net_emu
