// The bgl_coll_* C entry points: parameters from the C call, the selection, a per-communicator
// cache of generated programs, and the executor.
#include "bgl/coll/bgl_coll.h"

#include <spdlog/spdlog.h>

#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <tuple>
#include <vector>

#include "bgl/coll/executor.hpp"
#include "bgl/coll/reduce_ops.hpp"
#include "bgl/coll/select.hpp"
#include "bgl/collnet/collective_network.hpp"
#include "bgl/msg/c_session.hpp"
#include "bgl/torus/error.hpp"
#include "tree_ops.hpp"

using namespace bgl;
using namespace bgl::coll;

namespace {

thread_local std::string g_error;

// One engine (and collective-network object) per message-layer session.
struct SessionState {
  std::unique_ptr<collnet::CollectiveNetwork> net;
  std::unique_ptr<Engine> engine;
  int users = 0;
};
std::mutex g_mutex;
std::map<bgl_msg_session_t*, SessionState> g_sessions;

template <class F>
int guarded(F&& f) {
  try {
    return f();
  } catch (const ConfigError& e) {
    g_error = e.what();
    return BGL_COLL_ERR_CONFIG;
  } catch (const std::invalid_argument& e) {
    g_error = e.what();
    return BGL_COLL_ERR_ARG;
  } catch (const std::exception& e) {
    g_error = e.what();
    return BGL_COLL_ERR_INTERNAL;
  }
}

}  // namespace

struct bgl_coll_comm {
  bgl_msg_session_t* session;
  std::unique_ptr<Communicator> comm;
  using Key = std::tuple<int, std::uint64_t, int, int, int, const Algorithm*>;
  std::map<Key, Program> programs;  // generated programs by call shape
  std::vector<std::byte> staging;   // in-place inputs

  const Program& program(const Algorithm& a, const Params& x) {
    const Key k{static_cast<int>(x.op),        x.bytes(), x.root, static_cast<int>(x.dtype),
                static_cast<int>(x.reduce_op), &a};
    auto it = programs.find(k);
    if (it == programs.end()) {
      if (programs.size() > 256) programs.clear();  // bound the cache
      it = programs.emplace(k, a.generate(x, comm->rank())).first;
    }
    return it->second;
  }

  // Runs `x` or reports NOT_HANDLED.
  int run(Params x, Buffers b) {
    x.topology = comm->topology();
    if (std::string e = x.validate(); !e.empty()) throw std::invalid_argument(e);
    const Selection s = select_algorithm(x);
    if (!s.algorithm) return BGL_COLL_NOT_HANDLED;
    spdlog::trace("collectives: {} {} B: {} ({})", to_string(x.op), x.bytes(), s.algorithm->name,
                  s.reason);
    comm->run(program(*s.algorithm, x), x, b);
    return BGL_COLL_DONE;
  }
};

namespace {

bool reduction_ok(int dtype, int op) {
  return dtype >= BGL_COLL_I8 && dtype <= BGL_COLL_F64 && op >= BGL_COLL_SUM &&
         op <= BGL_COLL_BXOR &&
         !*reduce_unsupported(static_cast<DataType>(dtype), static_cast<ReduceOp>(op));
}

}  // namespace

