// The MPI calls of a task's timeline (see bgl_nm_trace.h): one complete span per outermost MPI
// call, on the packet layer's trace of the task (job_runtime::Trace), in its host or virtual time.
#include "bgl_nm_trace.h"

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>

#include "bgl/message_layer/c_session.hpp"
#include "bgl/job_runtime/trace.hpp"

namespace {

using bgl::job_runtime::Trace;
using bgl::job_runtime::TraceCategory;

// The calls whose arguments the netmod notes (bgl_nm_trace_kind_t), or none.
constexpr int kNoKind = -1;

// MPICH's bindings are "internal_Send" (for MPI_Send and PMPI_Send, C and Fortran alike); a few
// hand-written ones carry their own name (MPIX_Grequest_start, MPI_Type_create_f90_real).
std::string mpi_name(std::string_view function) {
  constexpr std::string_view internal = "internal_";
  if (function.starts_with(internal)) return "MPI_" + std::string(function.substr(internal.size()));
  return std::string(function);
}

int kind_of(std::string_view name) {
  if (name.ends_with("_c")) name.remove_suffix(2);  // the MPI 4 large-count variants
  static constexpr std::array<std::string_view, 10> sends = {
      "MPI_Send",   "MPI_Isend", "MPI_Ssend",  "MPI_Issend",   "MPI_Bsend",
      "MPI_Ibsend", "MPI_Rsend", "MPI_Irsend", "MPI_Sendrecv", "MPI_Sendrecv_replace"};
  for (const auto s : sends)
    if (name == s) return BGL_NM_TRACE_SEND;
  if (name == "MPI_Barrier") return BGL_NM_TRACE_BARRIER;
  if (name == "MPI_Bcast") return BGL_NM_TRACE_BCAST;
  if (name == "MPI_Reduce") return BGL_NM_TRACE_REDUCE;
  if (name == "MPI_Allreduce") return BGL_NM_TRACE_ALLREDUCE;
  if (name == "MPI_Allgather") return BGL_NM_TRACE_ALLGATHER;
  if (name == "MPI_Alltoall") return BGL_NM_TRACE_ALLTOALL;
  return kNoKind;
}

class CallTimeline {
 public:
  explicit CallTimeline(Trace& trace)
      : trace_(trace), owner_(std::this_thread::get_id()), start_(trace.now()) {}

  void enter(const char* function) {
    if (!mine()) return;
    if (depth_++ > 0) return;  // MPICH's own MPI calls inside a user's call
    start_ = trace_.now();
    const auto& f = lookup(function);
    kind_ = f.kind;
    name_ = f.name;
    args_ = {};
    noted_ = false;
    open_ = function;
  }

  void exit(const char* function) {
    if (!mine() || depth_ == 0) return;
    if (--depth_ > 0) return;
    // MPI_Init's exit is the only one whose entry the timeline did not see.
    trace_.span(TraceCategory::mpi, function == open_ ? name_ : lookup(function).name, start_,
                args_);
    open_ = nullptr;
  }

  // The call still open when the runtime ends (MPI_Finalize).
  void close() {
    if (!mine() || depth_ == 0) return;
    if (open_ != nullptr) trace_.span(TraceCategory::mpi, name_, start_, args_);
    depth_ = 0;
  }

  void note(int kind, std::int64_t peer, std::uint64_t bytes, std::uint32_t comm_size) {
    if (!mine() || depth_ == 0 || noted_ || kind != kind_) return;
    args_.peer = peer;
    args_.bytes = bytes;
    args_.comm_size = comm_size;
    noted_ = true;
  }

 private:
  struct Function {
    Trace::Name name;
    int kind;
  };
  bool mine() const { return std::this_thread::get_id() == owner_; }
  // `function` is a static string of MPICH's: its address identifies it.
  const Function& lookup(const char* function) {
    if (const auto it = functions_.find(function); it != functions_.end()) return it->second;
    const auto name = mpi_name(function);
    return functions_.emplace(function, Function{trace_.intern(name), kind_of(name)}).first->second;
  }

  Trace& trace_;
  std::thread::id owner_;
  std::unordered_map<const char*, Function> functions_;
  // Opened inside MPI_Init (or MPI_Init_thread), which is named when it returns.
  int depth_ = 1;
  std::uint64_t start_;
  const char* open_ = nullptr;  // the outermost open call's function, null inside MPI_Init
  Trace::Name name_ = 0;
  int kind_ = kNoKind;
  Trace::Args args_;
  bool noted_ = false;
};

std::unique_ptr<CallTimeline> g_timeline;

void hook(const char* function, int enter) {
  try {
    if (enter)
      g_timeline->enter(function);
    else
      g_timeline->exit(function);
  } catch (...) {
    // Out of memory for a name: the call is left out, the program goes on.
  }
}

}  // namespace

extern "C" {

bgl_nm_call_hook_t bgl_nm_trace_open(bgl_msg_session_t* session) {
  try {
    Trace* trace = bgl::message_layer::session_of(session).runtime().endpoint().trace();
    if (trace == nullptr) return nullptr;
    g_timeline = std::make_unique<CallTimeline>(*trace);
    return &hook;
  } catch (...) {
    return nullptr;
  }
}

void bgl_nm_trace_close(void) {
  if (!g_timeline) return;
  try {
    g_timeline->close();
  } catch (...) {
  }
  g_timeline.reset();
}

void bgl_nm_trace_note(bgl_nm_trace_kind_t kind, int64_t peer, uint64_t bytes, uint32_t comm_size) {
  if (g_timeline) g_timeline->note(static_cast<int>(kind), peer, bytes, comm_size);
}

}  // extern "C"
