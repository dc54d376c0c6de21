#include "temporary_file.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include "bgl/torus_emu/error.hpp"

namespace bgl::bglrun {

namespace {

bool write_all(int fd, std::string_view text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace

TemporaryFile::TemporaryFile(std::string_view stem, std::string_view text, std::string_view what) {
  const char* tmp = std::getenv("TMPDIR");
  std::string name =
      std::string(tmp && *tmp ? tmp : "/tmp") + "/bglrun-" + std::string(stem) + ".XXXXXX";
  const auto fail = [&] {
    return ConfigError("cannot write " + std::string(what) + " to " + name + ": " +
                       std::strerror(errno));
  };
  const int fd = ::mkstemp(name.data());
  if (fd < 0) throw fail();
  const bool written = write_all(fd, text);
  const int write_errno = errno;
  if (::close(fd) != 0 || !written) {
    if (!written) errno = write_errno;
    const ConfigError error = fail();
    ::unlink(name.c_str());
    throw error;
  }
  path_ = name;
}

TemporaryFile::~TemporaryFile() {
  ::unlink(path_.c_str());
}

}  // namespace bgl::bglrun
