#pragma once
// MPI programs: the host's hardware topology, discovered once for all ranks.
#include <optional>

#include "temporary_file.hpp"

namespace bgl::bglrun {

// MPICH's MPI_Init loads the host's topology with hwloc. Discovered by each rank, that is about a
// hundred sysfs files opened and read per rank (caches, cores, NUMA nodes), and the devices'
// discovery besides (PCI configuration space, GPU and OpenCL plugins): over half of each rank's
// start-up CPU time at 1,024 ranks, telling the emulated machine nothing. bglrun loads the topology
// once, without I/O devices, writes it as hwloc XML and points the ranks at it (HWLOC_XMLFILE,
// with HWLOC_THISSYSTEM so that binding still acts on this host). A user's own hwloc settings
// (HWLOC_XMLFILE, HWLOC_COMPONENTS, HWLOC_PLUGINS_BLACKLIST, HWLOC_THISSYSTEM) win; if the
// topology cannot be loaded here, the ranks discover it themselves without the I/O devices.
class SharedHostTopology {
 public:
  SharedHostTopology();

 private:
  std::optional<TemporaryFile> file_;  // removed with the topology
};

}  // namespace bgl::bglrun
