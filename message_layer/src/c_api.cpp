// The C ABI (bgl/message_layer/bgl_msg.h) over Session and MessageLayer. Exceptions never cross it:
// they become status codes with the message kept for bgl_msg_last_error().
#include <new>
#include <string>

#include "bgl/message_layer/bgl_msg.h"
#include "bgl/message_layer/c_session.hpp"
#include "bgl/message_layer/session.hpp"
#include "bgl/torus_emu/error.hpp"

struct CHandler {
  bgl_msg_arrival_fn fn = nullptr;
  void* context = nullptr;
};

struct bgl_msg_session {
  std::unique_ptr<bgl::message_layer::Session> session;
  CHandler handlers[BGL_MSG_MAX_HANDLERS];
};

namespace {

using namespace bgl::message_layer;

thread_local std::string g_last_error;

// The C enum repeats the C++ one (a C header cannot include it): they must agree.
static_assert(BGL_MSG_ONE_PACKET == static_cast<int>(Protocol::one_packet));
static_assert(BGL_MSG_EAGER == static_cast<int>(Protocol::eager));
static_assert(BGL_MSG_RENDEZVOUS == static_cast<int>(Protocol::rendezvous));
static_assert(BGL_MSG_ADAPTIVE_EAGER == static_cast<int>(Protocol::adaptive_eager));
static_assert(BGL_MSG_VIRTUAL_NODE == static_cast<int>(Protocol::virtual_node));
static_assert(BGL_MSG_PROTOCOLS == kProtocols);
static_assert(sizeof(SendMessage) <= BGL_MSG_SEND_OPAQUE_BYTES, "grow BGL_MSG_SEND_OPAQUE_BYTES");
static_assert(alignof(SendMessage) <= 16);
static_assert(sizeof(bgl_msg_recv_handle_t) == sizeof(RecvHandle));

template <class F>
int guarded(F&& f) {
  try {
    f();
    return BGL_MSG_OK;
  } catch (...) {
    return current_exception_status();
  }
}

bgl_msg_send_t* c_of(SendMessage& m) {
  return static_cast<bgl_msg_send_t*>(m.context);
}

RecvTarget to_cxx(const bgl_msg_recv_target_t& t) {
  RecvTarget r;
  r.kind = t.kind == BGL_MSG_TARGET_BUFFER ? RecvTarget::Kind::buffer
           : t.kind == BGL_MSG_TARGET_IOV  ? RecvTarget::Kind::iov
                                           : RecvTarget::Kind::later;
  r.buffer = {static_cast<std::byte*>(t.buffer), t.buffer ? t.bytes : 0};
  r.iov = {t.iov, t.iov ? t.iov_count : 0};
  r.done = t.done;  // the same function type in C and C++
  r.context = t.context;
  return r;
}

RecvTarget c_arrival(void* context, const Arrival& a) {
  const auto& h = *static_cast<const CHandler*>(context);
  const bgl_msg_arrival_t arrival{a.source,        a.handler, a.header.data(),
                                  a.header.size(), a.bytes,   static_cast<int>(a.protocol),
                                  {a.handle.id}};
  return to_cxx(h.fn(h.context, &arrival));
}

}  // namespace

