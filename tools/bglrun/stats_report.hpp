#pragma once
#include <string>

#include "bgl/pkt/machine.hpp"

namespace bgl::run {

// The job's statistics as JSON: configuration, per-task packet counters, per-link traffic and
// per-FIFO depth (high-water mark, full events). Read after all tasks have ended.
std::string statistics_json(const pkt::Machine& machine);

// One human-readable paragraph (totals, busiest link) for the log.
std::string statistics_summary(const pkt::Machine& machine);

}  // namespace bgl::run
