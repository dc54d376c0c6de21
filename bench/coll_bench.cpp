// Collectives: every algorithm of a collective in one run, interleaved per repetition, with the
// torus cost model's view of each (max link load, hop-bytes, modelled time).
//
//   bglrun -np 32 --shape 4x4x2 coll_bench [--ops bcast,alltoall,...] [--sizes 8,4096,...]
//                                          [--algs name,...] [--segment B]
//                                          [--rounds N] [--json]
// Sizes are bytes per rank (bcast/allreduce/reduce: the vector; allgather: each rank's block;
// alltoall: each rank's whole send buffer, split in p blocks). Wall time is rank 0's, from a
// dissemination barrier before to one after the collective (the same overhead for every
// algorithm); judge by the ratio to the best algorithm of the same row group. An algorithm with
// deposit-bit line steps (torus3) also runs as "<name>/unicast", its lines sent as one message per
// receiver; r0_packets is the packets rank 0 injected per run (a line: one per packet, not one
// per packet and receiver). Column "default" marks the library's choice for the call ("bgl",
// BGL_COLL_<OP> respected) and the algorithm MPICH 4.0.2 itself would choose ("mpich": its
// generic.json rules), run through the same executor: MPICH's default on this device.
// --algs runs only the named algorithms.
#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <sstream>

#include "bench_util.hpp"
#include "bgl/collective_net_emu/collective_network.hpp"
#include "bgl/collectives/cost_model.hpp"
#include "bgl/collectives/executor.hpp"
#include "bgl/collectives/registry.hpp"
#include "bgl/collectives/select.hpp"
#include "bgl/collectives/verifier.hpp"
#include "bgl/message_layer/session.hpp"

using namespace bgl;
using namespace bgl::collectives;

namespace {

Params make(Collective op, int p, std::uint64_t bytes) {
  switch (op) {
    case Collective::bcast:
      return Params::bcast(p, 0, bytes);
    case Collective::reduce:
      return Params::reduce(p, 0, std::max<std::uint64_t>(1, bytes / 8), DataType::i64,
                            ReduceOp::sum);
    case Collective::allreduce:
      return Params::allreduce(p, std::max<std::uint64_t>(1, bytes / 8), DataType::i64,
                               ReduceOp::sum);
    case Collective::allgather:
      return Params::allgather(std::vector<std::uint64_t>(static_cast<std::size_t>(p), bytes));
    case Collective::alltoall:
      return Params::alltoall(p, std::max<std::uint64_t>(1, bytes / static_cast<std::uint64_t>(p)));
    case Collective::reduce_scatter:
      return Params::reduce_scatter(
          std::vector<std::uint64_t>(
              static_cast<std::size_t>(p),
              std::max<std::uint64_t>(8, bytes / static_cast<std::uint64_t>(p) / 8 * 8)),
          DataType::i64, ReduceOp::sum);
    case Collective::barrier:
      return Params::barrier(p);
  }
  return {};
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string t; std::getline(in, t, ',');)
    out.push_back(t);
  return out;
}

// Which defaults chose this row: "bgl" (the library's selection), "mpich" (MPICH 4.0.2's), both.
std::string default_marker(const Algorithm& a, bool unicast, const Selection& ours,
                           const MpichChoice& mpich) {
  if (unicast) return "";
  const bool b = ours.algorithm == &a, m = mpich.algorithm == a.name;
  return b && m ? "bgl,mpich" : b ? "bgl" : m ? "mpich" : "";
}

