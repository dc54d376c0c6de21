#include "host_topology.hpp"

#include <hwloc.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <memory>
#include <string>

namespace bgl::bglrun {

namespace {

bool set(const char* variable) {
  const char* value = std::getenv(variable);
  return value && *value;
}

// The topology as hwloc XML, without I/O devices (hwloc's default filter); empty if hwloc cannot
// load or export it.
std::string topology_xml() {
  hwloc_topology_t raw = nullptr;
  if (hwloc_topology_init(&raw) != 0) return {};
  const std::unique_ptr<hwloc_topology, decltype(&hwloc_topology_destroy)> topology(
      raw, &hwloc_topology_destroy);
  if (hwloc_topology_load(topology.get()) != 0) return {};
  char* buffer = nullptr;
  int length = 0;
  if (hwloc_topology_export_xmlbuffer(topology.get(), &buffer, &length, 0) != 0) return {};
  // length counts the terminating NUL.
  std::string xml(buffer, length > 0 ? static_cast<std::size_t>(length - 1) : 0);
  hwloc_free_xmlbuffer(topology.get(), buffer);
  return xml;
}

}  // namespace

SharedHostTopology::SharedHostTopology() {
  setenv("HWLOC_PLUGINS_BLACKLIST", "hwloc_gl,hwloc_opencl,hwloc_pci,hwloc_xml_libxml", 0);
  if (set("HWLOC_XMLFILE") || set("HWLOC_COMPONENTS")) return;
  const std::string xml = topology_xml();
  if (xml.empty()) {
    spdlog::debug("hwloc could not export this host's topology; each rank discovers it");
    setenv("HWLOC_COMPONENTS", "-linuxio,-pci", 1);
    return;
  }
  file_.emplace("topology", xml, "the host's hwloc topology");
  setenv("HWLOC_XMLFILE", file_->path().c_str(), 1);
  setenv("HWLOC_THISSYSTEM", "1", 0);
}

}  // namespace bgl::bglrun
