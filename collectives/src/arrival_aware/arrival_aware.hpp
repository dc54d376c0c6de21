#pragma once
// Registration functions of the arrival-aware algorithms (src/arrival_aware/register.cpp calls
// them): schedules that follow when each task reaches the collective.
#include "bgl/collectives/registry.hpp"

namespace bgl::collectives {
void register_clairvoyant(Registry& r);  // arrival-aware (Clairvoyant) reduce
}  // namespace bgl::collectives
