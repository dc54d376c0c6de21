#include "run_report.hpp"

#include <cstdio>

#include <nlohmann/json.hpp>

#include "bgl/report/report.hpp"

namespace bgl::bglrun {

bool finish_report(std::string_view stats_text, StatsFile* report) {
  try {
    const auto stats = report::parse(stats_text, "the job's statistics");
    std::string summary = report::terminal_summary(stats);
    std::fprintf(stderr, "bglrun: %s", summary.c_str());
    if (!report) return true;
    if (!report->commit(report::html(stats))) return false;
    std::fprintf(stderr, "bglrun: report written to %s; open it in a browser\n",
                 report->display_path().c_str());
    return true;
  } catch (const report::Error& e) {
    std::fprintf(stderr, "bglrun: cannot make the report: %s\n", e.what());
    return false;
  }
}

}  // namespace bgl::bglrun
