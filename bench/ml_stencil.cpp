// A compute-plus-halo-exchange kernel in heater vs virtual-node mode (BG/L's virtual-node mode
// doubles the tasks of a fixed problem to use the node's second processor): Jacobi iterations of a
// 3D 7-point stencil on a fixed global grid, block-decomposed over the tasks, exchanging the six
// faces with the message layer every iteration (non-periodic; the global x = 0 face is held at 1).
//
// Task grid: heater/coprocessor mode (X, Y, Z) = the partition's shape; virtual-node mode
// (2X, Y, Z), task (x, y, z, t) owning block (2x + t, y, z), so the two tasks of a node split the
// node's block along x and exchange that face through the node's virtual FIFO / the virtual-node
// protocol. The result does not depend on the decomposition: the checksum (sum of the bit patterns
// of every value, order-independent) must agree between modes.
//
// Reports seconds per iteration (the slowest task's), and per task the share spent computing and
// exchanging halos.
//   bglrun -np 8 --shape 2x2x2 build/bin/ml_stencil [--n N] [--iterations I] [--json]
//   bglrun -np 16 --shape 2x2x2 --mode vn build/bin/ml_stencil [...]
#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

#include "bench_util.hpp"
#include "bgl/message_layer/session.hpp"

namespace {

using namespace bgl;
using message_layer::Rank;

constexpr message_layer::HandlerId kHalo = 1;

// Block [lo, hi) of n points split over p parts, part i.
std::pair<int, int> block(int n, int p, int i) {
  const int base = n / p, extra = n % p;
  const int lo = i * base + std::min(i, extra);
  return {lo, lo + base + (i < extra ? 1 : 0)};
}

struct Face {
  int dim;   // 0 x, 1 y, 2 z
  int side;  // -1 low, +1 high
};
constexpr Face kFaces[6] = {{0, -1}, {0, 1}, {1, -1}, {1, 1}, {2, -1}, {2, 1}};

struct HaloHeader {
  std::uint32_t face;  // the receiver's face index the data belong to
  std::uint32_t iteration;
};

class Stencil {
 public:
  Stencil(message_layer::Session& s, int n) : s_(s), ml_(s.layer()), n_(n) {
    const auto& map = s.mapping();
    const auto& shape = map.shape();
    const bool vn = s.mode() == job_runtime::NodeMode::virtual_node;
    grid_ = {shape.extent(torus_emu::Dim::x) * (vn ? 2 : 1), shape.extent(torus_emu::Dim::y),
             shape.extent(torus_emu::Dim::z)};
    const auto pos = [&](Rank r) {
      const auto c = map.coord(r);
      const int t = map.location(r).t;
      return std::array<int, 3>{vn ? 2 * c.x + t : c.x, c.y, c.z};
    };
    me_ = pos(s.rank());
    if (map.size() != grid_[0] * grid_[1] * grid_[2])
      throw ConfigError("ml_stencil needs every node of the partition used (" +
                        std::to_string(grid_[0] * grid_[1] * grid_[2]) + " tasks)");
    // Who owns each neighbouring block.
    for (int f = 0; f < 6; ++f) {
      auto p = me_;
      p[static_cast<std::size_t>(kFaces[f].dim)] += kFaces[f].side;
      neighbour_[f] = -1;
      for (Rank r = 0; r < static_cast<Rank>(map.size()); ++r)
        if (pos(r) == p) neighbour_[f] = static_cast<int>(r);
    }
    for (int d = 0; d < 3; ++d) {
      const auto [lo, hi] =
          block(n, grid_[static_cast<std::size_t>(d)], me_[static_cast<std::size_t>(d)]);
      lo_[d] = lo;
      len_[d] = hi - lo;
    }
    // Local array with one ghost layer on every side.
    sx_ = 1;
    sy_ = len_[0] + 2;
    sz_ = sy_ * (len_[1] + 2);
    const std::size_t cells = static_cast<std::size_t>(sz_) * static_cast<std::size_t>(len_[2] + 2);
    a_.assign(cells, 0.0);
    b_.assign(cells, 0.0);
    if (lo_[0] == 0 && neighbour_[0] < 0) fixed_low_x_ = true;
    apply_boundary(a_);
    apply_boundary(b_);
    for (int f = 0; f < 6; ++f) {
      const std::size_t face = face_points(f);
      out_[f].assign(face, 0.0);
      for (auto& in : in_[f])
        in.assign(face, 0.0);
    }
    ml_.register_handler(kHalo, &Stencil::on_halo, this);
  }

