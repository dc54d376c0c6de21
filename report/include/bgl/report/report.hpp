#pragma once
// The run report: a bglrun statistics file (bglrun --stats) turned into one self-contained HTML
// page (bglrun --report, bglreport) and into a short table for the terminal. Reads only the JSON,
// so it works on files from earlier runs and other machines.
#include <nlohmann/json_fwd.hpp>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>

namespace bgl::report {

// A statistics file that cannot be read or has not the expected structure. The message names the
// problem and where it is (a byte offset for malformed JSON, a JSON pointer such as
// "/tasks/3/node" for a field of the wrong type).
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Parses statistics text; `source` names it in errors (e.g. the file name).
nlohmann::json parse(std::string_view text, std::string_view source);
// Reads and parses a statistics file.
nlohmann::json load(const std::filesystem::path& path);

struct PageOptions {
  std::string source;  // where the statistics came from, shown in the page's header
};

// The whole HTML page: inline CSS, script and SVG, nothing fetched. Every text taken from the
// statistics is escaped. Throws Error naming the first field that has the wrong type.
std::string html(const nlohmann::json& stats, const PageOptions& options = {});

// Aligned columns for the terminal: the predicted time (virtual time), the busiest links and the
// protocol mix. Throws Error like html().
std::string terminal_summary(const nlohmann::json& stats, std::size_t top_links = 5);

// Writes `text` to `path` through a temporary file in the same directory renamed into place, so a
// reader never sees half a page. Throws Error naming the path and the problem.
void write_file(const std::filesystem::path& path, std::string_view text);

}  // namespace bgl::report
