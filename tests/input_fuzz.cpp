// A bounded, deterministic fuzz driver for the parsers of what users and peers hand bglemu: mapping
// files, host files, host network files (BGL_COLL_GRID_NETWORK), communication matrices (plain
// files and bglrun statistics files, as bglmap --matrix reads them), timing-model parameter files
// (--vt-params) and packet headers.
//
//   input_fuzz [--seconds S] [--seed N]
//
// Runs for S seconds (default 5) from seed N (default fixed, so that CI runs are reproducible),
// mutating valid inputs and generating random ones. Each parser must either accept an input (and
// then produce something consistent) or throw ConfigError with a bounded, printable message; any
// other exception, a crash (caught by AddressSanitizer/UBSan in CI) or memory growth beyond a
// bound fails the run. A failing input is written to input_fuzz.failure for replay.
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "bgl/collectives/wide_area/host_network.hpp"
#include "bgl/job_runtime/placement.hpp"
#include "bgl/packet_layer/header.hpp"
#include "bgl/torus_emu/comm_matrix.hpp"
#include "bgl/torus_emu/error.hpp"
#include "bgl/torus_emu/mapping.hpp"
#include "bgl/virtual_time/params.hpp"
#include "matrix_input.hpp"

namespace {

using namespace bgl;
using Clock = std::chrono::steady_clock;

// Error messages name the source and line and echo at most a few cut tokens.
constexpr std::size_t kMaxMessageBytes = 1024;
// Peak resident memory the run may reach (AddressSanitizer's shadow memory included).
constexpr long kMaxRssKiB = 768 * 1024;
// The largest input tried: big enough for many lines, small enough for many runs per second.
constexpr std::size_t kMaxInput = 64 * 1024;

struct Failure {
  std::string what;
};

long peak_rss_kib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

class Fuzzer {
 public:
  explicit Fuzzer(std::uint64_t seed) : rng_(seed) {}

  std::size_t below(std::size_t n) { return n == 0 ? 0 : rng_() % n; }
  bool chance(int percent) { return below(100) < static_cast<std::size_t>(percent); }

  // Tokens that parsers find hard: numbers at and past every limit, separators, control bytes.
  std::string token() {
    static const std::vector<std::string> kTokens = {"0",
                                                     "1",
                                                     "-1",
                                                     "63",
                                                     "64",
                                                     "65",
                                                     "2147483647",
                                                     "2147483648",
                                                     "-2147483649",
                                                     "99999999999999999999999",
                                                     "+1",
                                                     "0x10",
                                                     "1e3",
                                                     "1.5",
                                                     "nan",
                                                     "inf",
                                                     "-0",
                                                     "",
                                                     " ",
                                                     "\t",
                                                     "\n",
                                                     "\r\n",
                                                     "#",
                                                     "x",
                                                     "X",
                                                     "T",
                                                     "XYZT",
                                                     "nodes=",
                                                     "nodes=0",
                                                     "nodes=4096",
                                                     "nodes=99999999999",
                                                     "netns=",
                                                     "netns=a",
                                                     "=",
                                                     "hosts",
                                                     "hosts 1024",
                                                     "hosts 1025",
                                                     "hosts 65536",
                                                     "site",
                                                     "link",
                                                     "0-1023",
                                                     "0-3,8",
                                                     "bandwidth-unit",
                                                     "latency-unit",
                                                     "MB/s",
                                                     "ms",
                                                     std::string("\0", 1),
                                                     "\x1b[31m",
                                                     "\xff\xfe",
                                                     std::string(300, 'a'),
                                                     "tasks",
                                                     "tasks 1048576",
                                                     "tasks 1048577",
                                                     "18446744073709551615",
                                                     "18446744073709551616",
                                                     "{",
                                                     "}",
                                                     "[",
                                                     "]",
                                                     "\"",
                                                     ":",
                                                     ",",
                                                     "null",
                                                     "true",
                                                     "-5",
                                                     "1e308",
                                                     "\"traffic\"",
                                                     "\"recorded\"",
                                                     "\"rows\"",
                                                     "\"to\"",
                                                     "\"source\"",
                                                     "\"tasks\"",
                                                     std::string(200, '['),
                                                     "\\u0000",
                                                     "link_bytes_per_cycle",
                                                     "cpu_hz",
                                                     "= 0",
                                                     "= -1"};
    return kTokens[below(kTokens.size())];
  }

