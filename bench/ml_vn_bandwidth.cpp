// Intra-node bandwidth in virtual-node mode: messages between the two tasks of one node, per
// message size, against two floors measured by the same program in the same run:
//   vn        the virtual-node protocol (the layer's choice above one packet): the receiver copies
//             straight from the sender's buffer with process_vm_readv, then answers with a fin;
//   stream    rendezvous forced: the data stream through the node's virtual FIFO in 236-byte
//             packets (what the virtual-node protocol falls back to where process_vm_readv is
//             refused, or with BGL_ML_VN_COPY=0);
//   pvr       floor: the receiving task reads the sender's buffer with one process_vm_readv per
//             message, nothing else;
//   memcpy    floor: the receiving task copies a buffer of its own with memcpy.
// Messages go from t = 1 to t = 0 (rank 1 to rank 0 under XYZT), a window of 4 outstanding; the
// time is taken by the receiver from the barrier to the last completion. The variants are
// interleaved per size and round; MB/s = 1e6 B/s from the best and the median round.
//
//   bglrun -np 2 --shape 1x1x1 --mode vn build/bin/ml_vn_bandwidth [--rounds R] [--json]
#include <sys/uio.h>
#include <unistd.h>

#include <cstring>
#include <deque>
#include <memory>
#include <new>
#include <optional>

#include "bench_util.hpp"
#include "bgl/message_layer/session.hpp"

namespace {

using namespace bgl;
using message_layer::Rank;

constexpr message_layer::HandlerId kData = 1;
constexpr std::size_t kSizes[] = {229,    1024,     4096,     16384,    65536,
                                  262144, 1u << 20, 4u << 20, 16u << 20};
constexpr std::size_t kMaxBytes = 16u << 20;
constexpr std::uint32_t kWindow = 4;

struct AlignedDelete {
  void operator()(std::byte* p) const { ::operator delete[](p, std::align_val_t{64}); }
};
using Storage = std::unique_ptr<std::byte[], AlignedDelete>;
Storage make_storage(std::size_t bytes) {
  Storage s(new (std::align_val_t{64}) std::byte[bytes]);
  std::memset(s.get(), 3, bytes);
  return s;
}

// Messages per measurement: about 32 MiB of data, at least 8 messages, at most 10000.
std::uint64_t messages_for(std::size_t bytes) {
  return std::clamp<std::uint64_t>((32u << 20) / bytes, 8, 10000);
}

struct Where {
  std::uint64_t address;
  std::int32_t pid;
  std::uint32_t pad;
};

class Bench {
 public:
  Bench(message_layer::Session& s)
      : s_(s), ml_(s.layer()), src_(make_storage(kMaxBytes)), dst_(make_storage(kMaxBytes)) {
    ml_.register_handler(kData, &Bench::on_data, this);
    const Where mine{reinterpret_cast<std::uint64_t>(src_.get()), getpid(), 0};
    Where all[2];
    s.runtime().allgather(std::as_bytes(std::span(&mine, 1)),
                          std::as_writable_bytes(std::span(all, 2)));
    peer_ = all[1 - s.rank()];
  }

  // Seconds at the receiver (rank 0) for n messages of `bytes` from rank 1; -1 at the sender.
  double messages(std::size_t bytes, std::uint64_t n,
                  std::optional<message_layer::Protocol> protocol) {
    received_ = 0;
    s_.bootstrap().barrier();
    const auto start = bench::Clock::now();
    if (s_.rank() == 1) {
      std::deque<Slot> slots;
      sent_ = posted_ = 0;
      count_ = n;
      for (std::uint32_t w = 0; w < kWindow && posted_ < n; ++w, ++posted_) {
        Slot& sl = slots.emplace_back();
        sl.self = this;
        sl.m.dest = 0;
        sl.m.handler = kData;
        sl.m.data.buffer = {src_.get(), bytes};
        sl.m.protocol = protocol;
        sl.m.context = &sl;
        sl.m.done = &Bench::on_sent;
        ml_.post(sl.m);
      }
      while (sent_ < n || !ml_.idle())
        if (!ml_.advance()) ml_.wait();
    } else {
      while (received_ < n || !ml_.idle())
        if (!ml_.advance()) ml_.wait();
    }
    const double t = bench::seconds_since(start);
    s_.bootstrap().barrier();
    return s_.rank() == 0 ? t : -1;
  }

  double pvr(std::size_t bytes, std::uint64_t n) {
    s_.bootstrap().barrier();
    const auto start = bench::Clock::now();
    if (s_.rank() == 0) {
      for (std::uint64_t i = 0; i < n; ++i) {
        std::size_t done = 0;
        while (done < bytes) {
          const iovec local{dst_.get() + done, bytes - done};
          const iovec remote{reinterpret_cast<void*>(peer_.address + done), bytes - done};
          const ssize_t got = process_vm_readv(peer_.pid, &local, 1, &remote, 1, 0);
          if (got <= 0) throw std::runtime_error("process_vm_readv failed");
          done += static_cast<std::size_t>(got);
        }
      }
    }
    const double t = bench::seconds_since(start);
    s_.bootstrap().barrier();
    return s_.rank() == 0 ? t : -1;
  }

