#pragma once
// For C++ components layered on the message layer that are called through a C ABI themselves
// (the MPI device's collective hooks): the Session behind a C session handle.
#include "bgl/message_layer/bgl_msg.h"
#include "bgl/message_layer/session.hpp"

namespace bgl::message_layer {

Session& session_of(bgl_msg_session_t* session);

// Inside a catch handler: the bgl_msg_status of the exception being handled (ConfigError,
// std::invalid_argument, anything else), its text kept for bgl_msg_last_error(). Such components
// report their errors the way the message layer's C ABI does.
int current_exception_status() noexcept;

}  // namespace bgl::message_layer