  std::string random_bytes(std::size_t n) {
    std::string s(n, '\0');
    for (auto& c : s)
      c = static_cast<char>(chance(70) ? " 0123456789xXyzT#\n-"[below(19)] : rng_());
    return s;
  }

  std::string mutate(std::string s) {
    const std::size_t edits = 1 + below(8);
    for (std::size_t e = 0; e < edits && s.size() < kMaxInput; ++e) {
      const std::size_t at = below(s.size() + 1);
      switch (below(6)) {
        case 0:  // flip a byte
          if (!s.empty()) s[below(s.size())] = static_cast<char>(rng_());
          break;
        case 1:  // insert a hard token
          s.insert(at, token());
          break;
        case 2:  // delete a range
          s.erase(at, below(16));
          break;
        case 3:  // duplicate a range
          s.insert(at, s.substr(below(s.size() + 1), below(256)));
          break;
        case 4:  // insert random bytes
          s.insert(at, random_bytes(below(32)));
          break;
        default:  // repeat a line many times
          if (const auto eol = s.find('\n', at); eol != std::string::npos) {
            const auto line = s.substr(at, eol + 1 - at);
            for (std::size_t i = below(1000); i > 0 && s.size() + line.size() < kMaxInput; --i)
              s.insert(at, line);
          }
      }
    }
    if (s.size() > kMaxInput) s.resize(kMaxInput);
    return s;
  }

  std::string input(const std::vector<std::string>& seeds) {
    if (chance(10)) return random_bytes(below(4096));
    return mutate(seeds[below(seeds.size())]);
  }

  std::mt19937_64& rng() { return rng_; }

 private:
  std::mt19937_64 rng_;
};

void check_message(const ConfigError& e, std::string_view source) {
  const std::string_view m = e.what();
  if (m.size() > kMaxMessageBytes)
    throw Failure{"error message of " + std::to_string(m.size()) + " bytes"};
  for (const char c : m)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f)
      throw Failure{"error message with an unescaped byte " +
                    std::to_string(static_cast<unsigned char>(c)) + ": " + std::string(m)};
  if (m.find(source) == std::string_view::npos)
    throw Failure{"error message does not name the source: " + std::string(m)};
}

// Runs `parse`: it may only succeed (true) or throw ConfigError (false).
bool parsed_or_config_error(std::string_view source, const std::function<void()>& parse) {
  try {
    parse();
    return true;
  } catch (const ConfigError& e) {
    check_message(e, source);
  } catch (const Failure&) {
    throw;
  } catch (const std::exception& e) {
    throw Failure{std::string("exception other than ConfigError: ") + e.what()};
  }
  return false;
}

// An accepted matrix must be consistent: pairs sorted and distinct, ranks in range, bytes adding
// up to the total, and the text form reading back the same.
void check_matrix(const bglmap::MatrixInput& in) {
  const auto& m = in.matrix;
  std::uint64_t total = 0;
  const torus_emu::Flow* previous = nullptr;
  for (const auto& f : m.flows()) {
    if (f.source >= static_cast<torus_emu::Rank>(m.tasks()) ||
        f.dest >= static_cast<torus_emu::Rank>(m.tasks()))
      throw Failure{"accepted a pair with a rank out of range"};
    if (previous && std::pair(previous->source, previous->dest) >= std::pair(f.source, f.dest))
      throw Failure{"accepted matrix's pairs are not sorted and distinct"};
    if (f.bytes == 0) throw Failure{"accepted matrix keeps a pair without bytes"};
    total += f.bytes;
    previous = &f;
  }
  if (total != m.total_bytes()) throw Failure{"accepted matrix's bytes do not add up"};
  if (torus_emu::CommMatrix::from_text(m.to_text(), "again").flows() != m.flows())
    throw Failure{"accepted matrix does not survive to_text()"};
}

// A statistics file as bglrun writes it, with a traffic object.
std::string statistics_seed() {
  return R"({"job": {"shape": "2x2x1", "mode": "heater", "mapping": "order XYZT"}, "tasks": [],
 "traffic": {"recorded": true, "tasks": 4, "rows": [
  {"source": 0, "to": [[1, 1000, 2], [3, 24, 1]]},
  {"source": 1, "to": [[2, 1000, 2]]},
  {"source": 3, "to": []}]}})";
}