  double copy(std::size_t bytes, std::uint64_t n) {
    s_.bootstrap().barrier();
    const auto start = bench::Clock::now();
    if (s_.rank() == 0)
      for (std::uint64_t i = 0; i < n; ++i) {
        std::memcpy(dst_.get(), src_.get(), bytes);
        asm volatile("" ::: "memory");  // keep every copy
      }
    const double t = bench::seconds_since(start);
    s_.bootstrap().barrier();
    return s_.rank() == 0 ? t : -1;
  }

 private:
  struct Slot {
    message_layer::SendMessage m;
    Bench* self = nullptr;
  };
  static void on_sent(message_layer::SendMessage& m) {
    auto& self = *static_cast<Slot*>(m.context)->self;
    ++self.sent_;
    if (self.posted_ < self.count_) {
      ++self.posted_;
      self.ml_.post(m);
    }
  }
  static message_layer::RecvTarget on_data(void* ctx, const message_layer::Arrival& a) {
    auto& self = *static_cast<Bench*>(ctx);
    return message_layer::RecvTarget::into({self.dst_.get(), a.bytes}, &Bench::on_received, ctx);
  }
  static void on_received(void* ctx, std::uint32_t, std::size_t) {
    ++static_cast<Bench*>(ctx)->received_;
  }

  message_layer::Session& s_;
  message_layer::MessageLayer& ml_;
  Storage src_, dst_;
  Where peer_{};
  std::uint64_t received_ = 0, sent_ = 0, posted_ = 0, count_ = 0;
};

int run(int argc, char** argv) {
  const auto args = bench::Args::parse(argc, argv, 5);
  auto session = message_layer::Session::from_launcher();
  if (session->size() != 2 || session->mode() != job_runtime::NodeMode::virtual_node ||
      session->mapping().location(0).node != session->mapping().location(1).node)
    throw ConfigError(
        "ml_vn_bandwidth needs the two tasks of one node: bglrun -np 2 --shape 1x1x1 --mode vn");
  if (session->mapping().location(1).t != 1)
    throw ConfigError("rank 1 must be the node's t = 1 task (mapping XYZT)");
  Bench b(*session);
  constexpr int kVariants = 4;
  const char* names[kVariants] = {"vn", "stream", "pvr", "memcpy"};
  std::vector<std::array<bench::Samples, kVariants>> samples(std::size(kSizes));
  const auto one = [&](int variant, std::size_t bytes, std::uint64_t n) {
    switch (variant) {
      case 0:
        return b.messages(bytes, n, std::nullopt);
      case 1:
        return b.messages(bytes, n, message_layer::Protocol::rendezvous);
      case 2:
        return b.pvr(bytes, n);
      default:
        return b.copy(bytes, n);
    }
  };
  for (int v = 0; v < kVariants; ++v)  // warm up
    one(v, 1u << 20, 8);
  for (int round = 0; round < args.rounds; ++round)
    for (std::size_t i = 0; i < std::size(kSizes); ++i)
      for (int k = 0; k < kVariants; ++k) {
        const int v = (k + round) % kVariants;
        samples[i][static_cast<std::size_t>(v)].add(one(v, kSizes[i], messages_for(kSizes[i])));
      }
  if (session->rank() != 0) return 0;
  const auto& st = session->layer().statistics();
  const auto& vn = st.protocol[static_cast<std::size_t>(message_layer::Protocol::virtual_node)];
  bench::Table t(
      "intra-node bandwidth, t = 1 -> t = 0 of one node, window " + std::to_string(kWindow) + " (" +
          std::to_string(args.rounds) +
          " rounds; MB/s = 1e6 B/s, best and median round; vn = virtual-node protocol (" +
          (session->layer().config().vn_direct_copy ? "direct copy" : "BGL_ML_VN_COPY=0") +
          "), stream = rendezvous through the virtual FIFO, pvr = one process_vm_readv per "
          "message, memcpy = one memcpy per message)",
      {"bytes", "messages", "vn_best", "vn_median", "stream_median", "pvr_best", "pvr_median",
       "memcpy_median", "vn_vs_pvr", "vn_vs_memcpy"});
  for (std::size_t i = 0; i < std::size(kSizes); ++i) {
    const double data = static_cast<double>(messages_for(kSizes[i]) * kSizes[i]) / 1e6;
    const auto& s = samples[i];
    const double vn_median = data / s[0].median(), pvr_median = data / s[2].median(),
                 copy_median = data / s[3].median();
    t.row({kSizes[i], messages_for(kSizes[i]), data / s[0].min(), vn_median, data / s[1].median(),
           data / s[2].min(), pvr_median, copy_median, vn_median / pvr_median,
           vn_median / copy_median});
  }
  bench::Table c("receiver's virtual-node protocol counters over the run",
                 {"messages_received", "packets_received", "rendezvous_packets_received"});
  c.row({vn.messages_received, vn.packets_received,
         st.protocol[static_cast<std::size_t>(message_layer::Protocol::rendezvous)]
             .packets_received});
  if (args.json) {
    nlohmann::json raw = nlohmann::json::object();
    for (std::size_t i = 0; i < std::size(kSizes); ++i)
      for (int v = 0; v < kVariants; ++v)
        raw[std::to_string(kSizes[i])][names[v]] = samples[i][static_cast<std::size_t>(v)].values;
    nlohmann::json out{
        {"benchmark", "ml_vn_bandwidth"}, {"tables", {t.to_json(), c.to_json()}}, {"seconds", raw}};
    std::printf("%s\n", out.dump(1).c_str());
  } else {
    t.print();
    c.print();
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return bgl::bench::run_main("ml_vn_bandwidth", run, argc, argv);
}
