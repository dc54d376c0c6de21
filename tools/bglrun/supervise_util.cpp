#include "supervise_util.hpp"

#include <string.h>

namespace bgl::bglrun {

std::string signal_name(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  const char* text = strsignal(sig);
  return std::string("signal ") + std::to_string(sig) + " (SIG" + (abbrev ? abbrev : "?") + ": " +
         (text ? text : "?") + ")";
}

std::chrono::steady_clock::duration seconds(double s) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(s));
}

}  // namespace bgl::bglrun
