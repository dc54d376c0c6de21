#include "coll_selection.hpp"

#include <cstdlib>

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
  file_.emplace("coll-selection", table(), "MPICH's collective selection table");
  ::setenv(kVariable, file_->path().c_str(), 1);  // the ranks inherit it
}

}  // namespace bgl::bglrun
