// bglreport: turns a bglrun statistics file into the run report (one self-contained HTML page).
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "bgl/report/report.hpp"

namespace {

constexpr const char* kUsage =
    "usage: bglreport STATS.json -o REPORT.html [--summary]\n"
    "       bglreport --help | --version\n"
    "\n"
    "Writes the run report of a bglrun statistics file (bglrun --stats) as one HTML page that\n"
    "opens offline in any browser. --summary also prints the terminal summary (top links,\n"
    "protocol mix, predicted time). \"-o -\" writes the page to standard output.\n";

int run(int argc, char** argv) {
  std::optional<std::string> input, output;
  bool summary = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (a == "--version") {
      std::puts("bglreport (bglemu) " BGL_VERSION);
      return 0;
    }
    if (a == "-o" || a == "--output") {
      if (i + 1 >= argc) throw bgl::report::Error("option -o needs a file name");
      output = argv[++i];
    } else if (a.starts_with("--output=")) {
      output = std::string(a.substr(9));
    } else if (a == "--summary") {
      summary = true;
    } else if (a.starts_with("-") && a != "-") {
      throw bgl::report::Error("unknown option '" + std::string(a) + "' (see bglreport --help)");
    } else if (input) {
      throw bgl::report::Error("more than one statistics file given");
    } else {
      input = std::string(a);
    }
  }
  if (!input || !output) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  const auto stats = bgl::report::load(*input);
  const auto page = bgl::report::html(stats, {*input});
  if (*output == "-")
    std::fwrite(page.data(), 1, page.size(), stdout);
  else
    bgl::report::write_file(*output, page);
  if (summary) std::fputs(bgl::report::terminal_summary(stats).c_str(), stdout);
  if (*output != "-")
    std::fprintf(stderr, "bglreport: wrote %s; open it in a browser\n", output->c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const bgl::report::Error& e) {
    std::fprintf(stderr, "bglreport: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bglreport: internal error: %s\n", e.what());
    return 70;
  }
}