extern "C" {

const char* bgl_coll_last_error(void) {
  return g_error.c_str();
}

int bgl_coll_comm_create(bgl_msg_session_t* session, uint32_t size, uint32_t rank,
                         const uint32_t* world_ranks, uint32_t context_id, bgl_coll_comm_t** out) {
  return guarded([&] {
    if (!session || !out) throw std::invalid_argument("bgl_coll_comm_create: null argument");
    msg::Session& s = msg::session_of(session);
    const auto job = static_cast<std::uint32_t>(s.size());
    if (!world_ranks && size != job)
      throw std::invalid_argument("bgl_coll_comm_create: no rank table for a communicator of " +
                                  std::to_string(size) + " in a job of " + std::to_string(job));
    Topology t;
    t.mapping = &s.mapping();
    std::vector<bool> seen(job, false);
    if (world_ranks)
      for (std::uint32_t i = 0; i < size; ++i) {
        if (world_ranks[i] >= job || seen[world_ranks[i]])
          throw std::invalid_argument("bgl_coll_comm_create: world_ranks[" + std::to_string(i) +
                                      "] = " + std::to_string(world_ranks[i]) +
                                      " is outside the job or repeated");
        seen[world_ranks[i]] = true;
        t.world_ranks.push_back(static_cast<int>(world_ranks[i]));
      }
    std::lock_guard lock(g_mutex);
    SessionState& st = g_sessions[session];
    if (!st.engine) {
      try {
        st.net = std::make_unique<collnet::CollectiveNetwork>(s.runtime(),
                                                              collnet::RouteClass::combine1);
      } catch (const std::exception& e) {
        spdlog::debug("collectives: no collective network ({}); torus algorithms only", e.what());
      }
      st.engine = std::make_unique<Engine>(s.layer(), st.net.get());
    }
    t.whole_partition = st.net && size == job;
    auto c = std::make_unique<bgl_coll_comm>();
    c->session = session;
    c->comm = std::make_unique<Communicator>(*st.engine, std::move(t), static_cast<int>(size),
                                             static_cast<int>(rank), context_id);
    ++st.users;
    *out = c.release();
    return 0;
  });
}

void bgl_coll_comm_free(bgl_coll_comm_t* comm) {
  if (!comm) return;
  std::lock_guard lock(g_mutex);
  auto it = g_sessions.find(comm->session);
  std::unique_ptr<bgl_coll_comm> owned(comm);
  owned->comm.reset();
  if (it != g_sessions.end() && --it->second.users == 0) g_sessions.erase(it);
}

int bgl_coll_bcast(bgl_coll_comm_t* c, void* buf, size_t bytes, uint32_t root) {
  return guarded([&] {
    Params x = Params::bcast(c->comm->size(), static_cast<int>(root), bytes);
    return c->run(x, {{}, {static_cast<std::byte*>(buf), bytes}});
  });
}

namespace {

std::span<const std::byte> input(bgl_coll_comm_t* c, const void* sendbuf, const void* recvbuf,
                                 std::size_t bytes) {
  if (sendbuf != BGL_COLL_IN_PLACE) return {static_cast<const std::byte*>(sendbuf), bytes};
  c->staging.resize(bytes);
  if (bytes) std::memcpy(c->staging.data(), recvbuf, bytes);
  return c->staging;
}

}  // namespace

int bgl_coll_reduce(bgl_coll_comm_t* c, const void* sendbuf, void* recvbuf, size_t count, int dtype,
                    int op, uint32_t root) {
  return guarded([&] {
    if (!reduction_ok(dtype, op)) return static_cast<int>(BGL_COLL_NOT_HANDLED);
    const auto t = static_cast<DataType>(dtype);
    Params x = Params::reduce(c->comm->size(), static_cast<int>(root), count, t,
                              static_cast<ReduceOp>(op));
    const std::size_t n = x.bytes();
    const bool is_root = c->comm->rank() == static_cast<int>(root);
    auto in = input(c, sendbuf, recvbuf, n);
    return c->run(x, {in, {static_cast<std::byte*>(recvbuf), is_root ? n : 0}});
  });
}

int bgl_coll_allreduce(bgl_coll_comm_t* c, const void* sendbuf, void* recvbuf, size_t count,
                       int dtype, int op) {
  return guarded([&] {
    if (!reduction_ok(dtype, op)) return static_cast<int>(BGL_COLL_NOT_HANDLED);
    Params x = Params::allreduce(c->comm->size(), count, static_cast<DataType>(dtype),
                                 static_cast<ReduceOp>(op));
    const std::size_t n = x.bytes();
    auto in = input(c, sendbuf, recvbuf, n);
    return c->run(x, {in, {static_cast<std::byte*>(recvbuf), n}});
  });
}

int bgl_coll_allgather(bgl_coll_comm_t* c, const void* sendbuf, void* recvbuf, size_t bytes) {
  return guarded([&] {
    const int p = c->comm->size();
    Params x = Params::allgather(std::vector<std::uint64_t>(static_cast<std::size_t>(p), bytes));
    const void* own = sendbuf == BGL_COLL_IN_PLACE
                          ? static_cast<const std::byte*>(recvbuf) +
                                bytes * static_cast<std::size_t>(c->comm->rank())
                          : sendbuf;
    auto in = input(c, own == sendbuf ? sendbuf : BGL_COLL_IN_PLACE, own, bytes);
    return c->run(x, {in, {static_cast<std::byte*>(recvbuf), bytes * static_cast<std::size_t>(p)}});
  });
}

int bgl_coll_alltoall(bgl_coll_comm_t* c, const void* sendbuf, void* recvbuf, size_t bytes) {
  return guarded([&] {
    const int p = c->comm->size();
    Params x = Params::alltoall(p, bytes);
    const std::size_t n = bytes * static_cast<std::size_t>(p);
    auto in = input(c, sendbuf, recvbuf, n);
    return c->run(x, {in, {static_cast<std::byte*>(recvbuf), n}});
  });
}

int bgl_coll_barrier(bgl_coll_comm_t* c) {
  return guarded([&] { return c->run(Params::barrier(c->comm->size()), {}); });
}

}  // extern "C"
