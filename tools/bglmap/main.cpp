// bglmap: writes, checks, rates and optimises rank mappings for an emulated partition.
//   bglmap -np 16 --shape 2x2x2 --mode vn --mapping TXYZ          print the mapping as a file
//   bglmap -np 8 --shape 2x2x2 --mapfile map.txt --check           validate a mapping file
//   bglmap --matrix stats.json --shape 8x8x8 --optimize -o new.map a mapping for a run's traffic
//   bglmap --matrix stats.json --shape 8x8x8 --rate new.map        hop-bytes and busiest link
// Without a matrix it reports the mean and maximum torus distance between consecutive ranks (a
// rough measure of how well nearest-neighbour codes map).
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <optional>
#include <string_view>

#include "bgl/job_runtime/env.hpp"
#include "bgl/job_runtime/job_config.hpp"
#include "bgl/job_runtime/log.hpp"
#include "bgl/torus_emu/distance.hpp"
#include "bgl/torus_emu/error.hpp"
#include "bgl/torus_emu/mapping_optimizer.hpp"
#include "bgl/torus_emu/user_text.hpp"
#include "bgl/virtual_time/matrix_prediction.hpp"
#include "matrix_input.hpp"

namespace {

using namespace bgl;

constexpr const char* kUsage =
    "usage: bglmap -np N [--shape XxYxZ] [--mesh DIMS] [--mode heater|coprocessor|vn]\n"
    "              [--mapping ORDER | --mapfile FILE] [--check] [-o FILE]\n"
    "       bglmap --matrix FILE --optimize [shape, mode and starting mapping as above]\n"
    "              [--search-seed N] [--search-seconds S] [--vt-params FILE] [-o FILE]\n"
    "       bglmap --matrix FILE --rate MAPFILE [-np N] [--shape XxYxZ] [--mesh DIMS] [--mode M]\n"
    "              [--vt-params FILE]\n";

constexpr const char* kHelp = R"(
Writes, checks, rates and optimises rank mappings of an emulated Blue Gene/L partition. Without
--check it prints the mapping as a mapping file (one "x y z t" line per rank) on standard output
(or into -o FILE); without a matrix it reports the mean and largest torus distance between ranks
r and r+1.

