#pragma once
// A file bglrun writes for its ranks to read while the job runs, removed when the job ends.
#include <filesystem>
#include <string_view>

namespace bgl::bglrun {

class TemporaryFile {
 public:
  // Writes `text` to a new file $TMPDIR/bglrun-<stem>.XXXXXX (or under /tmp). Throws ConfigError
  // naming `what` and the file when it cannot be written.
  TemporaryFile(std::string_view stem, std::string_view text, std::string_view what);
  TemporaryFile(const TemporaryFile&) = delete;
  TemporaryFile& operator=(const TemporaryFile&) = delete;
  ~TemporaryFile();  // removes the file

  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace bgl::bglrun