extern "C" {

const char* bgl_msg_last_error(void) {
  return g_last_error.c_str();
}

int bgl_msg_init(const bgl_msg_bootstrap_t* bootstrap, bgl_msg_session_t** out) {
  return guarded([&] {
    if (!out) throw std::invalid_argument("bgl_msg_init: no place for the session");
    auto s = std::make_unique<bgl_msg_session>();
    if (bootstrap) {
      const HostCallbacks cb{bootstrap->context, bootstrap->rank, static_cast<int>(bootstrap->size),
                             bootstrap->barrier, bootstrap->broadcast};
      s->session = Session::with_bootstrap(std::make_unique<HostBootstrap>(cb));
    } else {
      s->session = Session::from_launcher();
    }
    *out = s.release();
  });
}

void bgl_msg_finalize(bgl_msg_session_t* session) {
  if (!session) return;
  try {
    session->session->finalize();
  } catch (const std::exception& e) {
    g_last_error = e.what();  // a handler or callback failed while flushing; nothing to return
  }
  delete session;
}

uint32_t bgl_msg_rank(const bgl_msg_session_t* s) {
  return s->session->rank();
}
uint32_t bgl_msg_size(const bgl_msg_session_t* s) {
  return static_cast<uint32_t>(s->session->size());
}
int bgl_msg_mode(const bgl_msg_session_t* s) {
  return static_cast<int>(s->session->mode());
}

int bgl_msg_vtime(const bgl_msg_session_t* s, double* seconds) {
  const auto& ep = s->session->layer().endpoint();
  if (!ep.timed()) return BGL_MSG_ERR_CONFIG;
  *seconds = ep.vt_params()->seconds(ep.clock().now());
  return 0;
}

void bgl_msg_vt_charge(bgl_msg_session_t* s, int call) {
  auto& ep = s->session->layer().endpoint();
  if (!ep.timed()) return;
  const auto& p = *ep.vt_params();
  const double cycles = call == BGL_MSG_VT_MPI_SEND ? p.mpi_send_cycles : p.mpi_recv_cycles;
  ep.clock().charge(bgl::virtual_time::Params::ticks(cycles));
}

int bgl_msg_coords(const bgl_msg_session_t* s, uint32_t rank, int xyzt[4]) {
  return guarded([&] {
    const auto& m = s->session->mapping();
    if (rank >= static_cast<uint32_t>(m.size()))
      throw std::invalid_argument("rank outside the job");
    const auto c = m.coord(rank);
    xyzt[0] = c.x, xyzt[1] = c.y, xyzt[2] = c.z, xyzt[3] = m.location(rank).t;
  });
}

size_t bgl_msg_max_one_packet(size_t header_bytes) {
  return header_bytes > kMaxUserHeader ? 0
                                       : bgl::packet_layer::kMaxPayloadBytes - 12 - header_bytes;
}

int bgl_msg_register(bgl_msg_session_t* s, uint8_t handler, bgl_msg_arrival_fn fn, void* context) {
  return guarded([&] {
    if (handler >= BGL_MSG_MAX_HANDLERS || !fn)
      throw std::invalid_argument("bad handler registration");
    s->handlers[handler] = {fn, context};
    s->session->layer().register_handler(handler, &c_arrival, &s->handlers[handler]);
  });
}

int bgl_msg_post(bgl_msg_session_t* s, bgl_msg_send_t* send) {
  bool sent = false;
  const int rc = guarded([&] {
    if (!send) throw std::invalid_argument("bgl_msg_post: no send descriptor");
    // Default-initialised: the members get their defaults, state.header_copy (128 bytes, written
    // only as far as a queued message's header needs) is not zeroed first.
    SendMessage& m = *new (send->opaque) SendMessage;
    m.dest = send->dest;
    m.handler = send->handler;
    m.header = {static_cast<const std::byte*>(send->header), send->header ? send->header_bytes : 0};
    m.data.buffer = {static_cast<const std::byte*>(send->data), send->data ? send->bytes : 0};
    m.data.iov = {send->iov, send->iov ? send->iov_count : 0};
    if (send->protocol != BGL_MSG_AUTO) {
      if (send->protocol < 0 || send->protocol >= kProtocols)
        throw std::invalid_argument("unknown protocol");
      m.protocol = static_cast<Protocol>(send->protocol);
    }
    m.context = send;
    m.done = [](SendMessage& x) {
      if (auto* c = c_of(x); c->done) c->done(c);
    };
    if (send->remote_done)
      m.remote_done = [](SendMessage& x) {
        if (auto* c = c_of(x); c->remote_done) c->remote_done(c);
      };
    s->session->layer().post(m);
    sent = m.state.protocol == Protocol::one_packet && m.state.packets != 0;
  });
  return rc == BGL_MSG_OK && sent ? BGL_MSG_SENT : rc;
}

int bgl_msg_accept(bgl_msg_session_t* s, bgl_msg_recv_handle_t handle,
                   const bgl_msg_recv_target_t* target) {
  return guarded([&] {
    if (!target) throw std::invalid_argument("bgl_msg_accept: no target");
    s->session->layer().accept(RecvHandle{handle.id}, to_cxx(*target));
  });
}

int bgl_msg_advance(bgl_msg_session_t* s) {
  return s->session->layer().advance() ? 1 : 0;
}
void bgl_msg_wait(bgl_msg_session_t* s) {
  s->session->layer().wait();
}
void bgl_msg_poll_yield(bgl_msg_session_t* s) {
  s->session->layer().poll_yield();
}
int bgl_msg_idle(const bgl_msg_session_t* s) {
  return s->session->layer().idle() ? 1 : 0;
}
int bgl_msg_barrier(bgl_msg_session_t* s) {
  return guarded([&] { s->session->barrier(); });
}

int bgl_msg_costart(bgl_msg_session_t* s, bgl_msg_unit_fn unit, void* arg, uint32_t* ticket) {
  return guarded([&] {
    Coprocessor* co = s->session->layer().coprocessor();
    if (!co) throw bgl::ConfigError("costart needs coprocessor mode (bglrun --mode coprocessor)");
    if (!unit || !ticket)
      throw std::invalid_argument("bgl_msg_costart: no unit or no place for the ticket");
    *ticket = co->costart(unit, arg).id;
  });
}

int bgl_msg_cojoin(bgl_msg_session_t* s, uint32_t ticket, int* result) {
  return guarded([&] {
    Coprocessor* co = s->session->layer().coprocessor();
    if (!co) throw bgl::ConfigError("cojoin needs coprocessor mode (bglrun --mode coprocessor)");
    const int r = co->cojoin(Coprocessor::Ticket{ticket});
    if (result) *result = r;
  });
}

}  // extern "C"

int bgl::message_layer::current_exception_status() noexcept {
  try {
    throw;
  } catch (const bgl::ConfigError& e) {
    g_last_error = e.what();
    return BGL_MSG_ERR_CONFIG;
  } catch (const std::invalid_argument& e) {
    g_last_error = e.what();
    return BGL_MSG_ERR_ARG;
  } catch (const std::exception& e) {
    g_last_error = e.what();
    return BGL_MSG_ERR_INTERNAL;
  } catch (...) {
    g_last_error = "unknown exception";
    return BGL_MSG_ERR_INTERNAL;
  }
}

bgl::message_layer::Session& bgl::message_layer::session_of(bgl_msg_session_t* s) {
  return *s->session;
}