  // One iteration; returns the seconds spent in the halo exchange.
  double iterate(std::uint32_t it) {
    const auto t0 = bench::Clock::now();
    // Send the six faces of the current values, take the neighbours' into the ghost layers.
    int expected = 0;
    for (int f = 0; f < 6; ++f) {
      if (neighbour_[f] < 0) continue;
      ++expected;
      pack(f, a_, out_[f]);
      Out& o = outs_[f];
      o.h = {static_cast<std::uint32_t>(f ^ 1), it};  // the neighbour's opposite face
      o.done = false;
      o.m = message_layer::SendMessage{};
      o.m.dest = static_cast<Rank>(neighbour_[f]);
      o.m.handler = kHalo;
      o.m.header = std::as_bytes(std::span(&o.h, 1));
      o.m.data.buffer = std::as_bytes(std::span(out_[f]));
      o.m.context = &o.done;
      o.m.done = [](message_layer::SendMessage& m) { *static_cast<bool*>(m.context) = true; };
      ml_.post(o.m);
    }
    const auto all_in = [&] {
      if (arrived_[it % 2] < expected) return false;
      for (int f = 0; f < 6; ++f)
        if (neighbour_[f] >= 0 && !outs_[f].done) return false;
      return true;
    };
    while (!all_in())
      if (!ml_.advance()) ml_.wait();
    arrived_[it % 2] = 0;
    for (int f = 0; f < 6; ++f)
      if (neighbour_[f] >= 0) unpack(f, in_[f][it % 2], a_);
    const double halo = bench::seconds_since(t0);
    compute();
    std::swap(a_, b_);
    return halo;
  }

  void drain() {
    while (!ml_.idle())
      if (!ml_.advance()) ml_.wait();
  }

  // Sum of the bit patterns of the owned values (independent of the order and decomposition).
  std::uint64_t checksum() const {
    std::uint64_t sum = 0;
    for (int z = 1; z <= len_[2]; ++z)
      for (int y = 1; y <= len_[1]; ++y)
        for (int x = 1; x <= len_[0]; ++x) {
          std::uint64_t bits;
          std::memcpy(&bits, &a_[idx(x, y, z)], sizeof bits);
          sum += bits;
        }
    return sum;
  }
  std::array<int, 3> grid() const { return grid_; }

 private:
  struct Out {
    message_layer::SendMessage m;
    HaloHeader h;
    bool done = true;
  };

  std::size_t idx(int x, int y, int z) const {
    return static_cast<std::size_t>(x * sx_ + y * sy_ + z * sz_);
  }
  std::size_t face_points(int f) const {
    const int d = kFaces[f].dim;
    return static_cast<std::size_t>(len_[(d + 1) % 3]) *
           static_cast<std::size_t>(len_[(d + 2) % 3]);
  }
  // Visits the owned layer next to face f (inner = true) or its ghost layer (inner = false).
  template <class F>
  void for_face(int f, bool inner, F&& fn) const {
    const int d = kFaces[f].dim;
    const int layer = kFaces[f].side < 0 ? (inner ? 1 : 0) : (inner ? len_[d] : len_[d] + 1);
    std::size_t i = 0;
    const int a = (d + 1) % 3, b = (d + 2) % 3;
    for (int v = 1; v <= len_[b]; ++v)
      for (int u = 1; u <= len_[a]; ++u) {
        std::array<int, 3> c{};
        c[static_cast<std::size_t>(d)] = layer;
        c[static_cast<std::size_t>(a)] = u;
        c[static_cast<std::size_t>(b)] = v;
        fn(i++, idx(c[0], c[1], c[2]));
      }
  }
  void pack(int f, const std::vector<double>& src, std::vector<double>& out) const {
    for_face(f, true, [&](std::size_t i, std::size_t at) { out[i] = src[at]; });
  }
  void unpack(int f, const std::vector<double>& in, std::vector<double>& dst) const {
    for_face(f, false, [&](std::size_t i, std::size_t at) { dst[at] = in[i]; });
  }
  void apply_boundary(std::vector<double>& v) const {
    if (!fixed_low_x_) return;
    for (int z = 0; z < len_[2] + 2; ++z)
      for (int y = 0; y < len_[1] + 2; ++y)
        v[idx(0, y, z)] = 1.0;
  }
  void compute() {
    const double sixth = 1.0 / 6.0;
    for (int z = 1; z <= len_[2]; ++z)
      for (int y = 1; y <= len_[1]; ++y) {
        const double* c = &a_[idx(0, y, z)];
        double* o = &b_[idx(0, y, z)];
        for (int x = 1; x <= len_[0]; ++x)
          o[x] = sixth * (c[x - 1] + c[x + 1] + c[x - sy_] + c[x + sy_] + c[x - sz_] + c[x + sz_]);
      }
  }

