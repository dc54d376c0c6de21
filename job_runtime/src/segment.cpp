#include "bgl/job_runtime/segment.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <string_view>
#include <utility>
#include <vector>

#include "bgl/torus_emu/error.hpp"

namespace bgl::job_runtime {
namespace {

constexpr std::string_view kPrefix = "bglemu.";
constexpr const char* kDirectory = "/dev/shm";

[[noreturn]] void fail(const std::string& what) {
  throw ConfigError(what + ": " + std::strerror(errno));
}

// The length of the segment name "bglemu.<pid>.<n>" that `file` starts with, or 0.
std::size_t segment_name_length(std::string_view file) {
  if (!file.starts_with(kPrefix)) return 0;
  std::size_t i = kPrefix.size();
  for (int part = 0; part < 2; ++part) {
    const std::size_t start = i;
    while (i < file.size() && file[i] >= '0' && file[i] <= '9')
      ++i;
    if (i == start) return 0;
    if (part == 0 && (i == file.size() || file[i++] != '.')) return 0;
  }
  return i;
}

bool creator_alive(const std::string& file) {
  const long pid = std::strtol(file.c_str() + kPrefix.size(), nullptr, 10);
  return pid > 0 && (kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH);
}

std::string mib(std::size_t bytes, bool round_up) {
  return std::to_string((bytes + (round_up ? (1u << 20) - 1 : 0)) >> 20) + " MiB";
}

[[noreturn]] void no_space(std::size_t needed, std::size_t free) {
  throw ConfigError("the job needs a shared-memory segment of " + mib(needed, true) + " (" +
                    std::to_string(needed) + " bytes), but " + kDirectory + " has only " +
                    mib(free, false) + " free; choose a smaller shape or --fifo-packets, or give " +
                    kDirectory + " more space");
}

std::byte* map(int fd, std::size_t bytes, const std::string& name) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) fail("cannot map shared-memory segment " + name);
  return static_cast<std::byte*>(p);
}

}  // namespace

Segment Segment::create(std::size_t bytes, std::span<const Extent> allocate) {
  const std::size_t needed = allocated_bytes(bytes, allocate);
  if (const std::size_t free = free_bytes(); free != 0 && needed > free) no_space(needed, free);
  Segment s;
  std::random_device rd;
  s.name_ = "/" + std::string(kPrefix) + std::to_string(getpid()) + "." + std::to_string(rd());
  // An unnamed file, locked, sized and allocated before it gets its name: a cleaner never sees
  // it unlocked, and a failure leaves nothing behind. Not FD_CLOEXEC: the tasks inherit it.
  s.fd_ = open(kDirectory, O_TMPFILE | O_RDWR, 0600);
  if (s.fd_ < 0) fail("cannot create shared-memory segment in " + std::string(kDirectory));
  if (flock(s.fd_, LOCK_EX | LOCK_NB) != 0) fail("cannot lock shared-memory segment");
  if (ftruncate(s.fd_, static_cast<off_t>(bytes)) != 0)
    fail("cannot size shared-memory segment to " + std::to_string(bytes) + " bytes");
  const Extent whole{0, bytes};
  for (const Extent& e : allocate.empty() ? std::span<const Extent>(&whole, 1) : allocate) {
    const int err =
        posix_fallocate(s.fd_, static_cast<off_t>(e.offset), static_cast<off_t>(e.bytes));
    if (err == ENOSPC) no_space(needed, free_bytes());
    if (err != 0) {
      errno = err;
      fail("cannot allocate the shared-memory segment's " + std::to_string(needed) + " bytes");
    }
  }
  const std::string path = std::string(kDirectory) + s.name_;
  const std::string self = "/proc/self/fd/" + std::to_string(s.fd_);
  if (linkat(AT_FDCWD, self.c_str(), AT_FDCWD, path.c_str(), AT_SYMLINK_FOLLOW) != 0 &&
      linkat(s.fd_, "", AT_FDCWD, path.c_str(), AT_EMPTY_PATH) != 0)
    fail("cannot name shared-memory segment " + path);
  s.owner_ = true;
  s.size_ = bytes;
  s.base_ = map(s.fd_, bytes, s.name_);
  return s;
}

