// Seed-paper collectives against the alternatives, in one run: modelled on the torus
// (link loads and hop-bytes from the schedules' routes, times from a timed replay with BG/L's
// constants) and on the paper's grid (Min3's transfer model). Deterministic: no wall clock.
//
//   coll_seeds [--json] [--section allgather|reduce|allreduce|grid|all] [--iterations N]
//              [--imbalance SPEC ...]      (default: none, uniform:100us, uniform:1ms, exp:200us,
//                                           last:500us; BGL_COLL_IMBALANCE adds one)
#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bgl/collectives/arrival_aware/arrival.hpp"
#include "bgl/collectives/arrival_aware/timed_replay.hpp"
#include "bgl/collectives/registry.hpp"
#include "bgl/collectives/wide_area/grid_baselines.hpp"
#include "bgl/torus_emu/error.hpp"
#include "bgl/torus_emu/link_counters.hpp"
#include "bgl/torus_emu/mapping.hpp"
#include "bgl/torus_emu/route.hpp"

namespace {

using namespace bgl;
using namespace bgl::collectives;
using nlohmann::json;

struct Partition {
  std::string label;
  torus_emu::Shape shape;
  int tasks_per_node;
  std::string order;
};

struct Links {
  std::uint64_t hop_bytes = 0;
  std::uint64_t max_link_bytes = 0;
};

// Every send of the schedule along its deterministic route.
Links link_loads(const Schedule& s, const Params& x) {
  const auto& m = *x.topology.mapping;
  torus_emu::LinkCounters c(m.shape());
  Links out;
  for (const auto& prog : s.programs) {
    for (const auto& st : prog.steps()) {
      if (st.kind != StepKind::send) continue;
      const auto route = torus_emu::deterministic_route(m.shape(), x.topology.node(prog.rank()),
                                                        x.topology.node(st.peer));
      c.account(route, static_cast<std::uint32_t>(st.src.bytes));
      out.hop_bytes += st.src.bytes * static_cast<std::uint64_t>(route.hops());
    }
  }
  out.max_link_bytes = c.busiest().bytes;
  return out;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

std::string size_text(std::uint64_t b) {
  if (b >= (1u << 20) && b % (1u << 20) == 0) return std::to_string(b >> 20) + "MiB";
  if (b >= 1024 && b % 1024 == 0) return std::to_string(b >> 10) + "KiB";
  return std::to_string(b) + "B";
}

void allgather_section(json& out, bool print) {
  const std::vector<Partition> parts = {
      {"4x4x2 CO XYZ", torus_emu::Shape::parse("4x4x2"), 1, "XYZ"},
      {"4x4x4 CO XYZ", torus_emu::Shape::parse("4x4x4"), 1, "XYZ"},
      {"4x4x2 VN TXYZ (sequential)", torus_emu::Shape::parse("4x4x2"), 2, "TXYZ"},
      {"4x4x2 VN XYZT (cyclic)", torus_emu::Shape::parse("4x4x2"), 2, "XYZT"},
  };
  if (print) {
    std::printf("\n== allgather (seed 001 Sparbit, seed 000 Min3 on the torus) ==\n");
    std::printf("%-28s %7s %-19s %14s %14s %11s %9s\n", "partition", "block", "algorithm",
                "hop-bytes", "max-link-B", "model-us", "hb/bruck");
  }
  for (const auto& part : parts) {
    const int p = part.shape.node_count() * part.tasks_per_node;
    const auto m = torus_emu::Mapping::from_order(part.shape, part.tasks_per_node, part.order, p);
    for (std::uint64_t block :
         {std::uint64_t{8}, std::uint64_t{1024}, std::uint64_t{65536}, std::uint64_t{1} << 20}) {
      Params x = Params::allgather(std::vector<std::uint64_t>(static_cast<std::size_t>(p), block));
      x.topology.mapping = &m;
      std::uint64_t bruck_hb = 0;
      std::vector<std::pair<const Algorithm*, std::pair<Links, double>>> rows;
      for (const Algorithm* a : algorithms_for(Collective::allgather)) {
        if (!a->applicable(x).empty()) continue;
        const auto s = build_schedule(*a, x);
        const Links l = link_loads(s, x);
        const auto t = timed_replay(s, x, std::vector<double>(static_cast<std::size_t>(p), 0.0));
        if (a->name == "bruck") bruck_hb = l.hop_bytes;
        rows.push_back({a, {l, t.span()}});
      }
      for (const auto& [a, r] : rows) {
        const double ratio = bruck_hb ? static_cast<double>(r.first.hop_bytes) / bruck_hb : 0;
        if (print) {
          std::printf("%-28s %7s %-19s %14llu %14llu %11.1f %9.3f\n", part.label.c_str(),
                      size_text(block).c_str(), std::string(a->name).c_str(),
                      static_cast<unsigned long long>(r.first.hop_bytes),
                      static_cast<unsigned long long>(r.first.max_link_bytes), r.second * 1e6,
                      ratio);
        }
        out.push_back({{"section", "allgather"},
                       {"partition", part.label},
                       {"p", p},
                       {"block", block},
                       {"algorithm", a->name},
                       {"hop_bytes", r.first.hop_bytes},
                       {"max_link_bytes", r.first.max_link_bytes},
                       {"model_us", r.second * 1e6},
                       {"hop_bytes_vs_bruck", ratio}});
      }
    }
  }
}

void reduce_section(json& out, bool print, int iterations,
                    const std::vector<arrival::Imbalance>& imbalances) {
  if (print) {
    std::printf("\n== reduce under process-arrival imbalance (seed 003 Clairvoyant) ==\n");
    std::printf("   span = first arrival to last exit (timed replay), %d iterations\n", iterations);
    std::printf("%-6s %-28s %8s %-22s %11s %11s %10s\n", "p", "imbalance", "bytes", "algorithm",
                "min-us", "median-us", "med/binom");
  }
  for (const char* shape : {"4x4x2", "4x4x4"}) {
    const auto sh = torus_emu::Shape::parse(shape);
    const int p = sh.node_count();
    const auto m = torus_emu::Mapping::from_order(sh, 1, "XYZ", p);
    for (const auto& im : imbalances) {
      for (std::uint64_t items : {std::uint64_t{1024}, std::uint64_t{65536}}) {
        struct Row {
          std::string name;
          std::vector<double> spans;
        };
        std::vector<Row> rows = {
            {"binomial", {}}, {"clairvoyant (oracle PAT)", {}}, {"clairvoyant (no PAT)", {}}};
        for (int it = 0; it < iterations; ++it) {
          const auto d = arrival::delays(im, p, static_cast<std::uint64_t>(it));
          for (auto& row : rows) {  // interleaved: every algorithm sees the same pattern
            Params x = Params::reduce(p, 0, items, DataType::f32, ReduceOp::sum);
            x.topology.mapping = &m;
            const bool clv = row.name != "binomial";
            if (row.name == "clairvoyant (oracle PAT)") x.arrival = d;
            const Algorithm* a =
                find_algorithm(Collective::reduce, clv ? "clairvoyant" : "binomial");
            row.spans.push_back(timed_replay(build_schedule(*a, x), x, d).span());
          }
        }
        const double base = median(rows[0].spans);
        for (const auto& row : rows) {
          const double mn = *std::min_element(row.spans.begin(), row.spans.end());
          const double md = median(row.spans);
          if (print) {
            std::printf("%-6d %-28s %8s %-22s %11.1f %11.1f %10.3f\n", p,
                        arrival::to_string(im).c_str(), size_text(items * 4).c_str(),
                        row.name.c_str(), mn * 1e6, md * 1e6, md / base);
          }
          out.push_back({{"section", "reduce"},
                         {"p", p},
                         {"imbalance", arrival::to_string(im)},
                         {"bytes", items * 4},
                         {"algorithm", row.name},
                         {"min_us", mn * 1e6},
                         {"median_us", md * 1e6},
                         {"median_vs_binomial", md / base}});
        }
      }
    }
  }
}

void allreduce_section(json& out, bool print) {
  if (print) {
    std::printf("\n== allreduce (seed 002 Patarasuk-Yuan ring) ==\n");
    std::printf("%-8s %8s %-19s %14s %14s %11s\n", "shape", "bytes", "algorithm", "hop-bytes",
                "max-link-B", "model-us");
  }
  for (const char* shape : {"4x4x2", "4x4x4"}) {
    const auto sh = torus_emu::Shape::parse(shape);
    const int p = sh.node_count();
    const auto m = torus_emu::Mapping::from_order(sh, 1, "XYZ", p);
    for (std::uint64_t bytes :
         {std::uint64_t{8} << 10, std::uint64_t{256} << 10, std::uint64_t{4} << 20}) {
      Params x = Params::allreduce(p, bytes / 4, DataType::f32, ReduceOp::sum);
      x.topology.mapping = &m;
      for (const Algorithm* a : algorithms_for(Collective::allreduce)) {
        if (!a->applicable(x).empty()) continue;
        const auto s = build_schedule(*a, x);
        const Links l = link_loads(s, x);
        const double t =
            timed_replay(s, x, std::vector<double>(static_cast<std::size_t>(p), 0.0)).span();
        if (print) {
          std::printf("%-8s %8s %-19s %14llu %14llu %11.1f\n", shape, size_text(bytes).c_str(),
                      std::string(a->name).c_str(), static_cast<unsigned long long>(l.hop_bytes),
                      static_cast<unsigned long long>(l.max_link_bytes), t * 1e6);
        }
        out.push_back({{"section", "allreduce"},
                       {"shape", shape},
                       {"bytes", bytes},
                       {"algorithm", a->name},
                       {"hop_bytes", l.hop_bytes},
                       {"max_link_bytes", l.max_link_bytes},
                       {"model_us", t * 1e6}});
      }
    }
  }
}

void grid_section(json& out, bool print) {
  if (print) {
    std::printf("\n== grid allgather (seed 000, Tables 1-2 grid, full-duplex model, seconds) ==\n");
  }
  for (const char* setup : {"UT,UK,NL", "UK,NL", "NL"}) {
    const auto net =
        collectives::grid::HostNetwork::parse(collectives::grid::paper_grid_text(setup), setup);
    const auto tree = collectives::grid::PoolTree::build(net);
    if (print) {
      std::printf("setup %-9s pool tree %s\n%8s", setup, tree.to_string().c_str(), "block");
      for (auto a : collectives::grid::all_grid_algorithms()) {
        std::printf(" %9.9s", std::string(collectives::grid::name(a)).c_str());
      }
      std::printf(" %10s\n", "best/min3");
    }
    for (std::size_t kb = 1; kb <= 512; kb *= 2) {
      if (print) std::printf("%7zuK", kb);
      double min3 = 0, best_other = 1e300;
      for (auto a : collectives::grid::all_grid_algorithms()) {
        double t = -1;
        try {
          t = collectives::grid::makespan(
              collectives::grid::grid_allgather(a, net, tree, kb * 1024));
        } catch (const ConfigError&) {  // recursive doubling needs a power of two
        }
        if (a == collectives::grid::GridAlgorithm::min3) {
          min3 = t;
        } else if (t >= 0) {
          best_other = std::min(best_other, t);
        }
        if (print) {
          if (t < 0) {
            std::printf(" %9s", "-");
          } else {
            std::printf(" %9.3f", t);
          }
        }
        out.push_back({{"section", "grid"},
                       {"setup", setup},
                       {"block", kb * 1024},
                       {"algorithm", collectives::grid::name(a)},
                       {"model_s", t}});
      }
      if (print) std::printf(" %10.3f\n", best_other / min3);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  try {
    bool as_json = false;
    std::string section = "all";
    int iterations = 15;
    std::vector<arrival::Imbalance> imbalances;
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      if (a == "--json") {
        as_json = true;
      } else if (a == "--section" && i + 1 < argc) {
        section = argv[++i];
      } else if (a == "--iterations" && i + 1 < argc) {
        iterations = std::max(1, std::atoi(argv[++i]));
      } else if (a == "--imbalance" && i + 1 < argc) {
        imbalances.push_back(arrival::parse_imbalance(argv[++i], "--imbalance"));
      } else {
        std::fprintf(stderr,
                     "usage: coll_seeds [--json] [--section allgather|reduce|allreduce|grid|all] "
                     "[--iterations N] [--imbalance SPEC]...\n");
        return 2;
      }
    }
    if (imbalances.empty()) {
      for (const char* s : {"none", "uniform:100us", "uniform:1ms", "exp:200us", "last:500us"}) {
        imbalances.push_back(arrival::parse_imbalance(s));
      }
      if (arrival::imbalance_from_env().dist != arrival::Distribution::none) {
        imbalances.push_back(arrival::imbalance_from_env());
      }
    }
    json out = json::array();
    const bool print = !as_json;
    if (section == "all" || section == "allgather") allgather_section(out, print);
    if (section == "all" || section == "reduce") reduce_section(out, print, iterations, imbalances);
    if (section == "all" || section == "allreduce") allreduce_section(out, print);
    if (section == "all" || section == "grid") grid_section(out, print);
    if (as_json) std::printf("%s\n", out.dump(1).c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "coll_seeds: %s\n", e.what());
    return 1;
  }
}
