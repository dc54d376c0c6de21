#pragma once
#include <string>

#include "bgl/pkt/machine.hpp"

namespace bgl::run {

// The job's statistics as JSON: configuration, per-task packet counters, per-link traffic and
// per-FIFO depth (high-water mark, full events). Read after all tasks have ended.
std::string statistics_json(const pkt::Machine& machine);

// Virtual time: the predicted BG/L time (the slowest task's clock) next to the host time, and
// the parameter set that produced it, as one line for the terminal.
std::string virtual_time_summary(const pkt::Machine& machine, double host_seconds);
// The model's parameters as a "name = value # unit, source: meaning" file.
std::string parameter_listing(const virtual_time::Params& params);

// One human-readable paragraph (totals, busiest link) for the log.
std::string statistics_summary(const pkt::Machine& machine);

}  // namespace bgl::run
