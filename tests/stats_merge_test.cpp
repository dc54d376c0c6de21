// bglrun's merge of several hosts' statistics documents (tools/bglrun/stats_report.cpp,
// merge_statistics): what each host counted added up as one host would have written it, and parts
// of another job or without their tasks refused with an error naming the part.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "../tools/bglrun/stats_report.hpp"
#include "bgl/torus_emu/error.hpp"

namespace bgl::test {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

json task(int rank, bool published, int injected = 0) {
  json t = {{"rank", rank}, {"node", {rank, 0, 0}}, {"t", 0}, {"published", published}};
  if (published) t["counters"] = {{"packets_injected", injected}};
  return t;
}

// Host `h` of two on a 2x1x1 torus: it ran rank h and counted its own packets.
json host_document(int h) {
  return {
      {"job", {{"shape", "2x1x1"}, {"mode", "heater"}, {"tasks", 2}, {"host_seconds", 1.0 + h}}},
      {"tasks", {task(0, h == 0, 5), task(1, h == 1, 7)}},
      {"links",
       {{{"node", {h, 0, 0}}, {"dir", "+x"}, {"packets", 3}, {"bytes", 96}},
        {{"node", {0, 0, 0}}, {"dir", "-x"}, {"packets", 1}, {"bytes", 32}}}},
      {"fifos",
       {{{"node", {h, 0, 0}},
         {"group", 0},
         {"fifo", "local"},
         {"received", 4},
         {"high_water", 2 + h},
         {"full_events", 0}}}},
      {"traffic",
       {{"recorded", true},
        {"tasks", 2},
        {"unit", "message-layer user data bytes"},
        {"bytes", 100},
        {"messages", 1},
        {"pairs", 1},
        {"rows", {{{"source", h}, {"to", {{1 - h, 100, 1}}}}}}}}};
}

TEST(StatsMerge, HostsPartsAddUpToOneJob) {
  json merged = host_document(0);
  bglrun::merge_statistics(merged, host_document(1), "host 1's statistics");
  ASSERT_EQ(merged["tasks"].size(), 2u);
  EXPECT_EQ(merged["tasks"][0]["counters"]["packets_injected"], 5);
  EXPECT_EQ(merged["tasks"][1]["counters"]["packets_injected"], 7);
  EXPECT_TRUE(merged["tasks"][1]["published"]);
  // Links in node-id order, each host's packets on a link added.
  const json links = {{{"node", {0, 0, 0}}, {"dir", "+x"}, {"packets", 3}, {"bytes", 96}},
                      {{"node", {0, 0, 0}}, {"dir", "-x"}, {"packets", 2}, {"bytes", 64}},
                      {{"node", {1, 0, 0}}, {"dir", "+x"}, {"packets", 3}, {"bytes", 96}}};
  EXPECT_EQ(merged["links"], links);
  ASSERT_EQ(merged["fifos"].size(), 2u);
  EXPECT_EQ(merged["fifos"][1]["high_water"], 3);
  EXPECT_EQ(merged["traffic"]["messages"], 2);
  EXPECT_EQ(merged["traffic"]["bytes"], 200);
  EXPECT_EQ(merged["traffic"]["pairs"], 2);
  EXPECT_EQ(merged["traffic"]["rows"].size(), 2u);
  EXPECT_EQ(merged["job"]["host_seconds"], 2.0);
}

TEST(StatsMerge, PartsOfAnotherJobOrWithoutTheirTasksAreRefused) {
  const auto refusal = [](const json& other) -> std::string {
    json merged = host_document(0);
    try {
      bglrun::merge_statistics(merged, other, "host 1's statistics");
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "(accepted)";
  };
  json other_shape = host_document(1);
  other_shape["job"]["shape"] = "4x1x1";
  EXPECT_THAT(refusal(other_shape), HasSubstr("host 1's statistics are of another job: shape"));
  json fewer = host_document(1);
  fewer["tasks"].erase(1);
  EXPECT_THAT(refusal(fewer), HasSubstr("host 1's statistics do not list every task"));
  EXPECT_THAT(refusal(json::object()), HasSubstr("host 1's statistics has no \"job\""));
  json bad_link = host_document(1);
  bad_link["links"][0]["dir"] = "+w";
  EXPECT_THAT(refusal(bad_link), HasSubstr("unknown link or FIFO name \"+w\""));
}

}  // namespace
}  // namespace bgl::test
