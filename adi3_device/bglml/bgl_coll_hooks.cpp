// The collective hooks (bgl_coll_hooks.h) over the collectives library: the MPICH device's
// communicators, buffers, element types and operations in the library's terms, the library's
// decision (an algorithm, or "not handled" so that MPICH runs its own), and its waiting done
// through the device's progress.
#include <cstring>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "bgl/collectives/library.hpp"
#include "bgl/message_layer/c_session.hpp"
#include "bgl_coll_hooks.h"

using namespace bgl;
using collectives::Buffers;
using collectives::DataType;
using collectives::Params;
using collectives::ReduceOp;

namespace {

// One per task: the hooks run on the thread of MPI calls, between bgl_coll_init and
// bgl_coll_finalize.
struct Hooks {
  bgl_coll_env_t env;
  collectives::Library library;

  explicit Hooks(const bgl_coll_env_t& e) : env(e), library(message_layer::session_of(e.session)) {
    library.executor().set_progress(&Hooks::progress_round, this, &Hooks::meanwhile_round);
  }
  Hooks(const Hooks&) = delete;
  Hooks& operator=(const Hooks&) = delete;

  static bool round(void* self, int wait) {
    const bgl_coll_env_t& e = static_cast<Hooks*>(self)->env;
    const int rc = e.progress(e.progress_context, wait);
    if (rc < 0)
      throw std::runtime_error("collectives: the device's progress failed (" +
                               std::string(bgl_msg_last_error()) + ")");
    return rc > 0;
  }
  // The library's waits on the message layer: a round that waits when it finds nothing.
  static bool progress_round(void* self) { return round(self, 1); }
  // Inside a tree or global-interrupt wait, which does the waiting itself (on the wire and the
  // task's doorbell at once): a round that never waits.
  static bool meanwhile_round(void* self) { return round(self, 0); }
};

std::optional<Hooks> g_hooks;

std::optional<DataType> to_library(bgl_coll_dtype_t t) {
  switch (t) {
    case BGL_COLL_I8:
      return DataType::i8;
    case BGL_COLL_U8:
      return DataType::u8;
    case BGL_COLL_I16:
      return DataType::i16;
    case BGL_COLL_U16:
      return DataType::u16;
    case BGL_COLL_I32:
      return DataType::i32;
    case BGL_COLL_U32:
      return DataType::u32;
    case BGL_COLL_I64:
      return DataType::i64;
    case BGL_COLL_U64:
      return DataType::u64;
    case BGL_COLL_F32:
      return DataType::f32;
    case BGL_COLL_F64:
      return DataType::f64;
  }
  return std::nullopt;
}

std::optional<ReduceOp> to_library(bgl_coll_op_t op) {
  switch (op) {
    case BGL_COLL_SUM:
      return ReduceOp::sum;
    case BGL_COLL_PROD:
      return ReduceOp::prod;
    case BGL_COLL_MAX:
      return ReduceOp::max;
    case BGL_COLL_MIN:
      return ReduceOp::min;
    case BGL_COLL_LAND:
      return ReduceOp::land;
    case BGL_COLL_LOR:
      return ReduceOp::lor;
    case BGL_COLL_LXOR:
      return ReduceOp::lxor;
    case BGL_COLL_BAND:
      return ReduceOp::band;
    case BGL_COLL_BOR:
      return ReduceOp::bor;
    case BGL_COLL_BXOR:
      return ReduceOp::bxor;
  }
  return std::nullopt;
}

const bgl_coll_comm_t& checked(const bgl_coll_comm_t* c) {
  if (!c) throw std::invalid_argument("collective hook without a communicator");
  return *c;
}

collectives::Group group_of(const bgl_coll_comm_t* c) {
  collectives::Group g;
  g.id = c->id;
  g.size = static_cast<int>(c->size);
  g.rank = static_cast<int>(c->rank);
  if (c->world_ranks) g.world_ranks = {c->world_ranks, c->size};
  g.whole_job = c->whole_job != 0;
  return g;
}

Hooks& hooks() {
  if (!g_hooks) throw std::logic_error("collective hook called outside bgl_coll_init/finalize");
  return *g_hooks;
}

// Runs `body` (which answers whether the library ran the operation) and turns exceptions into
// the message layer's status codes, with the text for bgl_msg_last_error().
template <class Body>
int hook(Body&& body) noexcept {
  try {
    return body() ? BGL_COLL_DONE : BGL_COLL_NOT_HANDLED;
  } catch (...) {
    return message_layer::current_exception_status();
  }
}

bool run(const bgl_coll_comm_t* c, const Params& x, Buffers b) {
  return hooks().library.run(group_of(c), x, b);
}

std::span<std::byte> bytes(void* p, std::size_t n) {
  return {static_cast<std::byte*>(p), p ? n : 0};
}
std::span<const std::byte> bytes(const void* p, std::size_t n) {
  return {static_cast<const std::byte*>(p), p ? n : 0};
}

// A reduction's input: in place (sendbuf == recvbuf) the executor still needs it apart from the
// buffer it writes the result into.
std::span<const std::byte> reduction_input(const void* sendbuf, const void* recvbuf,
                                           std::size_t n) {
  if (sendbuf == recvbuf) return hooks().library.stage(bytes(recvbuf, n));
  return bytes(sendbuf, n);
}

}  // namespace