bool has_line_steps(const Algorithm& a, const Params& x) {
  for (int r = 0; r < x.p; ++r) {
    const Program prog = a.generate(x, r);
    if (std::any_of(prog.steps().begin(), prog.steps().end(),
                    [](const Step& s) { return s.kind == StepKind::line_send; }))
      return true;
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    auto args = bench::Args::parse(argc, argv, 3);
    std::vector<Collective> ops{Collective::bcast, Collective::allreduce, Collective::allgather,
                                Collective::alltoall};
    std::vector<std::uint64_t> sizes{8, 4096, 262144, 4194304};
    std::vector<std::string> only;  // --algs: just these algorithms (by name)
    std::uint64_t segment = 0;      // --segment: pipelined algorithms' segment (0: their default)
    for (std::size_t i = 0; i < args.rest.size(); ++i) {
      if (args.rest[i] == "--ops" && i + 1 < args.rest.size()) {
        ops.clear();
        for (const auto& n : split(args.rest[++i])) {
          const auto c = parse_collective(n);
          if (!c) throw ConfigError("--ops: unknown collective '" + n + "'");
          ops.push_back(*c);
        }
      } else if (args.rest[i] == "--sizes" && i + 1 < args.rest.size()) {
        sizes.clear();
        for (const auto& n : split(args.rest[++i]))
          sizes.push_back(std::stoull(n));
      } else if (args.rest[i] == "--segment" && i + 1 < args.rest.size()) {
        segment = std::stoull(args.rest[++i]);
      } else if (args.rest[i] == "--algs" && i + 1 < args.rest.size()) {
        only = split(args.rest[++i]);
      } else {
        throw ConfigError("coll_bench: unknown argument '" + args.rest[i] + "'");
      }
    }
    auto session = message_layer::Session::from_launcher();
    const int p = session->size();
    const int me = static_cast<int>(session->rank());
    std::unique_ptr<collective_net_emu::CollectiveNetwork> net;
    try {
      net = std::make_unique<collective_net_emu::CollectiveNetwork>(
          session->runtime().machine().job(), session->runtime().rank(),
          session->runtime().wait_policy(), collective_net_emu::RouteClass::combine1);
    } catch (const std::exception&) {
    }
    Executor executor(session->layer(), net.get());
    Topology topo;
    topo.mapping = &session->mapping();
    topo.whole_partition = net != nullptr;
    Communicator comm(executor, topo, p, me, 0);
    const Params bp = Params::barrier(p);
    const Program barrier = find_algorithm(Collective::barrier, "dissemination")->generate(bp, me);

    bench::Table table("collectives on " + session->mapping().shape().to_string() + ", " +
                           std::to_string(p) + " ranks (wall: rank 0, us; model: BG/L constants)",
                       {"op", "bytes", "algorithm", "min_us", "median_us", "vs_best", "model_us",
                        "max_link_B", "hop_B", "r0_packets", "default"});
    const auto& counters = session->layer().endpoint().counters();
    const bench::TimeSource time(&session->layer().endpoint());
    for (Collective op : ops)
      for (std::uint64_t bytes : sizes) {
        if (op == Collective::barrier && bytes != sizes.front()) continue;  // no data: once
        if (op == Collective::barrier) bytes = 0;
        Params x = make(op, p, bytes);
        x.topology = topo;
        x.segment = segment;
        std::vector<const Algorithm*> algs;
        std::vector<Program> progs;
        std::vector<bool> unicast;  // line steps as one message per receiver
        for (const Algorithm* a : algorithms_for(op))
          if (a->applicable(x).empty() &&
              (only.empty() || std::find(only.begin(), only.end(), a->name) != only.end())) {
            Program prog = a->generate(x, me);
            // An algorithm with line steps runs twice: deposit-bit multicasts, and the same
            // schedule with the lines as messages (what the executor did before). Every rank
            // must agree, also those whose own program has no line step (a leaf of every route).
            const bool lines = has_line_steps(*a, x);
            for (bool u : {false, true}) {
              if (u && !lines) break;
              algs.push_back(a);
              progs.push_back(prog);
              unicast.push_back(u);
            }
          }
        std::vector<std::byte> in(x.send_bytes(me), std::byte{1});
        std::vector<std::byte> out(x.recv_bytes(me));
        std::vector<bench::Samples> t(algs.size());
        std::vector<std::uint64_t> packets(algs.size(), 0);
        for (int round = 0; round < args.rounds; ++round)
          for (std::size_t k = 0; k < algs.size(); ++k) {  // interleaved
            executor.set_line_multicast(!unicast[k]);
            comm.run(barrier, bp, {});
            const std::uint64_t before = counters.packets_injected;
            const double t0 = time.seconds();
            comm.run(progs[k], x, {in, out});
            comm.run(barrier, bp, {});
            t[k].add((time.seconds() - t0) * 1e6);
            packets[k] += counters.packets_injected - before;
          }
        executor.set_line_multicast(true);
        if (me != 0) continue;
        const MpichChoice mpich = mpich_default(x);
        const Selection ours = select_algorithm(x);
        double best = 1e300;
        for (const auto& s : t)
          best = std::min(best, s.median());
        for (std::size_t k = 0; k < algs.size(); ++k) {
          VerifyOptions o;
          o.track_data = false;
          const Schedule s = build_schedule(*algs[k], x);
          const VerifyResult v = verify(s, x, o);
          const CostReport c = estimate_cost(s, x, v);
          table.row({std::string(to_string(op)), bytes,
                     std::string(algs[k]->name) + (unicast[k] ? "/unicast" : ""), t[k].min(),
                     t[k].median(), t[k].median() / best, c.time_us, c.max_link_bytes, c.hop_bytes,
                     packets[k] / static_cast<std::uint64_t>(args.rounds),
                     default_marker(*algs[k], unicast[k], ours, mpich)});
        }
        if (mpich.algorithm.empty())
          std::printf("# %s %llu B: MPICH's default (%.*s) is not in the library\n",
                      std::string(to_string(op)).c_str(), static_cast<unsigned long long>(bytes),
                      static_cast<int>(mpich.mpich_name.size()), mpich.mpich_name.data());
        if (op == Collective::alltoall)
          std::printf(
              "# alltoall %llu B/rank: bisection bound %.1f us (model)\n",
              static_cast<unsigned long long>(bytes),
              alltoall_bisection_bound_us(session->mapping().shape(), p, x.a2a_count(0, 1)));
      }
    if (me == 0) {
      if (args.json)
        std::printf("%s\n", table.to_json().dump().c_str());
      else
        table.print();
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "coll_bench: %s\n", e.what());
    return 2;
  }
}
