#include "bgl/torus_emu/input_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <system_error>

#include "bgl/torus_emu/error.hpp"
#include "bgl/torus_emu/user_text.hpp"

namespace bgl {
namespace {

// Paths are echoed longer than other user text: the directory part is what tells files apart.
constexpr std::size_t kPathEchoLimit = 256;

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not an ordinary file";
}

std::string size_text(std::size_t bytes) {
  std::string text = std::to_string(bytes) + " bytes";
  if (bytes >= (std::size_t{1} << 20) && bytes % (std::size_t{1} << 20) == 0)
    text += " (" + std::to_string(bytes >> 20) + " MiB)";
  return text;
}

}  // namespace

std::string read_input_file(const std::filesystem::path& path, std::string_view what,
                            std::size_t limit) {
  const auto fail = [&](const std::string& problem) {
    return ConfigError("cannot read " + std::string(what) + " " +
                       printable(path.string(), kPathEchoLimit) + ": " + problem);
  };
  const auto fail_errno = [&](int err) { return fail(std::generic_category().message(err)); };
  const auto check_kind = [&](const struct stat& st) {
    if (!S_ISREG(st.st_mode))
      throw fail(std::string("it is ") + kind_of(st.st_mode) + ", not a regular file");
    if (static_cast<std::uintmax_t>(st.st_size) > limit)
      throw fail("it is " + std::to_string(st.st_size) + " bytes, more than the limit of " +
                 size_text(limit));
  };

  // Checked before opening: opening a device can have effects of its own, and opening a FIFO
  // waits for a writer.
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw fail_errno(errno);
  check_kind(st);
  // O_NONBLOCK: should the path be swapped for a FIFO after the check, open() still returns.
  const Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
  if (fd.get() < 0) throw fail_errno(errno);
  if (::fstat(fd.get(), &st) != 0) throw fail_errno(errno);
  check_kind(st);

  // The size may change while reading (or be 0, as for files in /proc): read at most one byte
  // more than the limit, to tell "at the limit" from "over it".
  std::string text(std::min(static_cast<std::size_t>(st.st_size), limit) + 1, '\0');
  std::size_t used = 0;
  for (;;) {
    if (used == text.size()) {
      if (text.size() > limit) throw fail("it grew past the limit of " + size_text(limit));
      text.resize(std::min(text.size() * 2, limit + 1));
    }
    const ssize_t n = ::read(fd.get(), text.data() + used, text.size() - used);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw fail_errno(errno);
    }
    if (n == 0) break;
    used += static_cast<std::size_t>(n);
  }
  text.resize(used);
  return text;
}

}  // namespace bgl
