// The run report from statistics made by hand: every section, escaping of hostile names, clear
// errors for malformed files, and a 1,024-task partition.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>

#include "bgl/report/report.hpp"
#include "synthetic_stats.hpp"

namespace bgl::report {
namespace {

using test::Synthetic;
using test::synthetic_stats;
using ::testing::HasSubstr;
using ::testing::Not;

std::size_t count(const std::string& text, std::string_view what) {
  std::size_t n = 0;
  for (auto p = text.find(what); p != std::string::npos; p = text.find(what, p + what.size()))
    ++n;
  return n;
}

std::string error_of(std::string_view text) {
  try {
    parse(text, "stats.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

std::string html_error_of(const nlohmann::json& stats) {
  try {
    html(stats);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(Report, EverySectionOfAVirtualTimeRun) {
  const auto page = html(synthetic_stats({}), {"run.json"});
  for (const auto* id : {"job", "torus", "links", "protocols", "latency", "tasks", "collectives",
                         "fifos", "parameters"})
    EXPECT_THAT(page, HasSubstr("<section id=\"" + std::string(id) + "\">")) << id;
  // 2x2x2: 8 nodes, 6 directed links each.
  EXPECT_EQ(count(page, "<line x1="), 48u);
  EXPECT_THAT(page, HasSubstr("id=\"predicted\""));
  EXPECT_THAT(page, HasSubstr("id=\"latency-histogram-0\""));
  EXPECT_THAT(page, HasSubstr("id=\"task-time\""));
  EXPECT_THAT(page, HasSubstr("from run.json"));
  // Self-contained: nothing is fetched.
  EXPECT_THAT(page, Not(HasSubstr("http://")));
  EXPECT_THAT(page, Not(HasSubstr("https://")));
  EXPECT_THAT(page, Not(HasSubstr(" src=")));
}

TEST(Report, WithoutVirtualTimeTheTimeSectionsAreLeftOut) {
  Synthetic s;
  s.virtual_time = false;
  const auto page = html(synthetic_stats(s));
  EXPECT_THAT(page, Not(HasSubstr("<section id=\"latency\">")));
  EXPECT_THAT(page, Not(HasSubstr("<section id=\"parameters\">")));
  EXPECT_THAT(page, Not(HasSubstr("id=\"task-time\"")));
  EXPECT_THAT(page, HasSubstr("not predicted"));
  EXPECT_THAT(page, HasSubstr("<section id=\"protocols\">"));
}

TEST(Report, LatencyNeedsTheProtocolList) {
  Synthetic s;
  s.latency = false;
  EXPECT_THAT(html(synthetic_stats(s)), Not(HasSubstr("<section id=\"latency\">")));
}

TEST(Report, VirtualNodeNodesShowTheirTwoTasks) {
  Synthetic s;
  s.vn = true;
  const auto page = html(synthetic_stats(s));
  EXPECT_EQ(count(page, "<g class=\"vn\">"), 8u);
  EXPECT_THAT(page, HasSubstr("node (1,0,0): ranks 1, 9"));
}

TEST(Report, MeshLinksThatDoNotExistAreNotDrawn) {
  auto stats = synthetic_stats({});
  stats["job"]["shape"] = "2x2x2 mesh:z";
  // z: 8 nodes, only the link towards the other plane exists: 4 x (+z) + 4 x (-z) instead of 16.
  EXPECT_EQ(count(html(stats), "<line x1="), 48u - 8u);
}

TEST(Report, NamesWithHtmlSpecialCharactersAreEscaped) {
  const std::string hostile = "<script>alert('x')</script>&\"<img src=x onerror=alert(1)>";
  Synthetic s;
  s.mapping = hostile;
  s.protocol = hostile;
  s.site = hostile;
  s.rule = hostile;
  auto stats = synthetic_stats(s);
  stats["virtual_time"]["parameters_source"] = "</style><b>" + hostile;
  stats["job"]["mode"] = "vn<i>";
  stats["fifos"][0]["fifo"] = hostile;
  stats["virtual_time"]["parameters"][hostile] = {
      {"value", 1}, {"unit", hostile}, {"source", hostile}};
  std::string bad_utf8 = "\xff\xfe\x01";
  stats["tasks"][0]["message_layer"]["protocols"][bad_utf8] =
      stats["tasks"][0]["message_layer"]["protocols"]["rendezvous"];
  const auto page = html(stats, {"<source>.json"});
  EXPECT_THAT(page, Not(HasSubstr("<script>alert")));
  EXPECT_THAT(page, Not(HasSubstr("<img")));
  EXPECT_THAT(page, Not(HasSubstr("<b>")));
  EXPECT_THAT(page, Not(HasSubstr("<i>")));
  EXPECT_THAT(page, Not(HasSubstr("</style><b>")));
  EXPECT_THAT(page, Not(HasSubstr("<source>")));
  EXPECT_THAT(page, HasSubstr("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;&quot;"));
  EXPECT_THAT(page, HasSubstr("vn&lt;i&gt;"));
  // Invalid UTF-8 and control characters become U+FFFD.
  EXPECT_THAT(page, Not(HasSubstr("\xff")));
  EXPECT_THAT(page, HasSubstr("\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"));
  // The page's own elements are still all there, and only its own two scripts.
  EXPECT_EQ(count(page, "<script>"), 2u);
  EXPECT_EQ(count(page, "</section>"), 9u);
}

TEST(Report, TruncatedFilesAreNamedAsSuch) {
  const auto text = synthetic_stats({}).dump(1);
  for (const auto cut : {text.size() / 3, text.size() / 2, text.size() - 2}) {
    const auto e = error_of(std::string_view(text).substr(0, cut));
    EXPECT_THAT(e, HasSubstr("stats.json: truncated JSON")) << cut;
  }
  EXPECT_THAT(error_of(""), HasSubstr("stats.json: the file is empty"));
}

TEST(Report, NumbersBeyondADoubleAreMalformedJson) {
  // nlohmann's parser reports these as out_of_range, not parse_error (input_fuzz found it)
  EXPECT_THAT(error_of("{\"job\": {\"x\": 1001e3080}, \"tasks\": []}"),
              HasSubstr("stats.json: malformed JSON: number overflow parsing '1001e3080'"));
}

TEST(Report, MalformedJsonIsNamedWithItsPosition) {
  EXPECT_THAT(error_of("{\n \"job\": {\n  \"shape\": 2x2x2\n }\n}"),
              HasSubstr("stats.json: malformed JSON at line 3, column 13"));
  EXPECT_THAT(error_of("{\"job\": {}, \"tasks\": []} trailing"),
              HasSubstr("stats.json: malformed JSON at line 1"));
  EXPECT_THAT(error_of("[1, 2]"), HasSubstr("stats.json: the top level: expected a bglrun "
                                            "statistics object, found array"));
  EXPECT_THAT(error_of("{\"links\": []}"), HasSubstr("missing member \"job\": not a bglrun "
                                                     "statistics file"));
}

TEST(Report, FieldsOfTheWrongTypeAreNamedByTheirPointer) {
  auto stats = synthetic_stats({});
  stats["tasks"] = 5;
  EXPECT_THAT(html_error_of(stats), HasSubstr("/tasks: expected an array, found number"));

  stats = synthetic_stats({});
  stats["links"][3]["bytes"] = "many";
  EXPECT_THAT(html_error_of(stats), HasSubstr("/links/3/bytes: expected a non-negative integer, "
                                              "found string"));

  stats = synthetic_stats({});
  stats["links"][0]["bytes"] = -4;
  EXPECT_THAT(html_error_of(stats), HasSubstr("/links/0/bytes: expected a non-negative integer, "
                                              "found -4"));

  stats = synthetic_stats({});
  stats["links"][1]["node"] = nlohmann::json::array({5, 0, 0});
  EXPECT_THAT(html_error_of(stats), HasSubstr("/links/1/node: node (5,0,0) is outside the "
                                              "partition"));

  stats = synthetic_stats({});
  stats["links"][1]["dir"] = "<up>";
  EXPECT_THAT(html_error_of(stats), HasSubstr("/links/1/dir: expected a direction (+x, -x, +y, "
                                              "-y, +z, -z), found \"<up>\""));

  stats = synthetic_stats({});
  stats["job"]["shape"] = "2x2";
  EXPECT_THAT(html_error_of(stats), HasSubstr("/job/shape: expected a shape"));

  stats = synthetic_stats({});
  stats["job"]["shape"] = "99x2x2";
  EXPECT_THAT(html_error_of(stats), HasSubstr("/job/shape: expected a shape"));

  stats = synthetic_stats({});
  stats["virtual_time"]["protocols"][0]["latency_ns"].erase("p99");
  EXPECT_THAT(html_error_of(stats),
              HasSubstr("/virtual_time/protocols/0/latency_ns: missing member \"p99\""));

  stats = synthetic_stats({});
  stats["tasks"][2]["message_layer"]["protocols"]["eager"]["bytes_sent"] = 1.5;
  EXPECT_THAT(html_error_of(stats),
              HasSubstr("/tasks/2/message_layer/protocols/eager/bytes_sent: expected a "
                        "non-negative integer, found 1.5"));
}

TEST(Report, LoadNamesTheFileAndItsProblem) {
  const auto dir = std::filesystem::temp_directory_path() / "bgl_report_test";
  std::filesystem::create_directories(dir);
  const auto missing = dir / "no-such.json";
  try {
    load(missing);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr(missing.string() + ": cannot open: No such file"));
  }
  try {
    load(dir);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("is a directory"));
  }
  const auto cut = dir / "cut.json";
  std::ofstream(cut) << synthetic_stats({}).dump().substr(0, 100);
  try {
    load(cut);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr(cut.string() + ": truncated JSON"));
  }
  try {
    write_file(dir / "no/such/dir/run.html", "x");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("no/such/dir/run.html: No such file or directory"));
  }
  const auto page = dir / "run.html";
  write_file(page, "<p>ok</p>");
  std::ifstream in(page);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "<p>ok</p>");
  std::filesystem::remove_all(dir);
}

TEST(Report, ThousandTwentyFourTasksStayCompactAndQuick) {
  Synthetic s{8, 8, 8, true};
  const auto stats = synthetic_stats(s);
  const auto start = std::chrono::steady_clock::now();
  const auto page = html(stats);
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  EXPECT_LT(took.count(), 5.0);
  EXPECT_EQ(count(page, "<line x1="), 512u * 6u);
  EXPECT_EQ(count(page, "<g class=\"vn\">"), 512u);
  // One row per task in the task table, plus the header.
  EXPECT_THAT(page, HasSubstr("<td>1023</td>"));
  // The listings stay short: 20 busiest links, 20 FIFOs.
  EXPECT_LT(page.size(), 4u << 20) << page.size();
}

TEST(Report, CollectiveCallSitesShowAlgorithmRuleAndTime) {
  const auto page = html(synthetic_stats({}));
  const auto at = page.find("<section id=\"collectives\">");
  ASSERT_NE(at, std::string::npos);
  const auto section = page.substr(at, page.find("</section>", at) - at);
  EXPECT_THAT(section, HasSubstr("id=\"collective-sites\""));  // the chart
  EXPECT_THAT(section, HasSubstr("3 rows"));
  // Site, collective, ranks, bytes, root, algorithm, rule, tasks, calls, per call, slowest task,
  // and the BG/L times.
  EXPECT_THAT(section, HasSubstr(">main (halo.c:42)</span></td><td>bcast</td><td>8</td><td>8</td>"
                                 "<td>0</td><td>binomial</td><td>&lt; 12 KiB: binomial</td><td>8"
                                 "</td><td>80</td><td>6.25 ms</td>"));
  EXPECT_THAT(section, HasSubstr("BG/L time per call"));
  EXPECT_THAT(section, HasSubstr("<td>allreduce</td><td>8</td><td>16</td><td>-</td><td>tree</td>"));
  // The full location on hover.
  EXPECT_THAT(section, HasSubstr("title=\"main (halo.c:42)&#10;/src/solver.c:100&#10;/bin/prog"));
  // Calls that found no room in a task's table are said to be missing.
  EXPECT_THAT(section, HasSubstr("1 task(s) filled their table of 256 rows: 5 calls"));

  Synthetic s;
  s.virtual_time = false;
  const auto host_only = html(synthetic_stats(s));
  EXPECT_THAT(host_only, HasSubstr("<section id=\"collectives\">"));
  EXPECT_THAT(host_only, Not(HasSubstr("BG/L time per call")));

  s.collective_sites = false;
  EXPECT_THAT(html(synthetic_stats(s)), Not(HasSubstr("<section id=\"collectives\">")));

  auto bad = synthetic_stats({});
  bad["collective_sites"]["sites"][1]["calls"] = "many";
  EXPECT_THAT(html_error_of(bad), HasSubstr("/collective_sites/sites/1/calls: expected a "
                                            "non-negative integer, found string"));
  bad = synthetic_stats({});
  bad["collective_sites"]["sites"][2].erase("algorithm");
  EXPECT_THAT(html_error_of(bad),
              HasSubstr("/collective_sites/sites/2: missing member \"algorithm\""));
}

TEST(Report, ManyCollectiveCallSitesAreListedShort) {
  Synthetic s{8, 8, 8, true};
  s.sites = 1000;  // what bglrun keeps at most
  const auto page = html(synthetic_stats(s));
  EXPECT_THAT(page, HasSubstr("1,000 rows"));
  EXPECT_THAT(page, HasSubstr("The 200 rows with the most host time"));
  const auto at = page.find("<section id=\"collectives\">");
  const auto section = page.substr(at, page.find("</section>", at) - at);
  EXPECT_EQ(count(section, "<tr><td><span"), 200u);
  EXPECT_LT(page.size(), 4u << 20) << page.size();
}

TEST(Report, HugePartitionsAreListedNotDrawn) {
  auto stats = synthetic_stats({});
  stats["job"]["shape"] = "64x64x64";
  const auto page = html(stats);
  EXPECT_THAT(page, HasSubstr("262,144 nodes, too many to draw"));
  EXPECT_EQ(count(page, "<line x1="), 0u);
  EXPECT_LT(page.size(), 200u << 10);
}

TEST(Summary, AlignedColumns) {
  const auto text = terminal_summary(synthetic_stats({}), 3);
  EXPECT_THAT(text, HasSubstr("run: 2x2x2 heater, 8 tasks; host time 1.500 s; predicted BG/L "
                              "time"));
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);)
    lines.push_back(l);
  // run line, links header + 3, protocols header + 2, call sites header + 3.
  ASSERT_EQ(lines.size(), 1u + 4u + 3u + 4u) << text;
  EXPECT_THAT(lines[1], HasSubstr("busiest links"));
  EXPECT_THAT(lines[5], HasSubstr("protocol mix"));
  // Right-aligned numbers: each table's lines end at the same column.
  for (std::size_t i = 2; i <= 4; ++i)
    EXPECT_EQ(lines[i].size(), lines[1].size()) << text;
  for (std::size_t i = 6; i <= 7; ++i)
    EXPECT_EQ(lines[i].size(), lines[5].size()) << text;
  EXPECT_THAT(lines[8], HasSubstr("collective call sites"));
  for (std::size_t i = 9; i <= 11; ++i)
    EXPECT_EQ(lines[i].size(), lines[8].size()) << text;
  // The site with the most host time first, with its algorithm and time per call.
  EXPECT_THAT(lines[9], HasSubstr("main (halo.c:42)"));
  EXPECT_THAT(lines[9], HasSubstr("binomial"));
  EXPECT_THAT(lines[9], HasSubstr("6.25 ms"));  // 0.5 s over 80 calls
  // With latencies: each protocol's median and 99th percentile.
  EXPECT_THAT(lines[5], HasSubstr("p50 latency  p99 latency"));
  EXPECT_THAT(text, HasSubstr("11.00 us"));  // the rendezvous median
}

}  // namespace
}  // namespace bgl::report
