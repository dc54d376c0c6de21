// The run report in a real browser: headless Chromium (Debian's chromium) loads the page the way a
// reader opens it, and the test checks what it rendered (the DOM after the page's scripts ran),
// that no script error or console message occurred, and that a screenshot is not blank. Also the
// report of a real job (bglrun --report) and the tools' errors for bad input.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <png.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "../report/tests/synthetic_stats.hpp"
#include "process_runner.hpp"

namespace bgl::test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

namespace fs = std::filesystem;

// A directory of this test process's files, removed when the process ends.
struct TempDir {
  fs::path path = fs::temp_directory_path() / ("bgl_report_browser." + std::to_string(getpid()));
  TempDir() { fs::create_directories(path); }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
};

fs::path work_dir() {
  static const TempDir dir;
  return dir.path;
}

std::size_t count(const std::string& text, std::string_view what) {
  std::size_t n = 0;
  for (auto p = text.find(what); p != std::string::npos; p = text.find(what, p + what.size()))
    ++n;
  return n;
}

struct Page {
  std::string dom;
  std::string console;  // Chromium's log lines of console messages and uncaught errors
  fs::path screenshot;
  double seconds = 0;
};

std::string chromium() {
  for (const char* c : {"chromium", "chromium-browser"})
    if (run_process({"sh", "-c", std::string("command -v ") + c}, 10).exit_code == 0) return c;
  return "";
}

// Loads `html` in headless Chromium twice: once for the DOM after the page's scripts ran, once for
// a screenshot. Each run has its own profile directory (tests run in parallel) and a time limit.
Page load(const fs::path& html, const std::string& name) {
  const auto browser = chromium();
  EXPECT_FALSE(browser.empty()) << "Debian's chromium is needed (tools/setup.sh installs it)";
  Page page;
  if (browser.empty()) return page;
  const auto dir = work_dir() / name;
  fs::create_directories(dir);
  const std::string common = browser +
                             " --headless --no-sandbox --disable-gpu --no-first-run "
                             "--disable-extensions --enable-logging=stderr --v=0 "
                             "--user-data-dir=" +
                             (dir / "profile").string() + " --window-size=1400,1800 ";
  const std::string url = "file://" + fs::absolute(html).string();
  const auto start = std::chrono::steady_clock::now();
  const auto dom = run_process({"sh", "-c",
                                common + "--dump-dom " + url + " > " + (dir / "dom.html").string() +
                                    " 2> " + (dir / "dom.log").string()},
                               120);
  page.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(dom.exit_code, 0) << read_file(dir / "dom.log");
  page.screenshot = dir / "shot.png";
  const auto shot = run_process({"sh", "-c",
                                 common + "--screenshot=" + page.screenshot.string() + " " + url +
                                     " > " + (dir / "shot.log").string() + " 2>&1"},
                                120);
  EXPECT_EQ(shot.exit_code, 0) << read_file(dir / "shot.log");
  page.dom = read_file(dir / "dom.html");
  for (const auto& log : {dir / "dom.log", dir / "shot.log"}) {
    std::istringstream in(read_file(log));
    for (std::string line; std::getline(in, line);)
      if (line.find(":CONSOLE") != std::string::npos) page.console += line + "\n";
  }
  return page;
}

// The share of pixels that differ from the most common colour, and the number of colours.
struct Ink {
  double share = 0;
  std::size_t colours = 0;
};
Ink ink(const fs::path& png) {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_file(&image, png.c_str())) {
    ADD_FAILURE() << "cannot read " << png << ": " << image.message;
    return {};
  }
  image.format = PNG_FORMAT_RGB;
  std::vector<unsigned char> pixels(PNG_IMAGE_SIZE(image));
  if (!png_image_finish_read(&image, nullptr, pixels.data(), 0, nullptr)) {
    ADD_FAILURE() << "cannot decode " << png << ": " << image.message;
    return {};
  }
  std::map<std::uint32_t, std::size_t> histogram;
  for (std::size_t i = 0; i + 2 < pixels.size(); i += 3)
    ++histogram[std::uint32_t{pixels[i]} << 16 | std::uint32_t{pixels[i + 1]} << 8 | pixels[i + 2]];
  std::size_t most = 0, total = pixels.size() / 3;
  for (const auto& [colour, n] : histogram)
    most = std::max(most, n);
  return {total ? 1.0 - static_cast<double>(most) / static_cast<double>(total) : 0,
          histogram.size()};
}

