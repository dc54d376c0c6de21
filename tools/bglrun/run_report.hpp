#pragma once
#include <string_view>

#include "stats_report.hpp"

namespace bgl::bglrun {

// After the job: the terminal summary (on stderr) and, when `report` is given, the HTML report,
// both from the statistics JSON `stats_text`. False (with a message on stderr) when the report
// cannot be made or written.
bool finish_report(std::string_view stats_text, StatsFile* report);

}  // namespace bgl::bglrun
