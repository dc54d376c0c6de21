// bglmap: writes, checks and rates rank mappings for an emulated partition.
//   bglmap -np 16 --shape 2x2x2 --mode vn --mapping TXYZ          print the mapping as a file
//   bglmap -np 8 --shape 2x2x2 --mapfile map.txt --check           validate a mapping file
// Always reports the mean and maximum torus distance between consecutive ranks (a rough measure
// of how well nearest-neighbour codes map).
#include <cstdio>
#include <string_view>

#include "bgl/env.hpp"
#include "bgl/log.hpp"
#include "bgl/pkt/job_config.hpp"
#include "bgl/torus/distance.hpp"
#include "bgl/torus/error.hpp"
#include "bgl/torus/user_text.hpp"

namespace {

using namespace bgl;

constexpr const char* kUsage =
    "usage: bglmap -np N [--shape XxYxZ] [--mesh DIMS] [--mode heater|coprocessor|vn]\n"
    "              [--mapping ORDER | --mapfile FILE] [--check]\n";

constexpr const char* kHelp = R"(
Writes, checks and rates rank mappings of an emulated Blue Gene/L partition. Without --check it
prints the mapping as a mapping file (one "x y z t" line per rank) on standard output; always it
reports the mean and largest torus distance between ranks r and r+1.

  -np N, -n N            number of tasks (required)
  --shape XxYxZ          partition shape, each 1..64 (BGL_SHAPE; default: the most cubic shape
                         that holds N tasks)
  --mesh DIMS            dimensions without wrap-around links, e.g. z or xyz (BGL_MESH)
  --mode MODE            heater | coprocessor | vn (BGL_MODE; default heater)
  --mapping ORDER        rank order, fastest-varying first, e.g. XYZT, TXYZ, ZYXT (BGL_MAPPING;
                         default XYZT)
  --mapfile FILE         mapping file to read, one "x y z [t]" line per rank (BGL_MAPFILE)
  --check                validate the mapping and print only the report (on standard output)
  -h, --help             this text
  --version              print the version

Exit status: 0 when the mapping is valid, 2 for a bad option, variable or mapping file (the error
names it, and the file's line). Flags win over their BGL_* variables (docs/CONFIGURATION.md).
)";

int run(int argc, char** argv) {
  pkt::JobOptions o;
  bool check = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    const auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw ConfigError("option " + std::string(a) + " needs a value");
      return argv[++i];
    };
    if (a == "-np" || a == "-n")
      o.ntasks = static_cast<int>(env::parse_int(value(), a, 1, 1 << 20));
    else if (a == "--shape")
      o.shape = value();
    else if (a == "--mesh")
      o.mesh = value();
    else if (a == "--mode")
      o.mode = value();
    else if (a == "--mapping")
      o.mapping = value();
    else if (a == "--mapfile")
      o.mapfile = value();
    else if (a == "--check")
      check = true;
    else if (a == "-h" || a == "--help")
      return std::fputs(kUsage, stdout), std::fputs(kHelp, stdout), 0;
    else if (a == "--version")
      return std::puts("bglmap (bglemu) " BGL_VERSION), 0;
    else
      throw ConfigError("unknown option '" + printable(a) + "'\n" + kUsage);
  }
  o.merge_environment();
  const auto c = pkt::JobConfig::resolve(o);
  long total = 0;
  int worst = 0;
  for (int r = 1; r < c.ntasks(); ++r) {
    const int d = torus::distance(c.shape, c.mapping.coord(static_cast<torus::Rank>(r - 1)),
                                  c.mapping.coord(static_cast<torus::Rank>(r)));
    total += d;
    worst = std::max(worst, d);
  }
  const double mean = c.ntasks() > 1 ? static_cast<double>(total) / (c.ntasks() - 1) : 0.0;
  if (!check) std::fputs(c.mapping.to_text().c_str(), stdout);
  std::fprintf(check ? stdout : stderr, "%s: ok; rank r to r+1: mean %.2f hops, max %d\n",
               c.summary().c_str(), mean, worst);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    bgl::log::init("bglmap");
    return run(argc, argv);
  } catch (const bgl::ConfigError& e) {
    std::fprintf(stderr, "bglmap: %s\n", bgl::printable_message(e.what()).c_str());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bglmap: internal error: %s\n", bgl::printable_message(e.what()).c_str());
    return 70;
  }
}