// A statistics file whose every field may have the wrong type or a hostile value.
std::string random_statistics(Fuzzer& f) {
  static const std::vector<std::string> kValues = {"0",
                                                   "1",
                                                   "4",
                                                   "-1",
                                                   "2.5",
                                                   "1e30",
                                                   "18446744073709551615",
                                                   "18446744073709551616",
                                                   "1048577",
                                                   "true",
                                                   "false",
                                                   "null",
                                                   "\"x\"",
                                                   "\"\"",
                                                   "[]",
                                                   "{}",
                                                   "[1]",
                                                   "[[1, 2, 3]]",
                                                   "[[0, 1]]",
                                                   "[[9, 1, 1]]",
                                                   "[[1, -1, 1]]",
                                                   "{\"source\": 0}"};
  const auto value = [&](const std::string& good) {
    return f.chance(70) ? good : kValues[f.below(kValues.size())];
  };
  std::string rows;
  const std::size_t n = f.below(6);
  for (std::size_t i = 0; i < n; ++i) {
    std::string to;
    const std::size_t k = f.below(4);
    for (std::size_t j = 0; j < k; ++j)
      to += (j ? ", " : "") + value("[" + value(std::to_string(f.below(5))) + ", " +
                                    value(std::to_string(f.below(100000))) + ", " +
                                    value(std::to_string(f.below(10))) + "]");
    rows += (i ? ", " : "") + value("{\"source\": " + value(std::to_string(f.below(5))) +
                                    ", \"to\": " + value("[" + to + "]") + "}");
  }
  return "{\"job\": " +
         value("{\"shape\": " + value("\"2x2x1\"") + ", \"mode\": " + value("\"vn\"") + "}") +
         ", \"tasks\": " + value("[]") + ", \"traffic\": " +
         value("{\"recorded\": " + value("true") + ", \"reason\": " + value("\"r\"") +
               ", \"tasks\": " + value("4") + ", \"rows\": " + value("[" + rows + "]") + "}") +
         "}";
}

struct Target {
  std::string name;
  std::vector<std::string> seeds;
  std::function<bool(Fuzzer&, const std::string&)> run;  // true: the input was accepted
  std::uint64_t runs = 0;
  std::uint64_t accepted = 0;
};

