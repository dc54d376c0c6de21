#include "bgl/job_runtime/job_config.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "bgl/job_runtime/env.hpp"
#include "bgl/job_runtime/node_mode.hpp"
#include "bgl/torus_emu/error.hpp"

namespace bgl::job_runtime {
namespace {

using ::testing::HasSubstr;

// The message of the ConfigError that `f` throws ("" and a test failure when it does not).
template <class F>
std::string config_error(F&& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a ConfigError";
  return "";
}

// Clears the BGL_* variables JobOptions reads for the duration of a test and restores them.
class JobConfigTest : public ::testing::Test {
 protected:
  static constexpr const char* kVariables[] = {
      "BGL_SHAPE",   "BGL_MESH",         "BGL_MODE", "BGL_MAPPING",
      "BGL_MAPFILE", "BGL_FIFO_PACKETS", "BGL_SEED", "BGL_INJ_FIFO_PACKETS"};

  void SetUp() override {
    for (const char* name : kVariables) {
      if (const char* v = std::getenv(name)) saved_[name] = v;
      ::unsetenv(name);
    }
  }
  void TearDown() override {
    for (const char* name : kVariables) {
      if (auto it = saved_.find(name); it != saved_.end()) {
        ::setenv(name, it->second.c_str(), 1);
      } else {
        ::unsetenv(name);
      }
    }
    for (const auto& path : temp_files_)
      std::filesystem::remove(path);
  }

  static void set(const char* name, const char* value) { ::setenv(name, value, 1); }

  std::filesystem::path temp_file(const std::string& stem, const std::string& text) {
    const auto path =
        std::filesystem::temp_directory_path() / (stem + "." + std::to_string(::getpid()) + "." +
                                                  std::to_string(temp_files_.size()) + ".map");
    std::ofstream(path) << text;
    temp_files_.push_back(path);
    return path;
  }

  static JobOptions tasks(int n) {
    JobOptions o;
    o.ntasks = n;
    return o;
  }

