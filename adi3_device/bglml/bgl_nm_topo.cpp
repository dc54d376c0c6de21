// The device's view of the partition and the torus-aware topology mapping (bgl_nm_topo.h).
#include "bgl_nm_topo.h"

#include <cstdio>
#include <exception>
#include <span>
#include <string>
#include <vector>

#include "bgl/message_layer/bgl_msg.h"
#include "bgl/message_layer/c_session.hpp"
#include "bgl/packet_layer/machine.hpp"
#include "bgl/torus_emu/error.hpp"
#include "topo_map.hpp"

namespace {

thread_local std::string g_error;

const bgl::packet_layer::Machine& machine_of(bgl_msg_session_t* session) {
  return bgl::message_layer::session_of(session).runtime().machine();
}

std::vector<bgl::adi3_device::topo::Place> places_of(const bgl::packet_layer::Machine& m, int n,
                                                     const uint32_t tasks[]) {
  const auto& mapping = m.mapping();
  std::vector<bgl::adi3_device::topo::Place> places;
  places.reserve(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    const auto task = tasks[i];
    if (task >= static_cast<uint32_t>(mapping.size()))
      throw bgl::ConfigError("task " + std::to_string(task) + " outside the job's " +
                             std::to_string(mapping.size()) + " tasks");
    places.push_back({mapping.coord(task), mapping.location(task).t});
  }
  return places;
}

template <typename F>
int guarded(F&& f) {
  try {
    return f();
  } catch (const bgl::ConfigError& e) {
    g_error = e.what();
    return BGL_MSG_ERR_ARG;
  } catch (const std::exception& e) {
    g_error = e.what();
    return BGL_MSG_ERR_INTERNAL;
  }
}

}  // namespace

extern "C" {

const char* bgl_nm_topo_error(void) {
  return g_error.c_str();
}

int bgl_nm_topo_partition(bgl_msg_session_t* session, bgl_nm_partition_t* out) {
  const auto& m = machine_of(session);
  const auto& s = m.shape();
  constexpr bgl::torus_emu::Dim dims[] = {bgl::torus_emu::Dim::x, bgl::torus_emu::Dim::y,
                                          bgl::torus_emu::Dim::z};
  for (int d = 0; d < 3; ++d) {
    out->extent[d] = s.extent(dims[d]);
    out->torus[d] = s.is_torus(dims[d]) ? 1 : 0;
  }
  out->tasks_per_node = m.mapping().tasks_per_node();
  out->ntasks = m.mapping().size();
  out->mode = static_cast<int>(m.config().mode);
  return BGL_MSG_OK;
}

int bgl_nm_topo_location(bgl_msg_session_t* session, uint32_t task, int loc[4]) {
  const auto& mapping = machine_of(session).mapping();
  if (task >= static_cast<uint32_t>(mapping.size())) {
    g_error = "rank " + std::to_string(task) + " outside the job's " +
              std::to_string(mapping.size()) + " tasks";
    return BGL_MSG_ERR_ARG;
  }
  const auto c = mapping.coord(task);
  loc[0] = c.x;
  loc[1] = c.y;
  loc[2] = c.z;
  loc[3] = mapping.location(task).t;
  return BGL_MSG_OK;
}

int bgl_nm_topo_task_at(bgl_msg_session_t* session, const int loc[4], int* task) {
  const auto& mapping = machine_of(session).mapping();
  const auto& s = mapping.shape();
  const bgl::torus_emu::Coord c{loc[0], loc[1], loc[2]};
  if (!s.contains(c) || loc[3] < 0 || loc[3] >= mapping.tasks_per_node()) {
    g_error = "coordinates <" + std::to_string(loc[0]) + "," + std::to_string(loc[1]) + "," +
              std::to_string(loc[2]) + "," + std::to_string(loc[3]) + "> outside the " +
              s.to_string() + " partition with " + std::to_string(mapping.tasks_per_node()) +
              " task(s) per node";
    return BGL_MSG_ERR_ARG;
  }
  const auto r = mapping.rank_at(s.node_id(c), loc[3]);
  *task = r ? static_cast<int>(*r) : -1;
  return BGL_MSG_OK;
}

int bgl_nm_topo_cart_map(bgl_msg_session_t* session, int n, const uint32_t tasks[], int ndims,
                         const int dims[], const int periods[], int rank_of_pos[]) {
  return guarded([&] {
    const auto& m = machine_of(session);
    const auto places = places_of(m, n, tasks);
    const auto a = bgl::adi3_device::topo::cart_map(
        m.shape(), places, std::span(dims, static_cast<std::size_t>(ndims)),
        std::span(periods, static_cast<std::size_t>(ndims)));
    std::copy(a.begin(), a.end(), rank_of_pos);
    return BGL_MSG_OK;
  });
}

int bgl_nm_topo_graph_map(bgl_msg_session_t* session, int n, const uint32_t tasks[], int nnodes,
                          const int index[], const int edges[], int rank_of_pos[]) {
  return guarded([&] {
    const auto& m = machine_of(session);
    const auto places = places_of(m, n, tasks);
    const auto nedges = nnodes > 0 ? index[nnodes - 1] : 0;
    const auto a = bgl::adi3_device::topo::graph_map(
        m.shape(), places, std::span(index, static_cast<std::size_t>(nnodes)),
        std::span(edges, static_cast<std::size_t>(nedges)));
    std::copy(a.begin(), a.end(), rank_of_pos);
    return BGL_MSG_OK;
  });
}

int bgl_nm_topo_dims_create(bgl_msg_session_t* session, int n, const uint32_t tasks[], int ndims,
                            int dims[]) {
  return guarded([&] {
    const auto& m = machine_of(session);
    const auto places = places_of(m, n, tasks);
    const auto filled = bgl::adi3_device::topo::torus_dims(
        m.shape(), places, std::span<const int>(dims, static_cast<std::size_t>(ndims)));
    if (!filled) return 0;
    std::copy(filled->begin(), filled->end(), dims);
    return 1;
  });
}

int bgl_nm_processor_name(bgl_msg_session_t* session, char* name, size_t bytes) {
  const auto& m = machine_of(session);
  const auto rank = bgl::message_layer::session_of(session).rank();
  const auto c = m.mapping().coord(rank);
  const auto& s = m.shape();
  const int n = std::snprintf(name, bytes, "BGL <%d,%d,%d,%d> in %dx%dx%d %s mode", c.x, c.y, c.z,
                              m.mapping().location(rank).t, s.extent(bgl::torus_emu::Dim::x),
                              s.extent(bgl::torus_emu::Dim::y), s.extent(bgl::torus_emu::Dim::z),
                              std::string(bgl::job_runtime::to_string(m.config().mode)).c_str());
  if (n < 0 || static_cast<std::size_t>(n) >= bytes) {
    g_error = "the processor name does not fit in " + std::to_string(bytes) + " bytes";
    return BGL_MSG_ERR_ARG;
  }
  return BGL_MSG_OK;
}

}  // extern "C"