std::vector<Target> targets() {
  std::vector<Target> out;

  const std::vector<torus_emu::Shape> shapes = {
      torus_emu::Shape::parse("1x1x1"), torus_emu::Shape::parse("2x2x2"),
      torus_emu::Shape::parse("4x4x2", "z"), torus_emu::Shape::parse("8x8x8")};
  std::vector<std::string> map_seeds;
  for (const auto& s : shapes)
    for (int tpn : {1, 2})
      map_seeds.push_back(
          torus_emu::Mapping::from_order(s, tpn, "TXYZ", s.node_count() * tpn).to_text());
  Target mapping{"mapping file", map_seeds, {}};
  mapping.run = [shapes](Fuzzer& f, const std::string& text) {
    const auto& shape = shapes[f.below(shapes.size())];
    const int tpn = 1 + static_cast<int>(f.below(2));
    const int ntasks =
        1 + static_cast<int>(f.below(static_cast<std::size_t>(shape.node_count() * tpn)));
    return parsed_or_config_error("fuzz.map", [&] {
      const auto m = torus_emu::Mapping::from_text(shape, tpn, text, "fuzz.map", ntasks);
      if (m.size() != ntasks) throw Failure{"accepted mapping has the wrong size"};
      const auto again = torus_emu::Mapping::from_text(shape, tpn, m.to_text(), "again", ntasks);
      for (int r = 0; r < ntasks; ++r) {
        const auto rank = static_cast<torus_emu::Rank>(r);
        if (!(again.location(rank) == m.location(rank)))
          throw Failure{"accepted mapping does not survive to_text()"};
        if (m.rank_at(m.location(rank).node, m.location(rank).t) != rank)
          throw Failure{"accepted mapping's inverse is wrong"};
      }
    });
  };
  out.push_back(std::move(mapping));

  Target hosts{"host file",
               {"a\nb\n", "host0 127.0.0.1 nodes=4\nhost1 127.0.0.2 nodes=4 netns=ns1\n",
                "# hosts\nx 10.0.0.1\ny\nz 10.0.0.3 # comment\n"},
               {}};
  hosts.run = [](Fuzzer&, const std::string& text) {
    return parsed_or_config_error("fuzz.hosts", [&] {
      const auto list = job_runtime::Placement::parse_hostfile(text, "fuzz.hosts");
      if (list.empty() || list.size() > static_cast<std::size_t>(job_runtime::Placement::kMaxHosts))
        throw Failure{"accepted host list of " + std::to_string(list.size()) + " hosts"};
      for (const auto& h : list)
        for (const std::string* w : {&h.name, &h.address, &h.netns})
          for (const char c : *w)
            if (c <= ' ' || c >= 0x7f) throw Failure{"accepted a host word with a control byte"};
    });
  };
  out.push_back(std::move(hosts));

  Target network{"host network file",
                 {"hosts 2\nlatency-unit ms\nlink 0 1 10 2\nlink 1 0 20 3\n",
                  "hosts 4\nbandwidth-unit MB/s\nsite A 0-1\nsite B 2-3\nlink A A 100 0.1\n"
                  "link A B 10 5\nlink B A 10 5\nlink B B 100 0.1\n"},
                 {}};
  network.run = [](Fuzzer&, const std::string& text) {
    return parsed_or_config_error("fuzz.net", [&] {
      const auto net = collectives::wide_area::HostNetwork::parse(text, "fuzz.net");
      for (int s = 0; s < net.hosts(); ++s)
        for (int r = 0; r < net.hosts(); ++r)
          if (s != r && !(net.bandwidth(s, r) > 0)) throw Failure{"accepted a bandwidth <= 0"};
    });
  };
  out.push_back(std::move(network));

  // Communication matrices: a plain file, or a statistics file's "traffic" object.
  Target plain{"communication matrix file",
               {"# ring\ntasks 4\n0 1 1000000\n1 2 1000000 4\n2 3 5\n3 0 7 1\n0 1 3\n",
                torus_emu::CommMatrix(1).to_text()},
               {}};
  plain.run = [](Fuzzer&, const std::string& text) {
    return parsed_or_config_error("fuzz.matrix",
                                  [&] { check_matrix(bglmap::parse_matrix(text, "fuzz.matrix")); });
  };
  out.push_back(std::move(plain));

  Target stats{"statistics matrix",
               {statistics_seed(),
                "{\"job\": {}, \"tasks\": [], \"traffic\": {\"recorded\": false, "
                "\"reason\": \"more than 2048 tasks\"}}"},
               {}};
  stats.run = [](Fuzzer& f, const std::string& text) {
    const std::string input = f.chance(30) ? random_statistics(f) : text;
    return parsed_or_config_error("fuzz.json",
                                  [&] { check_matrix(bglmap::parse_matrix(input, "fuzz.json")); });
  };
  out.push_back(std::move(stats));

  Target params{
      "timing model parameters",
      {"# BG/L\ncpu_hz = 700e6\nlink_bytes_per_cycle = 0.25\nhop_cycles = 63 # cut-through\n",
       "eager_send_cycles = 1000\n\nrzv_data_cycles=60\n"},
      {}};
  params.run = [](Fuzzer&, const std::string& text) {
    return parsed_or_config_error("fuzz.params", [&] {
      const auto p = virtual_time::Params::from_text(text, "fuzz.params");
      if (!(p.cpu_hz > 0) || !(p.link_bytes_per_cycle > 0))
        throw Failure{"accepted parameters with a rate that is not positive"};
    });
  };
  out.push_back(std::move(params));
  return out;
}