  -np N, -n N            number of tasks (required without --matrix; with it, the matrix's)
  --shape XxYxZ          partition shape, each 1..64 (BGL_SHAPE; default: the most cubic shape
                         that holds N tasks)
  --mesh DIMS            dimensions without wrap-around links, e.g. z or xyz (BGL_MESH)
  --mode MODE            heater | coprocessor | vn (BGL_MODE; default heater)
  --mapping ORDER        rank order, fastest-varying first, e.g. XYZT, TXYZ, ZYXT (BGL_MAPPING;
                         default XYZT)
  --mapfile FILE         mapping file to read, one "x y z [t]" line per rank (BGL_MAPFILE)
  --check                validate the mapping and print only the report (on standard output)
  -o FILE, --output FILE write the mapping into FILE instead of standard output

Communication matrices (docs/CONFIGURATION.md, "bglmap --optimize and --rate"):
  --matrix FILE          bytes per rank pair: a bglrun --stats file (its "traffic" member) or a
                         plain matrix file ("tasks N", then "SOURCE DEST BYTES" lines)
  --optimize             write a mapping for --shape and --mode that minimises hop-bytes, then
                         the busiest link's load; --mapping/--mapfile is the starting mapping it
                         is judged against (the result is never worse). Report on standard error
  --rate MAPFILE         rate MAPFILE for the matrix (report on standard output)
  --search-seed N        seed of the search (default 1; the same seed gives the same mapping)
  --search-seconds S     stop the search after S seconds (default 30; more than 0)
  --vt-params FILE       the timing model's parameters for the predicted BG/L time, as bglrun
                         --vt-params reads them (BGL_VT_PARAMS with BGL_VIRTUAL_TIME=1;
                         default the built-in set);
                         BGL_ML_EAGER_LIMIT sets the eager/rendezvous switch as for a run
  -h, --help             this text
  --version              print the version

Exit status: 0 when the mapping is valid, 2 for a bad option, variable, mapping or matrix file
(the error names it, and the file's line). Flags win over their BGL_* variables
(docs/CONFIGURATION.md).
)";

std::string grouped(std::uint64_t v) {
  std::string digits = std::to_string(v), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string link_name(const torus_emu::Shape& shape, const torus_emu::MappingRating& r) {
  if (r.busiest_link_bytes == 0) return "-";
  return torus_emu::to_string(shape.coord(r.busiest_link.node)) +
         std::string(torus_emu::to_string(r.busiest_link.dir));
}

std::string microseconds(double us) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", us);
  return b;
}

std::string percent_over(std::uint64_t v, std::uint64_t bound) {
  if (bound == 0) return v == 0 ? "+0.0%" : "-";
  char b[32];
  std::snprintf(
      b, sizeof b, "%+.1f%%",
      100.0 * (static_cast<double>(v) - static_cast<double>(bound)) / static_cast<double>(bound));
  return b;
}

// One mapping as the report shows it.
struct Rated {
  std::string name;
  torus_emu::MappingRating rating;
  virtual_time::Prediction predicted;
};

// The timing model's parameters (--vt-params or BGL_VT_PARAMS, else the built-in set), their
// name for the report, and the message layer's eager limit (BGL_ML_EAGER_LIMIT) as a run has it.
struct Model {
  virtual_time::Params params;
  std::string source = "built-in parameters";
  virtual_time::PredictOptions options;
  double us(const virtual_time::Prediction& p) const { return p.cycles() / params.cpu_hz * 1e6; }
};

Model model_of(std::optional<std::string> file) {
  Model m;
  if (!file) file = job_runtime::env::get("BGL_VT_PARAMS");
  if (file && !file->empty()) {
    m.params = virtual_time::Params::from_file(*file);
    m.source = "parameters " + printable(*file, 256);
  }
  if (const auto limit = job_runtime::env::get("BGL_ML_EAGER_LIMIT"))
    m.options.eager_limit = static_cast<std::uint64_t>(
        job_runtime::env::parse_int(*limit, "BGL_ML_EAGER_LIMIT", 0, 1ll << 31));
  return m;
}

Rated rated(std::string name, const torus_emu::MappingRating& r, const bglmap::MatrixInput& input,
            const torus_emu::Mapping& mapping, const Model& model) {
  return {std::move(name), r,
          virtual_time::predict_time(input.matrix, mapping, model.params, model.options)};
}

// The rating table: one row per mapping (named last: file names can be long), then the lower
// bounds, then what the predicted time is.
std::string rating_table(const torus_emu::Shape& shape, const std::vector<Rated>& rows,
                         const Model& model) {
  std::string out;
  char line[640];
  std::snprintf(line, sizeof line, "  %18s %9s %9s %18s %-12s %9s %14s  %s\n", "hop-bytes",
                "mean hops", "vs bound", "busiest link (B)", "link", "vs bound", "predicted (us)",
                "mapping");
  out += line;
  const auto& bound = rows.front().rating;
  for (const auto& [name, r, p] : rows) {
    std::snprintf(line, sizeof line, "  %18s %9.3f %9s %18s %-12s %9s %14.1f  %s\n",
                  grouped(r.hop_bytes).c_str(), r.mean_hops(),
                  percent_over(r.hop_bytes, r.hop_bytes_lower_bound).c_str(),
                  grouped(r.busiest_link_bytes).c_str(), link_name(shape, r).c_str(),
                  percent_over(r.busiest_link_bytes, r.busiest_link_lower_bound).c_str(),
                  model.us(p), printable(name, 256).c_str());
    out += line;
  }
  std::snprintf(line, sizeof line, "  %18s %9.3f %9s %18s %-12s %9s %14s  %s\n",
                grouped(bound.hop_bytes_lower_bound).c_str(),
                bound.total_bytes ? static_cast<double>(bound.hop_bytes_lower_bound) /
                                        static_cast<double>(bound.total_bytes)
                                  : 0.0,
                "", grouped(bound.busiest_link_lower_bound).c_str(), "", "", "", "lower bound");
  out += line;
  for (const auto& [name, r, p] : rows) {
    std::snprintf(line, sizeof line,
                  "  predicted %.1f us = max(busiest link %.1f us, busiest task %.1f us: rank "
                  "%u) + latency %.1f us (%llu rounds); limited by the %s: %s\n",
                  model.us(p), p.link_cycles / model.params.cpu_hz * 1e6,
                  p.task_cycles / model.params.cpu_hz * 1e6, p.busiest_task,
                  p.latency_cycles / model.params.cpu_hz * 1e6,
                  static_cast<unsigned long long>(p.rounds), p.limit(),
                  printable(name, 256).c_str());
    out += line;
  }
  out +=
      "  predicted: an estimate of the BG/L time of this traffic alone, all of it overlapping, "
      "from the timing model's " +
      model.source +
      " (docs/VIRTUAL_TIME.md, \"Predicting a mapping's time\"); bglrun --virtual-time measures "
      "it\n";
  return out;
}

void write_output(const std::optional<std::string>& path, const std::string& text) {
  if (!path) {
    std::fputs(text.c_str(), stdout);
    return;
  }
  std::ofstream out(*path, std::ios::binary | std::ios::trunc);
  if (out) out << text;
  out.flush();
  if (!out)
    throw ConfigError("cannot write the mapping to " + printable(*path, 256) + ": " +
                      std::strerror(errno));
}

int run(int argc, char** argv) {
  job_runtime::JobOptions o;
  bool check = false, optimize = false;
  std::optional<std::string> matrix_file, rate_file, output, vt_params;
  torus_emu::OptimizeOptions search;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    const auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw ConfigError("option " + std::string(a) + " needs a value");
      return argv[++i];
    };
    if (a == "-np" || a == "-n")
      o.ntasks = static_cast<int>(job_runtime::env::parse_int(value(), a, 1, 1 << 20));
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
    else if (a == "-o" || a == "--output")
      output = value();
    else if (a == "--matrix")
      matrix_file = value();
    else if (a == "--optimize" || a == "--optimise")
      optimize = true;
    else if (a == "--rate")
      rate_file = value();
    else if (a == "--vt-params")
      vt_params = value();
    else if (a == "--search-seed")
      search.seed = static_cast<std::uint64_t>(
          job_runtime::env::parse_int(value(), a, 0, std::numeric_limits<std::int64_t>::max()));
    else if (a == "--search-seconds") {
      search.max_seconds = job_runtime::env::parse_seconds(value(), a);
      if (search.max_seconds <= 0) throw ConfigError("--search-seconds must be more than 0");
    } else if (a == "-h" || a == "--help")
      return std::fputs(kUsage, stdout), std::fputs(kHelp, stdout), 0;
    else if (a == "--version")
      return std::puts("bglmap (bglemu) " BGL_VERSION), 0;
    else
      throw ConfigError("unknown option '" + printable(a) + "'\n" + kUsage);
  }
  if (optimize && rate_file) throw ConfigError("--optimize and --rate exclude each other");
  if ((optimize || rate_file) && check)
    throw ConfigError("--check validates a mapping; it does not go with --optimize or --rate");
  if ((optimize || rate_file) && !matrix_file)
    throw ConfigError(std::string(optimize ? "--optimize" : "--rate") +
                      " needs a communication matrix: --matrix FILE");
  if (matrix_file && !optimize && !rate_file)
    throw ConfigError("--matrix is read by --optimize or --rate; give one of them");
  if (rate_file && (o.mapping || o.mapfile))
    throw ConfigError(
        "--rate MAPFILE names the mapping; --mapping and --mapfile do not go with it");
  if (rate_file && output) throw ConfigError("--rate writes no mapping; -o does not go with it");
  if (vt_params && !matrix_file)
    throw ConfigError("--vt-params is for the predicted time of --optimize or --rate");
  std::optional<bglmap::MatrixInput> input;
  if (matrix_file) {
    input.emplace(bglmap::read_matrix(*matrix_file));
    const int tasks = input->matrix.tasks();
    if (o.ntasks && *o.ntasks != tasks)
      throw ConfigError("the communication matrix " + printable(*matrix_file, 256) + " has " +
                        std::to_string(tasks) + " tasks, but -np is " + std::to_string(*o.ntasks));
    o.ntasks = tasks;
  }
  if (rate_file) o.mapfile = rate_file;
  o.merge_environment();
  const auto c = job_runtime::JobConfig::resolve(o);
  if (input) {
    const std::string from =
        printable(*matrix_file, 256) + (input->run ? " (run: " + *input->run + ")" : std::string());
    std::string head = "bglmap: " + c.summary() + "; matrix " + from + ": " +
                       std::to_string(input->matrix.flows().size()) + " pairs, " +
                       grouped(input->matrix.total_bytes()) + " bytes\n";
    const Model model = model_of(vt_params);
    if (rate_file) {
      const auto r = torus_emu::rate_mapping(input->matrix, c.mapping);
      std::fputs(
          (head +
           rating_table(c.shape, {rated(c.mapping_source, r, *input, c.mapping, model)}, model))
              .c_str(),
          stdout);
      return 0;
    }
    const auto result = torus_emu::optimize_mapping(input->matrix, c.mapping, search);
    const auto start = rated("start: " + c.mapping_source, result.before, *input, c.mapping, model);
    const auto best = rated("optimised", result.after, *input, result.mapping, model);
    char note[512];
    std::snprintf(note, sizeof note,
                  "  search: greedy placement %s hop-bytes; %llu annealing moves (seed %llu)%s%s\n",
                  grouped(result.greedy_hop_bytes).c_str(),
                  static_cast<unsigned long long>(result.moves),
                  static_cast<unsigned long long>(search.seed),
                  result.time_capped ? ", stopped by --search-seconds" : "",
                  result.after.better_than(result.before)
                      ? ""
                      : "; nothing better than the starting mapping was found: it is kept");
    std::string text = "# bglmap --optimize for " + printable(*matrix_file, 256) + " on " +
                       c.shape.to_string() + " " + std::string(job_runtime::to_string(c.mode)) +
                       ": hop-bytes " + std::to_string(result.after.hop_bytes) + " (start " +
                       std::to_string(result.before.hop_bytes) + "), busiest link " +
                       std::to_string(result.after.busiest_link_bytes) + " bytes (start " +
                       std::to_string(result.before.busiest_link_bytes) + "), predicted " +
                       microseconds(model.us(best.predicted)) + " us (start " +
                       microseconds(model.us(start.predicted)) + ")\n" + result.mapping.to_text();
    write_output(output, text);
    std::fputs((head + rating_table(c.shape, {start, best}, model) + note).c_str(), stderr);
    return 0;
  }
  long total = 0;
  int worst = 0;
  for (int r = 1; r < c.ntasks(); ++r) {
    const int d = torus_emu::distance(c.shape, c.mapping.coord(static_cast<torus_emu::Rank>(r - 1)),
                                      c.mapping.coord(static_cast<torus_emu::Rank>(r)));
    total += d;
    worst = std::max(worst, d);
  }
  const double mean = c.ntasks() > 1 ? static_cast<double>(total) / (c.ntasks() - 1) : 0.0;
  if (!check) write_output(output, c.mapping.to_text());
  std::fprintf(check ? stdout : stderr, "%s: ok; rank r to r+1: mean %.2f hops, max %d\n",
               c.summary().c_str(), mean, worst);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    bgl::job_runtime::log::init("bglmap");
    return run(argc, argv);
  } catch (const bgl::ConfigError& e) {
    std::fprintf(stderr, "bglmap: %s\n", bgl::printable_message(e.what()).c_str());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bglmap: internal error: %s\n", bgl::printable_message(e.what()).c_str());
    return 70;
  }
}