void expect_rendered(const Page& p) {
  EXPECT_THAT(p.dom, HasSubstr("data-ready=\"1\"")) << "the page's script did not finish";
  EXPECT_THAT(p.dom, Not(HasSubstr("data-errors="))) << p.dom.substr(0, 2000);
  EXPECT_EQ(p.console, "") << "console messages or script errors";
  EXPECT_THAT(p.dom, HasSubstr("<svg id=\"torus\""));
  const auto i = ink(p.screenshot);
  EXPECT_GT(i.share, 0.05) << "the screenshot is (nearly) blank";
  EXPECT_GT(i.colours, 20u) << "the screenshot has hardly any colours";
}

fs::path write_stats(const std::string& name, const nlohmann::json& stats) {
  const auto path = work_dir() / name;
  std::ofstream(path) << stats.dump(1);
  return path;
}

ProcessResult bglreport(const std::vector<std::string>& args) {
  std::vector<std::string> argv{BGLREPORT_PATH};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_process(argv, 60);
}

TEST(ReportBrowser, EverySectionRendersWithoutErrors) {
  report::test::Synthetic s;
  s.protocol = "<img src=x onerror=\"document.title='pwned'\">";
  s.mapping = "<script>document.title='pwned'</script>";
  const auto stats = write_stats("vt.json", report::test::synthetic_stats(s));
  const auto html = work_dir() / "vt.html";
  const auto r = bglreport({stats.string(), "-o", html.string()});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto p = load(html, "vt");
  expect_rendered(p);
  // Every directed link of the 2x2x2 torus, every node, the tables and the charts.
  EXPECT_EQ(count(p.dom, "<line x1="), 48u);
  EXPECT_EQ(count(p.dom, "<rect class=\"node\""), 8u);
  EXPECT_GE(count(p.dom, "<table class=\"data sortable\">"), 6u);
  for (const auto* id : {"protocol-bytes", "latency-histogram-0", "latency-histogram-1",
                         "task-time", "predicted", "collective-sites"})
    EXPECT_THAT(p.dom, HasSubstr("id=\"" + std::string(id) + "\"")) << id;
  // The hostile names were shown as text, never run.
  EXPECT_THAT(p.dom, Not(HasSubstr("pwned</title>")));
  EXPECT_THAT(p.dom, HasSubstr("&lt;script&gt;document.title="));
  EXPECT_THAT(p.dom, Not(HasSubstr("<img")));
}

