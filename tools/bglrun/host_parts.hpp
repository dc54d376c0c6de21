#pragma once
// A job over several hosts has one statistics file, one report and one trace: every host but the
// first leaves its part (its statistics document and its tasks' call-site and trace files) in a
// directory next to the result, and the first host's bglrun merges the parts into what one host
// would have written. The hosts must share the result's directory (emulated hosts on one machine
// do; on a cluster, a shared file system), as they share the program's path.
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace bgl::bglrun {

class HostParts {
 public:
  // `near`: the statistics, report or trace path (its directory holds the parts); `job_id`: the
  // same on every host and different for every job, so that a part left by another job is never
  // taken for this one's.
  HostParts(const std::filesystem::path& near, std::uint64_t job_id, int hosts, int this_host);

  // What one host hands over. `statistics` is null when no statistics or report was asked for;
  // the directories are empty when no call sites or trace were recorded.
  struct Files {
    const nlohmann::json* statistics = nullptr;
    std::filesystem::path sites_dir;
    std::filesystem::path trace_dir;
  };

  // Every host but the first: writes its part and moves it into place at once (readers never see
  // half a part). False, with a message on stderr, when it cannot.
  bool publish(const Files& files) const;

  struct Collected {
    std::vector<std::pair<int, nlohmann::json>> statistics;  // other hosts' documents by host
    std::vector<int> missing;  // hosts whose part did not come in time
  };
  // The first host: waits up to `wait` for every other host's part, copies its tasks' files into
  // `into`'s directories, reads its statistics, and removes the part. A part that cannot be read
  // counts as missing, with a message on stderr naming it.
  Collected collect(std::chrono::milliseconds wait, const Files& into) const;

  // The directory of host `h`'s part.
  std::filesystem::path part(int h) const;

 private:
  std::filesystem::path dir_;
  std::string stem_;
  int hosts_;
  int this_host_;
};

}  // namespace bgl::bglrun
