// Start-up and shutdown of a job, per layer: each task prints when its main() began, when its
// runtime (packet layer) or session (message layer) was up and a first barrier passed, and when it
// began shutting down (after a last barrier); bench/startup.sh subtracts the launcher's start and
// end. Times are CLOCK_REALTIME in ns, comparable with `date +%s%N` in the script.
//   bglrun -np N build/bin/startup packet|message
#include <time.h>

#include <cstdint>
#include <cstdio>
#include <exception>
#include <string_view>

#include "bgl/message_layer/session.hpp"
#include "bgl/packet_layer/runtime.hpp"

namespace {

std::uint64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

}  // namespace

int main(int argc, char** argv) {
  const std::uint64_t entered = now_ns();
  const std::string_view layer = argc > 1 ? argv[1] : "packet";
  try {
    if (layer == "packet") {
      auto rt = bgl::packet_layer::Runtime::from_environment();
      rt.barrier();
      const std::uint64_t ready = now_ns();
      rt.barrier();
      std::printf("startup %u %llu %llu %llu\n", rt.rank(),
                  static_cast<unsigned long long>(entered), static_cast<unsigned long long>(ready),
                  static_cast<unsigned long long>(now_ns()));
    } else if (layer == "message") {
      auto s = bgl::message_layer::Session::from_launcher();
      s->barrier();
      const std::uint64_t ready = now_ns();
      s->barrier();
      std::printf("startup %u %llu %llu %llu\n", s->rank(),
                  static_cast<unsigned long long>(entered), static_cast<unsigned long long>(ready),
                  static_cast<unsigned long long>(now_ns()));
      s->finalize();
    } else {
      std::fprintf(stderr, "usage: startup packet|message\n");
      return 2;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "startup: %s\n", e.what());
    return 1;
  }
  return 0;
}