extern "C" {

int bgl_coll_init(const bgl_coll_env_t* env) {
  return hook([&] {  // BGL_COLL_DONE is BGL_MSG_OK
    if (!env || env->version != BGL_COLL_HOOKS_VERSION || !env->session || !env->progress)
      throw std::invalid_argument("bgl_coll_init: missing or incompatible environment (version " +
                                  std::to_string(env ? env->version : -1) + ", expected " +
                                  std::to_string(BGL_COLL_HOOKS_VERSION) + ")");
    g_hooks.reset();
    g_hooks.emplace(*env);
    return true;
  });
}

void bgl_coll_finalize(void) {
  g_hooks.reset();
}

void bgl_coll_comm_free(uint32_t id) {
  if (g_hooks) g_hooks->library.forget(id);
}

int bgl_coll_barrier(const bgl_coll_comm_t* comm) {
  return hook([&] { return run(comm, Params::barrier(static_cast<int>(checked(comm).size)), {}); });
}

int bgl_coll_bcast(const bgl_coll_comm_t* comm, void* buffer, size_t bytes_, uint32_t root) {
  return hook([&] {
    checked(comm);
    const Params x = Params::bcast(static_cast<int>(comm->size), static_cast<int>(root), bytes_);
    return run(comm, x, {{}, bytes(buffer, bytes_)});
  });
}

int bgl_coll_reduce(const bgl_coll_comm_t* comm, const void* sendbuf, void* recvbuf, size_t count,
                    bgl_coll_dtype_t dtype, bgl_coll_op_t op, uint32_t root) {
  return hook([&] {
    checked(comm);
    const auto t = to_library(dtype);
    const auto o = to_library(op);
    if (!t || !o) return false;
    const Params x =
        Params::reduce(static_cast<int>(comm->size), static_cast<int>(root), count, *t, *o);
    const std::size_t n = x.bytes();
    const bool at_root = comm->rank == root;
    return run(comm, x, {reduction_input(sendbuf, recvbuf, n), bytes(recvbuf, at_root ? n : 0)});
  });
}

int bgl_coll_allreduce(const bgl_coll_comm_t* comm, const void* sendbuf, void* recvbuf,
                       size_t count, bgl_coll_dtype_t dtype, bgl_coll_op_t op) {
  return hook([&] {
    checked(comm);
    const auto t = to_library(dtype);
    const auto o = to_library(op);
    if (!t || !o) return false;
    const Params x = Params::allreduce(static_cast<int>(comm->size), count, *t, *o);
    const std::size_t n = x.bytes();
    return run(comm, x, {reduction_input(sendbuf, recvbuf, n), bytes(recvbuf, n)});
  });
}

int bgl_coll_allgather(const bgl_coll_comm_t* comm, const void* sendbuf, void* recvbuf,
                       size_t block) {
  return hook([&] {
    checked(comm);
    const std::size_t p = comm->size;
    const Params x = Params::allgather(std::vector<std::uint64_t>(p, block));
    // In place, this rank's block is already where the result puts it.
    auto* all = static_cast<std::byte*>(recvbuf);
    const auto own = sendbuf ? bytes(sendbuf, block)
                             : hooks().library.stage(bytes(all + block * comm->rank, block));
    return run(comm, x, {own, bytes(recvbuf, block * p)});
  });
}

int bgl_coll_alltoall(const bgl_coll_comm_t* comm, const void* sendbuf, void* recvbuf,
                      size_t block) {
  return hook([&] {
    checked(comm);
    const std::size_t n = block * comm->size;
    const Params x = Params::alltoall(static_cast<int>(comm->size), block);
    const auto in = sendbuf ? bytes(sendbuf, n) : hooks().library.stage(bytes(recvbuf, n));
    return run(comm, x, {in, bytes(recvbuf, n)});
  });
}

}  // extern "C"
