// Task program for the message layer's multi-process tests (run under bglrun).
//   ml_scenarios mix ROUNDS [SIZES...]    every task sends every other task one message per size per
//                                         round, protocols by size (or BGL_ML_PROTOCOL); receivers
//                                         check contents and per-source order; every other message
//                                         is taken as unexpected and accepted later
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <deque>
#include <string>
#include <vector>

#include "bgl/msg/message_layer.hpp"
#include "bgl/pkt/runtime.hpp"
#include "bgl/torus/error.hpp"

namespace {

using namespace bgl;

#define CHECK(cond)                                                                     \
  do {                                                                                  \
    if (!(cond)) {                                                                      \
      std::fprintf(stderr, "CHECK FAILED rank %u %s:%d: %s\n", g_rank, __FILE__, __LINE__, #cond); \
      std::exit(1);                                                                     \
    }                                                                                   \
  } while (0)

unsigned g_rank = 0;

std::byte pattern(std::uint32_t src, std::uint32_t seq, std::size_t i) {
  return static_cast<std::byte>((src * 251u + seq * 13u + i * 7u + (i >> 8)) & 0xff);
}

struct Header {
  std::uint32_t seq;
  std::uint32_t bytes;
};

struct Receiver {
  msg::MessageLayer* ml = nullptr;
  std::vector<std::uint32_t> next_seq;
  std::uint64_t completed = 0;
  struct Pending {
    msg::RecvHandle handle;
    std::uint32_t src, seq;
    std::size_t bytes;
    std::vector<std::byte> buffer;
  };
  std::deque<Pending> buffers;  // stable addresses for in-flight receives
  std::vector<Pending*> unexpected;

  static msg::RecvTarget arrival(void* ctx, const msg::Arrival& a) {
    auto& self = *static_cast<Receiver*>(ctx);
    CHECK(a.header.size() == sizeof(Header));
    Header h;
    std::memcpy(&h, a.header.data(), sizeof h);
    CHECK(h.bytes == a.bytes);
    CHECK(h.seq == self.next_seq[a.source]);  // MPI non-overtaking for every protocol mix
    ++self.next_seq[a.source];
    auto& p = self.buffers.emplace_back(Pending{a.handle, a.source, h.seq, a.bytes, std::vector<std::byte>(a.bytes)});
    if (h.seq % 2 == 1) {
      self.unexpected.push_back(&p);
      return msg::RecvTarget::later();
    }
    return msg::RecvTarget::into(p.buffer, &Receiver::done, &p);
  }
  static void done(void* ctx, std::uint32_t, std::size_t bytes) {
    auto& p = *static_cast<Pending*>(ctx);
    CHECK(bytes == p.bytes);
    for (std::size_t i = 0; i < p.bytes; ++i) CHECK(p.buffer[i] == pattern(p.src, p.seq, i));
    p.buffer = {};
    ++g_receiver->completed;
  }
  static Receiver* g_receiver;
  void accept_some() {
    if (unexpected.empty()) return;
    for (auto* p : unexpected) ml->accept(p->handle, msg::RecvTarget::into(p->buffer, &Receiver::done, p));
    unexpected.clear();
  }
};
Receiver* Receiver::g_receiver = nullptr;

int mix(pkt::Runtime& rt, int rounds, const std::vector<std::size_t>& sizes) {
  auto& ep = rt.endpoint();
  msg::MessageLayer ml(ep, msg::Config::from_environment());
  const auto me = rt.rank();
  const int n = rt.size();
  Receiver rx;
  rx.ml = &ml;
  rx.next_seq.assign(static_cast<std::size_t>(n), 0);
  Receiver::g_receiver = &rx;
  ml.register_handler(3, &Receiver::arrival, &rx);

  struct Out {
    msg::SendMessage m;
    Header h;
    std::vector<std::byte> data;
    bool done = false;
  };
  const std::size_t per_peer = static_cast<std::size_t>(rounds) * sizes.size();
  std::vector<Out> out(per_peer * static_cast<std::size_t>(n - 1));
  std::uint64_t sends_done = 0;
  std::size_t k = 0;
  for (int r = 0; r < rounds; ++r) {
    for (std::size_t s = 0; s < sizes.size(); ++s) {
      for (int j = 1; j < n; ++j) {
        const auto dest = static_cast<msg::Rank>((me + static_cast<unsigned>(j)) % static_cast<unsigned>(n));
        Out& o = out[k++];
        const auto seq = static_cast<std::uint32_t>(static_cast<std::size_t>(r) * sizes.size() + s);
        o.h = {seq, static_cast<std::uint32_t>(sizes[s])};
        o.data.resize(sizes[s]);
        for (std::size_t i = 0; i < sizes[s]; ++i) o.data[i] = pattern(me, seq, i);
        o.m.dest = dest;
        o.m.handler = 3;
        o.m.header = std::as_bytes(std::span(&o.h, 1));
        o.m.data.buffer = o.data;
        o.m.context = &sends_done;
        o.m.done = [](msg::SendMessage& m) { ++*static_cast<std::uint64_t*>(m.context); };
        ml.post(o.m);
      }
      ml.advance();
      rx.accept_some();
    }
  }
  const std::uint64_t expected = out.size();
  ml.progress_until([&] {
    rx.accept_some();
    return sends_done == expected && rx.completed == expected && ml.idle();
  });
  rt.barrier();
  if (me == 0) std::printf("mix: %d tasks, %d rounds, %zu sizes: ok\n", n, rounds, sizes.size());
  std::printf("rank %u stats %s\n", me, ml.statistics().to_json().c_str());
  return 0;
}

int run(int argc, char** argv) {
  auto rt = pkt::Runtime::from_environment();
  g_rank = rt.rank();
  const std::string what = argc > 1 ? argv[1] : "";
  if (what == "mix") {
    const int rounds = argc > 2 ? std::stoi(argv[2]) : 3;
    std::vector<std::size_t> sizes;
    for (int i = 3; i < argc; ++i) sizes.push_back(std::stoul(argv[i]));
    if (sizes.empty()) sizes = {0, 1, 200, 239, 240, 241, 1000, 5000, 20000, 100000};
    return mix(rt, rounds, sizes);
  }
  throw ConfigError("usage: ml_scenarios mix ROUNDS [SIZES...]");
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ml_scenarios: %s\n", e.what());
    return 2;
  }
}