std::size_t Segment::allocated_bytes(std::size_t bytes, std::span<const Extent> allocate) {
  if (allocate.empty()) return bytes;
  std::size_t sum = 0;
  for (const Extent& e : allocate)
    sum += e.bytes;
  return sum;
}

std::size_t Segment::free_bytes() {
  struct statvfs st {};
  if (statvfs(kDirectory, &st) != 0) return 0;
  return static_cast<std::size_t>(st.f_bavail) * st.f_frsize;
}

Segment Segment::attach(int fd, const std::string& name) {
  Segment s;
  s.name_ = name;
  // An inherited descriptor (bglrun's BGL_SEGMENT_FD) stays open for the process: the segment
  // keeps a duplicate of its own, so that a later attach (a second session) finds it again.
  s.fd_ = fd >= 0 ? fcntl(fd, F_DUPFD_CLOEXEC, 0) : shm_open(name.c_str(), O_RDWR, 0);
  if (s.fd_ < 0) fail("cannot open shared-memory segment " + name);
  struct stat st {};
  if (fstat(s.fd_, &st) != 0) fail("cannot stat shared-memory segment " + name);
  s.size_ = static_cast<std::size_t>(st.st_size);
  if (s.size_ == 0) throw ConfigError("shared-memory segment " + name + " is empty");
  s.base_ = map(s.fd_, s.size_, name);
  return s;
}

int Segment::remove_stale() {
  std::vector<std::string> segments, companions;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(kDirectory, ec)) {
    std::string file = entry.path().filename().string();
    const std::size_t base = segment_name_length(file);
    if (base == file.size())
      segments.push_back(std::move(file));
    else if (base != 0 && file[base] == '.')
      companions.push_back(std::move(file));
  }
  int removed = 0;
  for (const auto& file : segments) {
    // Not followed: a symbolic link planted under that name is nobody's segment to judge.
    const std::string path = std::string(kDirectory) + "/" + file;
    const int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) continue;  // someone else's (0600), or gone meanwhile
    // Whoever holds the lock (a live launcher, or its tasks through the inherited descriptor)
    // keeps the segment. Removed while holding the lock, so never a new job's under that name.
    // Segments of older bglemu versions hold no lock: for them a creator pid that is alive here
    // still counts (a pid of another namespace may look dead; the lock is what decides).
    if (flock(fd, LOCK_EX | LOCK_NB) == 0 && !creator_alive(file) &&
        shm_unlink(("/" + file).c_str()) == 0)
      ++removed;
    close(fd);
  }
  // Files named after a segment (a benchmark's scratch memory) live and die with it.
  for (const auto& file : companions) {
    const std::string segment =
        std::string(kDirectory) + "/" + file.substr(0, segment_name_length(file));
    if (access(segment.c_str(), F_OK) != 0 && errno == ENOENT &&
        shm_unlink(("/" + file).c_str()) == 0)
      ++removed;
  }
  return removed;
}

Segment::Segment(Segment&& o) noexcept
    : base_(std::exchange(o.base_, nullptr)),
      size_(std::exchange(o.size_, 0)),
      fd_(std::exchange(o.fd_, -1)),
      name_(std::move(o.name_)),
      owner_(std::exchange(o.owner_, false)) {}

Segment& Segment::operator=(Segment&& o) noexcept {
  if (this != &o) {
    release();
    base_ = std::exchange(o.base_, nullptr);
    size_ = std::exchange(o.size_, 0);
    fd_ = std::exchange(o.fd_, -1);
    name_ = std::move(o.name_);
    owner_ = std::exchange(o.owner_, false);
  }
  return *this;
}

Segment::~Segment() {
  release();
}

void Segment::unlink() {
  if (owner_) shm_unlink(name_.c_str());
  owner_ = false;
}

void Segment::release() {
  if (base_) munmap(base_, size_);
  if (fd_ >= 0) close(fd_);
  unlink();
  base_ = nullptr;
  fd_ = -1;
}

}  // namespace bgl::job_runtime
