// The job's machine as the device's idle helper attached it (bgl_nm_idle.cpp), for the other
// helpers of libbglml that need the job's shape, mode and mapping.
#pragma once

#include "bgl/packet_layer/machine.hpp"
#include "bgl_nm_idle.h"

namespace bgl::adi3_device {
const packet_layer::Machine& machine_of(const bgl_nm_idle_t& idle);
}  // namespace bgl::adi3_device