  static message_layer::RecvTarget on_halo(void* ctx, const message_layer::Arrival& a) {
    auto& self = *static_cast<Stencil*>(ctx);
    HaloHeader h;
    std::memcpy(&h, a.header.data(), sizeof h);
    auto& in = self.in_[h.face][h.iteration % 2];
    if (a.bytes != in.size() * sizeof(double)) throw std::logic_error("halo of the wrong size");
    return message_layer::RecvTarget::into(std::as_writable_bytes(std::span(in)), &Stencil::on_done,
                                           &self.arrived_[h.iteration % 2]);
  }
  static void on_done(void* ctx, std::uint32_t, std::size_t) { ++*static_cast<int*>(ctx); }

  message_layer::Session& s_;
  message_layer::MessageLayer& ml_;
  int n_;
  std::array<int, 3> grid_{}, me_{};
  int neighbour_[6]{};
  int lo_[3]{}, len_[3]{};
  int sx_ = 1, sy_ = 0, sz_ = 0;
  bool fixed_low_x_ = false;
  std::vector<double> a_, b_;
  std::vector<double> out_[6];
  std::vector<double> in_[6][2];  // per face, by iteration parity
  Out outs_[6];
  int arrived_[2] = {0, 0};
};

int run(int argc, char** argv) {
  const auto args = bench::Args::parse(argc, argv, 1);
  const int n = static_cast<int>(args.number("--n", 128, 4, 2048));
  const int iterations = static_cast<int>(args.number("--iterations", 40, 1, 100000));
  const int warmup = 3;
  auto session = message_layer::Session::from_launcher();
  Stencil st(*session, n);
  auto& boot = session->bootstrap();
  boot.barrier();
  double halo = 0;
  bench::Clock::time_point start;
  for (int it = 0; it < warmup + iterations; ++it) {
    if (it == warmup) {
      st.drain();  // nothing of ours may wait in a FIFO while we sit in the barrier
      boot.barrier();
      start = bench::Clock::now();
      halo = 0;
    }
    halo += st.iterate(static_cast<std::uint32_t>(it));
  }
  const double mine = bench::seconds_since(start);
  st.drain();
  boot.barrier();

  struct Report {
    double seconds, halo;
    std::uint64_t checksum;
  } const report{mine, halo, st.checksum()};
  std::vector<Report> all(static_cast<std::size_t>(session->size()));
  session->runtime().allgather(std::as_bytes(std::span(&report, 1)),
                               std::as_writable_bytes(std::span(all)));
  if (session->rank() != 0) return 0;
  double slowest = 0, halo_sum = 0, seconds_sum = 0;
  std::uint64_t checksum = 0;
  for (const auto& r : all) {
    slowest = std::max(slowest, r.seconds);
    halo_sum += r.halo;
    seconds_sum += r.seconds;
    checksum += r.checksum;
  }
  const auto g = st.grid();
  char hex[32];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(checksum));
  bench::Table t(
      "3D 7-point Jacobi, " + std::to_string(n) + "^3 points, " + std::to_string(iterations) +
          " iterations after " + std::to_string(warmup) +
          " warm-up ones; ms per iteration of the slowest task; halo share = time in "
          "the halo exchange / total, averaged over tasks",
      {"mode", "shape", "tasks", "task_grid", "ms_per_iteration", "halo_share", "checksum"});
  t.row({std::string(job_runtime::to_string(session->mode())),
         session->mapping().shape().to_string(), session->size(),
         std::to_string(g[0]) + "x" + std::to_string(g[1]) + "x" + std::to_string(g[2]),
         slowest / iterations * 1e3, halo_sum / seconds_sum, std::string(hex)});
  if (args.json) {
    nlohmann::json out{{"benchmark", "ml_stencil"}, {"tables", {t.to_json()}}};
    std::printf("%s\n", out.dump(1).c_str());
  } else {
    t.print();
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return bgl::bench::run_main("ml_stencil", run, argc, argv);
}