// Random and mutated headers: validate() must not crash, and a header it accepts must describe a
// packet that fits the shape.
void fuzz_header(Fuzzer& f, std::uint64_t& accepted) {
  static const std::vector<torus_emu::Shape> shapes = {torus_emu::Shape::parse("1x1x1"),
                                                       torus_emu::Shape::parse("2x2x2"),
                                                       torus_emu::Shape::parse("8x4x2", "y")};
  const auto& shape = shapes[f.below(shapes.size())];
  packet_layer::PacketHeader h;
  if (f.chance(50)) {
    std::array<unsigned char, sizeof h> raw{};
    for (auto& b : raw)
      b = static_cast<unsigned char>(f.rng()());
    std::memcpy(&h, raw.data(), sizeof h);
  } else {
    h.dest = {static_cast<std::uint8_t>(f.below(10)), static_cast<std::uint8_t>(f.below(10)),
              static_cast<std::uint8_t>(f.below(10))};
    h.dest_group = static_cast<std::uint8_t>(f.below(4));
    h.flags = static_cast<std::uint8_t>(f.rng()());
    h.chunks = static_cast<std::uint8_t>(f.below(10));
    h.payload_bytes = static_cast<std::uint8_t>(f.below(256));
  }
  if (f.chance(80)) h.seal();
  const auto problem = h.validate(shape, 2);
  (void)h.describe();
  (void)packet_layer::to_string(problem);
  if (problem != packet_layer::PacketHeader::Problem::none) return;
  ++accepted;
  const auto d = h.destination();
  if (d.x >= shape.extent(torus_emu::Dim::x) || d.y >= shape.extent(torus_emu::Dim::y) ||
      d.z >= shape.extent(torus_emu::Dim::z))
    throw Failure{"accepted a header for a node outside the shape: " + h.describe()};
  if (h.chunks < 1 || h.chunks > 8 || h.payload_bytes > packet_layer::kMaxPayloadBytes ||
      packet_layer::kHeaderBytes + h.payload_bytes > h.packet_bytes())
    throw Failure{"accepted a header whose sizes do not fit: " + h.describe()};
  if (h.dest_group >= 2) throw Failure{"accepted a header for a missing FIFO group"};
  if (h.deposit() && (h.adaptive() || ((h.flags >> packet_layer::PacketHeader::kLineDirShift) &
                                       7u) >= torus_emu::kDirections))
    throw Failure{"accepted an impossible deposit-bit line: " + h.describe()};
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 5;
  std::uint64_t seed = 0x6267'6c65'6d75;  // fixed: CI runs are reproducible
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view a = argv[i];
    if (a == "--seconds")
      seconds = std::strtod(argv[i + 1], nullptr);
    else if (a == "--seed")
      seed = std::strtoull(argv[i + 1], nullptr, 0);
  }
  Fuzzer fuzzer(seed);
  auto list = targets();
  std::uint64_t headers = 0, headers_accepted = 0;
  const long rss_at_start = peak_rss_kib();
  const auto end = Clock::now() + std::chrono::duration<double>(seconds);
  std::string current;
  std::string current_target;
  try {
    for (std::uint64_t round = 0; Clock::now() < end; ++round) {
      for (auto& t : list) {
        current_target = t.name;
        current = fuzzer.input(t.seeds);
        t.accepted += t.run(fuzzer, current) ? 1 : 0;
        ++t.runs;
      }
      current_target = "packet header";
      current.clear();
      for (int i = 0; i < 64; ++i, ++headers)
        fuzz_header(fuzzer, headers_accepted);
      if (round % 256 == 0 && peak_rss_kib() > kMaxRssKiB)
        throw Failure{"peak memory " + std::to_string(peak_rss_kib() / 1024) + " MiB, over " +
                      std::to_string(kMaxRssKiB / 1024) + " MiB"};
    }
  } catch (const Failure& f) {
    std::ofstream("input_fuzz.failure", std::ios::binary) << current;
    std::fprintf(stderr,
                 "input_fuzz: %s: %s\n(seed %llu; the input is in input_fuzz.failure, %zu "
                 "bytes)\n",
                 current_target.c_str(), f.what.c_str(), static_cast<unsigned long long>(seed),
                 current.size());
    return 1;
  }
  for (const auto& t : list)
    std::printf("input_fuzz: %s: %llu inputs, %llu accepted\n", t.name.c_str(),
                static_cast<unsigned long long>(t.runs),
                static_cast<unsigned long long>(t.accepted));
  std::printf("input_fuzz: packet header: %llu headers, %llu accepted\n",
              static_cast<unsigned long long>(headers),
              static_cast<unsigned long long>(headers_accepted));
  std::printf("input_fuzz: peak memory %ld MiB (%ld MiB at start)\n", peak_rss_kib() / 1024,
              rss_at_start / 1024);
  return 0;
}