TEST(ReportBrowser, ThousandTwentyFourTasksOpenQuickly) {
  report::test::Synthetic s{8, 8, 8, true};
  const auto stats = write_stats("vn1024.json", report::test::synthetic_stats(s));
  const auto html = work_dir() / "vn1024.html";
  const auto r = bglreport({stats.string(), "-o", html.string(), "--summary"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("run: 8x8x8 vn, 1,024 tasks"));
  EXPECT_LT(fs::file_size(html), 4u << 20);
  const auto p = load(html, "vn1024");
  expect_rendered(p);
  EXPECT_EQ(count(p.dom, "<line x1="), 512u * 6u);
  EXPECT_EQ(count(p.dom, "<g class=\"vn\">"), 512u);
  EXPECT_THAT(p.dom, HasSubstr("<td>1023</td>"));
  // Headless Chromium starts in about 2 s on this machine; the page itself must not add much.
  EXPECT_LT(p.seconds, 30.0);
}

TEST(ReportBrowser, ReportOfARealJob) {
  const auto stats = work_dir() / "job.json";
  const auto html = work_dir() / "job.html";
  const auto r = run_bglrun(BGLRUN_PATH,
                            {"-np", "8", "--shape", "2x2x2", "--virtual-time", "--stats",
                             stats.string(), "--report", html.string(), ML_SCENARIOS_PATH, "stats"},
                            60);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // The terminal summary: aligned tables of links and protocols, and the predicted time.
  EXPECT_THAT(r.output, HasSubstr("bglrun: run: 2x2x2 heater, 8 tasks; host time"));
  EXPECT_THAT(r.output, HasSubstr("predicted BG/L time"));
  EXPECT_THAT(r.output, HasSubstr("busiest links"));
  EXPECT_THAT(r.output, HasSubstr("protocol mix"));
  EXPECT_THAT(r.output, HasSubstr("report written to " + html.string()));
  const auto j = nlohmann::json::parse(read_file(stats));
  ASSERT_TRUE(j["job"].contains("host_seconds"));
  const auto p = load(html, "job");
  expect_rendered(p);
  EXPECT_EQ(count(p.dom, "<line x1="), 48u);
  // The page agrees with the statistics: links that carried traffic, tasks.
  EXPECT_THAT(p.dom, HasSubstr(std::to_string(j["links"].size()) + " of 48 directed links"));
  for (int rank = 0; rank < 8; ++rank)
    EXPECT_THAT(p.dom, HasSubstr("<tr><td>" + std::to_string(rank) + "</td><td>("));
  EXPECT_THAT(p.dom, HasSubstr("<section id=\"protocols\">"));
}

// A job whose collectives run through the collectives library and through Communicator::run:
// the section of call sites renders with each site's function, file and line.
TEST(ReportBrowser, CollectiveCallSitesOfARealJob) {
  const auto html = work_dir() / "sites.html";
  const auto r = run_bglrun(BGLRUN_PATH,
                            {"-np", "8", "--shape", "2x2x2", "--virtual-time", "--report",
                             html.string(), COLL_SCENARIOS_PATH, "sites"},
                            60);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("collective call sites"));
  EXPECT_THAT(r.output, HasSubstr("sites_through_library (coll_scenarios.cpp:"));
  const auto p = load(html, "sites");
  expect_rendered(p);
  const auto at = p.dom.find("<section id=\"collectives\">");
  ASSERT_NE(at, std::string::npos) << "no section of collective call sites";
  const auto section = p.dom.substr(at, p.dom.find("</section>", at) - at);
  EXPECT_THAT(section, HasSubstr("id=\"collective-sites\""));
  EXPECT_THAT(section, HasSubstr("sites_through_library (coll_scenarios.cpp:"));
  EXPECT_THAT(section, HasSubstr("sites_direct (coll_scenarios.cpp:"));
  EXPECT_THAT(section, HasSubstr("<td>allreduce</td><td>8</td><td>8</td><td>-</td><td>tree</td>"));
  EXPECT_THAT(section, HasSubstr("<td>whole partition, supported type/op: collective network</td>"
                                 "<td>8</td><td>40</td>"));
  EXPECT_THAT(section, HasSubstr("<td>binomial</td><td>the caller's program</td><td>8</td>"
                                 "<td>32</td>"));
}

TEST(ReportBrowser, UnwritableReportFailsBeforeTheJob) {
  const auto marker = work_dir() / "ran";
  const auto r = run_bglrun(BGLRUN_PATH,
                            {"-np", "1", "--report", (work_dir() / "no/such/dir/r.html").string(),
                             "touch", marker.string()},
                            20);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("cannot write the report to " +
                                  (work_dir() / "no/such/dir/r.html").string() +
                                  ": No such file or directory"));
  EXPECT_FALSE(fs::exists(marker));
}

TEST(ReportBrowser, BglreportNamesTheProblemOfABadFile) {
  const auto text = report::test::synthetic_stats({}).dump(1);
  const auto cut = work_dir() / "cut.json";
  std::ofstream(cut) << text.substr(0, text.size() / 2);
  auto r = bglreport({cut.string(), "-o", (work_dir() / "cut.html").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("bglreport: " + cut.string() + ": truncated JSON"));
  EXPECT_FALSE(fs::exists(work_dir() / "cut.html"));

  auto wrong = report::test::synthetic_stats({});
  wrong["tasks"][5]["node"] = "far away";
  const auto bad = write_stats("bad.json", wrong);
  r = bglreport({bad.string(), "-o", (work_dir() / "bad.html").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("/tasks/5/node: expected an array, found string"));

  r = bglreport({(work_dir() / "none.json").string(), "-o", "x.html"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("none.json: cannot open: No such file or directory"));
  r = bglreport({"--bogus"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("unknown option '--bogus'"));
}

}  // namespace
}  // namespace bgl::test
