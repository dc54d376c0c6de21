#include "coll_selection.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "bgl/torus_emu/error.hpp"

namespace bgl::bglrun {

namespace {
constexpr const char* kVariable = "MPIR_CVAR_CH4_COLL_SELECTION_TUNING_JSON_FILE";
}  // namespace

const char* FlatCollectiveSelection::table() {
  return R"({
"collective=bcast":{"comm_type=intra":{"comm_hierarchy=any":{"composition=MPIDI_Bcast_intra_composition_gamma":{}}}},
"collective=allreduce":{"comm_type=intra":{"comm_size=any":{"comm_hierarchy=any":{"composition=MPIDI_Allreduce_intra_composition_beta":{}}}}},
"collective=reduce":{"comm_type=intra":{"comm_hierarchy=any":{"composition=MPIDI_Reduce_intra_composition_gamma":{}}}},
"collective=barrier":{"comm_type=intra":{"comm_hierarchy=any":{"composition=MPIDI_Barrier_intra_composition_beta":{}}}},
"collective=gather":{"comm_type=intra":{"composition=MPIDI_Gather_intra_composition_alpha":{}}},
"collective=gatherv":{"comm_type=intra":{"composition=MPIDI_Gatherv_intra_composition_alpha":{}}},
"collective=scatter":{"comm_type=intra":{"composition=MPIDI_Scatter_intra_composition_alpha":{}}},
"collective=scatterv":{"comm_type=intra":{"composition=MPIDI_Scatterv_intra_composition_alpha":{}}},
"collective=alltoall":{"comm_type=intra":{"composition=MPIDI_Alltoall_intra_composition_alpha":{}}},
"collective=alltoallv":{"comm_type=intra":{"composition=MPIDI_Alltoallv_intra_composition_alpha":{}}},
"collective=alltoallw":{"comm_type=intra":{"composition=MPIDI_Alltoallw_intra_composition_alpha":{}}},
"collective=allgather":{"comm_type=intra":{"composition=MPIDI_Allgather_intra_composition_alpha":{}}},
"collective=allgatherv":{"comm_type=intra":{"composition=MPIDI_Allgatherv_intra_composition_alpha":{}}},
"collective=reduce_scatter":{"comm_type=intra":{"composition=MPIDI_Reduce_scatter_intra_composition_alpha":{}}},
"collective=reduce_scatter_block":{"comm_type=intra":{"composition=MPIDI_Reduce_scatter_block_intra_composition_alpha":{}}},
"collective=scan":{"composition=MPIDI_Scan_intra_composition_beta":{}},
"collective=exscan":{"composition=MPIDI_Exscan_intra_composition_alpha":{}}
}
)";
}

FlatCollectiveSelection::FlatCollectiveSelection() {
  if (const char* set = std::getenv(kVariable); set && *set) return;
  const char* tmp = std::getenv("TMPDIR");
  std::string name = std::string(tmp && *tmp ? tmp : "/tmp") + "/bglrun-coll-selection.XXXXXX";
  const int fd = ::mkstemp(name.data());
  if (fd < 0)
    throw ConfigError("cannot write MPICH's collective selection table to " + name + ": " +
                      std::strerror(errno));
  path_ = name;
  const std::string_view text = table();
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  const bool closed = ::close(fd) == 0;
  if (done != text.size() || !closed) {
    const int err = errno;
    ::unlink(name.c_str());
    path_.clear();
    errno = err;
    throw ConfigError("cannot write MPICH's collective selection table to " + name + ": " +
                      std::strerror(errno));
  }
  ::setenv(kVariable, path_.c_str(), 1);  // the ranks inherit it
}

FlatCollectiveSelection::~FlatCollectiveSelection() {
  if (!path_.empty()) ::unlink(path_.c_str());
}

}  // namespace bgl::bglrun
