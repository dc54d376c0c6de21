#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <set>
#include <string>

#include "bgl/torus_emu/error.hpp"
#include "bgl/virtual_time/params.hpp"

namespace bgl::virtual_time {
namespace {

using ::testing::HasSubstr;

std::string error_of(std::string_view text) {
  try {
    Params::from_text(text, "p.txt");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

TEST(Params, DefaultsAreTheSeedFacts) {
  const Params p;
  EXPECT_EQ(p.cpu_hz, 700e6);
  EXPECT_EQ(p.link_cycles(256), 1080u);  // (256 + 14) / 0.25
  EXPECT_EQ(p.link_cycles(32), 184u);
  EXPECT_DOUBLE_EQ(p.seconds(700), 1e-6);
}

TEST(Params, FileOverridesNamedValues) {
  const Params p = Params::from_text("# comment\n\nhop_cycles = 100\n cpu_factor=2.5 # x\n", "f");
  EXPECT_EQ(p.hop_cycles, 100);
  EXPECT_EQ(p.cpu_factor, 2.5);
  EXPECT_EQ(p.packet_read_cycles, Params{}.packet_read_cycles);
}

TEST(Params, ErrorsNameTheFileLineAndProblem) {
  EXPECT_THAT(error_of("hop_cycles = 1\nnope = 3\n"),
              HasSubstr("p.txt:2: unknown parameter 'nope'"));
  EXPECT_THAT(error_of("hop_cycles 3"), HasSubstr("p.txt:1: expected 'name = value'"));
  EXPECT_THAT(error_of("hop_cycles = abc"), HasSubstr("'abc' is not a number"));
  EXPECT_THAT(error_of("hop_cycles = -1"), HasSubstr("negative"));
  EXPECT_THAT(error_of("hop_cycles = nan"), HasSubstr("not a number"));
  EXPECT_THAT(error_of("cpu_hz = 0"), HasSubstr("must be positive"));
  EXPECT_THROW(Params::from_file("/nonexistent/params"), ConfigError);
  // hostile bytes are echoed escaped (input_fuzz found them raw)
  EXPECT_THAT(error_of("link_\xb0\x1b[31m = 1"), HasSubstr("unknown parameter 'link_\\xb0\\x1b"));
  EXPECT_THAT(error_of("hop_cycles = 1\xff"), HasSubstr("'1\\xff' is not a number"));
}

TEST(Params, TableNamesEveryParameterOnceAndJsonListsThem) {
  std::set<std::string_view> names;
  for (const auto& info : parameter_table())
    EXPECT_TRUE(names.insert(info.name).second);
  // No number left out of the table (the launcher's choice of synchronisation follows them).
  EXPECT_EQ(names.size() * sizeof(double), offsetof(Params, sync));
  const std::string json = Params{}.to_json();
  EXPECT_THAT(
      json, HasSubstr("\"hop_cycles\":{\"value\":63,\"unit\":\"cycles\",\"source\":\"measured\"}"));
}

}  // namespace
}  // namespace bgl::virtual_time
