#pragma once
// For C++ components layered on the message layer that are called through a C ABI themselves
// (the collectives' bgl_coll_* entry points): the Session behind a C session handle.
#include "bgl/msg/bgl_msg.h"
#include "bgl/msg/session.hpp"

namespace bgl::msg {

Session& session_of(bgl_msg_session_t* session);

}  // namespace bgl::msg