 private:
  std::map<std::string, std::string> saved_;
  std::vector<std::filesystem::path> temp_files_;
};

TEST_F(JobConfigTest, DefaultShapeIsTheMostCubicWithExactlyTheNodesNeeded) {
  const std::map<int, std::string> expected{
      {1, "1x1x1"},  {2, "2x1x1"},  {4, "2x2x1"},  {7, "7x1x1"},  {8, "2x2x2"},  {12, "3x2x2"},
      {16, "4x2x2"}, {27, "3x3x3"}, {32, "4x4x2"}, {64, "4x4x4"}, {512, "8x8x8"}};
  for (const auto& [n, shape] : expected) {
    const JobConfig c = JobConfig::resolve(tasks(n));
    EXPECT_EQ(c.shape.to_string(), shape) << n << " tasks";
    EXPECT_EQ(c.shape.node_count(), n);
    EXPECT_EQ(c.ntasks(), n);
    EXPECT_EQ(c.mode, NodeMode::heater);
    for (auto d : {torus_emu::Dim::x, torus_emu::Dim::y, torus_emu::Dim::z})
      EXPECT_TRUE(c.shape.is_torus(d));
  }
}

TEST_F(JobConfigTest, DefaultShapeOrdersExtentsXAtLeastYAtLeastZ) {
  for (int n = 1; n <= 200; ++n) {
    const torus_emu::Shape s = JobConfig::default_shape(n);
    const int x = s.extent(torus_emu::Dim::x), y = s.extent(torus_emu::Dim::y),
              z = s.extent(torus_emu::Dim::z);
    EXPECT_GE(x, y) << n;
    EXPECT_GE(y, z) << n;
    EXPECT_GE(s.node_count(), n);
    if (n <= 64) {
      EXPECT_EQ(s.node_count(), n) << "every n <= 64 factors with extents <= 64";
    }
  }
  // A prime above the largest extent cannot be a shape; the next count that factors is used.
  EXPECT_EQ(JobConfig::default_shape(67).to_string(), "17x2x2");
  EXPECT_EQ(JobConfig::default_shape(0).to_string(), "1x1x1");
}

TEST_F(JobConfigTest, VirtualNodeModeNeedsHalfTheNodes) {
  JobOptions o = tasks(16);
  o.mode = "vn";
  const JobConfig c = JobConfig::resolve(o);
  EXPECT_EQ(c.shape.to_string(), "2x2x2");
  EXPECT_EQ(c.mode, NodeMode::virtual_node);
  EXPECT_EQ(c.mapping.tasks_per_node(), 2);
  EXPECT_EQ(c.ntasks(), 16);

  o.ntasks = 7;  // ceil(7 / 2) = 4 nodes
  EXPECT_EQ(JobConfig::resolve(o).shape.to_string(), "2x2x1");
}

TEST_F(JobConfigTest, ResolveFillsDefaults) {
  const JobConfig c = JobConfig::resolve(tasks(8));
  EXPECT_EQ(c.fifo_packets, static_cast<std::uint32_t>(JobConfig::kDefaultFifoPackets));
  EXPECT_EQ(c.fifo_packets, 64u);
  EXPECT_EQ(c.mapping_source, "order XYZT");
  EXPECT_EQ(c.seed, 0x5eedu);
  // XYZT: rank = x + X * (y + Y * z).
  for (torus_emu::Rank r = 0; r < 8; ++r)
    EXPECT_EQ(c.mapping.location(r).node, r);
  EXPECT_THAT(c.summary(), HasSubstr("8 tasks on 2x2x2"));
  EXPECT_THAT(c.summary(), HasSubstr("heater mode"));
  EXPECT_THAT(c.summary(), HasSubstr("mapping order XYZT"));
  EXPECT_THAT(c.summary(), HasSubstr("64-packet"));
}

TEST_F(JobConfigTest, ResolveRequiresAPositiveTaskCount) {
  EXPECT_THAT(config_error([] { JobConfig::resolve(JobOptions{}); }), HasSubstr("-np"));
  EXPECT_THAT(config_error([&] { JobConfig::resolve(tasks(0)); }), HasSubstr("-np 0"));
  EXPECT_THAT(config_error([&] { JobConfig::resolve(tasks(-3)); }), HasSubstr("expected 1.."));
}

TEST_F(JobConfigTest, ExplicitShapeMayHaveSpareNodes) {
  JobOptions o = tasks(5);
  o.shape = "4x2x1";
  const JobConfig c = JobConfig::resolve(o);
  EXPECT_EQ(c.shape.to_string(), "4x2x1");
  EXPECT_EQ(c.ntasks(), 5);
  EXPECT_EQ(c.mapping.location(4).node, 4u);
}

TEST_F(JobConfigTest, MeshAppliesToExplicitAndDefaultShapes) {
  JobOptions o = tasks(8);
  o.shape = "4x2x1";
  o.mesh = "x";
  JobConfig c = JobConfig::resolve(o);
  EXPECT_FALSE(c.shape.is_torus(torus_emu::Dim::x));
  EXPECT_TRUE(c.shape.is_torus(torus_emu::Dim::y));
  EXPECT_EQ(c.shape.to_string(), "4x2x1 mesh:x");

  JobOptions d = tasks(8);
  d.mesh = "yz";
  c = JobConfig::resolve(d);
  EXPECT_EQ(c.shape.to_string(), "2x2x2 mesh:yz");

  d.mesh = "w";
  EXPECT_THAT(config_error([&] { JobConfig::resolve(d); }), HasSubstr("not one of x, y, z"));
}

TEST_F(JobConfigTest, ParsesEveryModeSpelling) {
  const std::map<std::string, NodeMode> spellings{{"heater", NodeMode::heater},
                                                  {"coprocessor", NodeMode::coprocessor},
                                                  {"co", NodeMode::coprocessor},
                                                  {"vn", NodeMode::virtual_node},
                                                  {"virtual_node", NodeMode::virtual_node},
                                                  {"virtual-node", NodeMode::virtual_node}};
  for (const auto& [text, mode] : spellings) {
    EXPECT_EQ(parse_node_mode(text, "--mode"), mode) << text;
    JobOptions o = tasks(8);
    o.mode = text;
    EXPECT_EQ(JobConfig::resolve(o).mode, mode) << text;
  }
  EXPECT_EQ(to_string(NodeMode::heater), "heater");
  EXPECT_EQ(to_string(NodeMode::coprocessor), "coprocessor");
  EXPECT_EQ(to_string(NodeMode::virtual_node), "vn");
  EXPECT_EQ(tasks_per_node(NodeMode::coprocessor), 1);
  EXPECT_EQ(tasks_per_node(NodeMode::virtual_node), 2);
}

TEST_F(JobConfigTest, RejectsAnUnknownModeListingTheChoices) {
  for (const char* bad : {"VN", "Heater", "virtual", "", "co "}) {
    const std::string msg = config_error([&] { parse_node_mode(bad, "--mode"); });
    EXPECT_THAT(msg, HasSubstr("expected heater, coprocessor or vn")) << bad;
    EXPECT_THAT(msg, HasSubstr("--mode='" + std::string(bad) + "'"));
  }
  JobOptions o = tasks(8);
  o.mode = "dual";
  EXPECT_THAT(config_error([&] { JobConfig::resolve(o); }),
              HasSubstr("expected heater, coprocessor or vn"));
}

TEST_F(JobConfigTest, RejectsMoreTasksThanTheShapeHolds) {
  JobOptions o = tasks(9);
  o.shape = "2x2x2";
  EXPECT_THAT(config_error([&] { JobConfig::resolve(o); }),
              HasSubstr("9 tasks do not fit shape 2x2x2 in heater mode"));

  o.ntasks = 17;
  o.mode = "vn";
  EXPECT_THAT(config_error([&] { JobConfig::resolve(o); }),
              HasSubstr("17 tasks do not fit shape 2x2x2 in vn mode (16 task slots)"));
  o.ntasks = 16;
  EXPECT_EQ(JobConfig::resolve(o).ntasks(), 16);
}

TEST_F(JobConfigTest, RejectsMappingOrderTogetherWithMappingFile) {
  JobOptions o = tasks(8);
  o.mapping = "XYZT";
  o.mapfile = temp_file("both", "0 0 0\n");
  EXPECT_THAT(config_error([&] { JobConfig::resolve(o); }), HasSubstr("not both"));
}

TEST_F(JobConfigTest, FifoPacketsMustBeAPowerOfTwoFrom2To65536) {
  for (int ok : {2, 4, 64, 1024, 65536}) {
    JobOptions o = tasks(8);
    o.fifo_packets = ok;
    EXPECT_EQ(JobConfig::resolve(o).fifo_packets, static_cast<std::uint32_t>(ok));
  }
  for (int bad : {-4, 0, 1, 3, 6, 100, 131072}) {
    JobOptions o = tasks(8);
    o.fifo_packets = bad;
    EXPECT_THAT(config_error([&] { JobConfig::resolve(o); }),
                HasSubstr("expected a power of two in [2, 65536]"))
        << bad;
  }
}

TEST_F(JobConfigTest, UsesTheMappingOrderGiven) {
  JobOptions o = tasks(8);
  o.mapping = "ZYXT";
  const JobConfig c = JobConfig::resolve(o);
  EXPECT_EQ(c.mapping_source, "order ZYXT");
  // z fastest: rank 1 is (0,0,1), rank 4 is (1,0,0).
  EXPECT_EQ(c.mapping.coord(1), (torus_emu::Coord{0, 0, 1}));
  EXPECT_EQ(c.mapping.coord(4), (torus_emu::Coord{1, 0, 0}));

  o.mapping = "XYQ";
  EXPECT_THAT(config_error([&] { JobConfig::resolve(o); }), HasSubstr("Q"));
}

TEST_F(JobConfigTest, UsesAMappingFileAndNamesIt) {
  JobOptions o = tasks(4);
  o.shape = "2x2x1";
  const auto path = temp_file("mapping", "# reversed\n1 1 0\n0 1 0\n\n1 0 0\n0 0 0\n");
  o.mapfile = path.string();
  const JobConfig c = JobConfig::resolve(o);
  EXPECT_EQ(c.mapping_source, "file " + path.string());
  EXPECT_EQ(c.mapping.coord(0), (torus_emu::Coord{1, 1, 0}));
  EXPECT_EQ(c.mapping.coord(1), (torus_emu::Coord{0, 1, 0}));
  EXPECT_EQ(c.mapping.coord(2), (torus_emu::Coord{1, 0, 0}));
  EXPECT_EQ(c.mapping.coord(3), (torus_emu::Coord{0, 0, 0}));
  EXPECT_THAT(c.summary(), HasSubstr("mapping file " + path.string()));
}

TEST_F(JobConfigTest, ReportsAMalformedMappingFileByPathAndLine) {
  JobOptions o = tasks(2);
  o.shape = "2x1x1";
  const auto path = temp_file("bad", "0 0 0\n0 0 0\n");
  o.mapfile = path.string();
  const std::string msg = config_error([&] { JobConfig::resolve(o); });
  EXPECT_THAT(msg, HasSubstr(path.filename().string()));
  EXPECT_THAT(msg, HasSubstr(":2:"));

  o.mapfile = (std::filesystem::temp_directory_path() / "bglemu-no-such-mapfile.map").string();
  EXPECT_THAT(config_error([&] { JobConfig::resolve(o); }), HasSubstr("no-such-mapfile"));
}

TEST_F(JobConfigTest, MergeEnvironmentReadsEveryVariable) {
  const auto path = temp_file("env", "0 0 0\n1 0 0\n");
  set("BGL_SHAPE", "2x1x1");
  set("BGL_MESH", "x");
  set("BGL_MODE", "co");
  set("BGL_MAPPING", "YXZ");
  set("BGL_MAPFILE", path.c_str());
  set("BGL_FIFO_PACKETS", "8");
  set("BGL_SEED", "12345");
  JobOptions o = tasks(2);
  o.merge_environment();
  EXPECT_EQ(o.shape, "2x1x1");
  EXPECT_EQ(o.mesh, "x");
  EXPECT_EQ(o.mode, "co");
  EXPECT_EQ(o.mapping, "YXZ");
  EXPECT_EQ(o.mapfile, path.string());
  EXPECT_EQ(o.fifo_packets, 8);
  EXPECT_EQ(o.seed, 12345u);
  EXPECT_EQ(o.ntasks, 2);
}

TEST_F(JobConfigTest, MergeEnvironmentResolvesToTheConfiguredJob) {
  set("BGL_SHAPE", "4x2x1");
  set("BGL_MESH", "y");
  set("BGL_MODE", "vn");
  set("BGL_MAPPING", "TXYZ");
  set("BGL_FIFO_PACKETS", "16");
  set("BGL_SEED", "99");
  JobOptions o = tasks(16);
  o.merge_environment();
  const JobConfig c = JobConfig::resolve(o);
  EXPECT_EQ(c.shape.to_string(), "4x2x1 mesh:y");
  EXPECT_EQ(c.mode, NodeMode::virtual_node);
  EXPECT_EQ(c.mapping_source, "order TXYZ");
  EXPECT_EQ(c.mapping.location(1), (torus_emu::TaskLocation{0, 1}));  // t varies fastest
  EXPECT_EQ(c.fifo_packets, 16u);
  EXPECT_EQ(c.seed, 99u);
}

TEST_F(JobConfigTest, MergeEnvironmentKeepsFieldsAlreadySet) {
  set("BGL_SHAPE", "8x8x8");
  set("BGL_MESH", "xyz");
  set("BGL_MODE", "vn");
  set("BGL_MAPPING", "ZYXT");
  set("BGL_MAPFILE", "/nonexistent");
  set("BGL_FIFO_PACKETS", "8");
  set("BGL_SEED", "1");
  JobOptions o = tasks(8);
  o.shape = "2x2x2";
  o.mesh = "z";
  o.mode = "heater";
  o.mapping = "XYZT";
  o.mapfile = "given.map";
  o.fifo_packets = 32;
  o.seed = 7;
  o.merge_environment();
  EXPECT_EQ(o.shape, "2x2x2");
  EXPECT_EQ(o.mesh, "z");
  EXPECT_EQ(o.mode, "heater");
  EXPECT_EQ(o.mapping, "XYZT");
  EXPECT_EQ(o.mapfile, "given.map");
  EXPECT_EQ(o.fifo_packets, 32);
  EXPECT_EQ(o.seed, 7u);
}

TEST_F(JobConfigTest, MergeEnvironmentIgnoresUnsetAndEmptyVariables) {
  set("BGL_SHAPE", "");
  set("BGL_FIFO_PACKETS", "");
  JobOptions o = tasks(8);
  o.merge_environment();
  EXPECT_FALSE(o.shape);
  EXPECT_FALSE(o.mesh);
  EXPECT_FALSE(o.mode);
  EXPECT_FALSE(o.mapping);
  EXPECT_FALSE(o.mapfile);
  EXPECT_FALSE(o.fifo_packets);
  EXPECT_FALSE(o.seed);
}

TEST_F(JobConfigTest, MergeEnvironmentNamesAMalformedVariable) {
  {
    set("BGL_FIFO_PACKETS", "lots");
    JobOptions o = tasks(8);
    const std::string msg = config_error([&] { o.merge_environment(); });
    EXPECT_THAT(msg, HasSubstr("BGL_FIFO_PACKETS='lots'"));
    EXPECT_THAT(msg, HasSubstr("expected an integer"));
    ::unsetenv("BGL_FIFO_PACKETS");
  }
  {
    set("BGL_MODE", "turbo");
    JobOptions o = tasks(8);
    const std::string msg = config_error([&] { o.merge_environment(); });
    EXPECT_THAT(msg, HasSubstr("BGL_MODE='turbo'"));
    EXPECT_THAT(msg, HasSubstr("expected heater, coprocessor or vn"));
    ::unsetenv("BGL_MODE");
  }
  {
    set("BGL_SEED", "-1");
    JobOptions o = tasks(8);
    EXPECT_THAT(config_error([&] { o.merge_environment(); }), HasSubstr("BGL_SEED='-1'"));
    ::unsetenv("BGL_SEED");
  }
  {
    // A malformed variable is not even looked at when its field is already set.
    set("BGL_FIFO_PACKETS", "lots");
    set("BGL_MODE", "turbo");
    JobOptions o = tasks(8);
    o.fifo_packets = 4;
    o.mode = "vn";
    EXPECT_NO_THROW(o.merge_environment());
  }
}

TEST(EnvParseInt, AcceptsDecimalIntegersInRange) {
  EXPECT_EQ(job_runtime::env::parse_int("12", "BGL_X", 0, 100), 12);
  EXPECT_EQ(job_runtime::env::parse_int("0", "BGL_X", 0, 100), 0);
  EXPECT_EQ(job_runtime::env::parse_int("100", "BGL_X", 0, 100), 100);
  EXPECT_EQ(job_runtime::env::parse_int("-5", "BGL_X", -10, 10), -5);
  EXPECT_EQ(job_runtime::env::parse_int("9223372036854775807", "BGL_X", 0, 9223372036854775807LL),
            9223372036854775807LL);
}

TEST(EnvParseInt, RejectsMalformedOrOutOfRangeText) {
  for (const char* bad :
       {"-1", "101", "1x", "", "abc", " 12", "12 ", "+12", "0x10", "1.5", "99999999999999999999"}) {
    const std::string msg =
        config_error([&] { job_runtime::env::parse_int(bad, "BGL_X", 0, 100); });
    EXPECT_THAT(msg, HasSubstr("BGL_X='" + std::string(bad) + "'")) << bad;
    EXPECT_THAT(msg, HasSubstr("expected an integer in [0, 100]")) << bad;
  }
}

TEST(EnvParseSeconds, AcceptsNonNegativeNumbers) {
  EXPECT_DOUBLE_EQ(job_runtime::env::parse_seconds("0.5", "--timeout"), 0.5);
  EXPECT_DOUBLE_EQ(job_runtime::env::parse_seconds("0", "--timeout"), 0.0);
  EXPECT_DOUBLE_EQ(job_runtime::env::parse_seconds("12", "--timeout"), 12.0);
  EXPECT_DOUBLE_EQ(job_runtime::env::parse_seconds("1e3", "--timeout"), 1000.0);
}

TEST(EnvParseSeconds, RejectsNegativeMalformedAndNonFiniteText) {
  for (const char* bad : {"abc", "", "-1", "1s", "nan", "inf", "1e300", " 1"}) {
    const std::string msg =
        config_error([&] { job_runtime::env::parse_seconds(bad, "--timeout"); });
    EXPECT_THAT(msg, HasSubstr("--timeout='" + std::string(bad) + "'")) << bad;
    EXPECT_THAT(msg, HasSubstr("expected a number of seconds")) << bad;
  }
}

TEST_F(JobConfigTest, EnvGetIntReadsAndValidatesAVariable) {
  EXPECT_EQ(job_runtime::env::get_int("BGL_SEED", 0, 10), std::nullopt);
  set("BGL_SEED", "7");
  EXPECT_EQ(job_runtime::env::get_int("BGL_SEED", 0, 10), 7);
  EXPECT_EQ(job_runtime::env::get("BGL_SEED"), "7");
  set("BGL_SEED", "70");
  EXPECT_THAT(config_error([] { job_runtime::env::get_int("BGL_SEED", 0, 10); }),
              HasSubstr("BGL_SEED='70'"));
}

}  // namespace
}  // namespace bgl::job_runtime
