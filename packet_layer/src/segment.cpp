#include "bgl/pkt/segment.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <random>
#include <utility>

#include "bgl/torus/error.hpp"

namespace bgl::pkt {
namespace {

constexpr std::string_view kPrefix = "bglemu.";

[[noreturn]] void fail(const std::string& what) {
  throw ConfigError(what + ": " + std::strerror(errno));
}

std::byte* map(int fd, std::size_t bytes, const std::string& name) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) fail("cannot map shared-memory segment " + name);
  return static_cast<std::byte*>(p);
}

}  // namespace

Segment Segment::create(std::size_t bytes) {
  Segment s;
  std::random_device rd;
  s.name_ = "/" + std::string(kPrefix) + std::to_string(getpid()) + "." + std::to_string(rd());
  s.fd_ = shm_open(s.name_.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (s.fd_ < 0) fail("cannot create shared-memory segment " + s.name_);
  s.owner_ = true;
  // shm_open sets FD_CLOEXEC; the tasks inherit this descriptor across exec.
  if (fcntl(s.fd_, F_SETFD, 0) != 0) fail("cannot share segment descriptor " + s.name_);
  if (ftruncate(s.fd_, static_cast<off_t>(bytes)) != 0)
    fail("cannot size shared-memory segment " + s.name_ + " to " + std::to_string(bytes) +
         " bytes");
  s.size_ = bytes;
  s.base_ = map(s.fd_, bytes, s.name_);
  return s;
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
  int removed = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/dev/shm", ec)) {
    const std::string file = entry.path().filename().string();
    if (!file.starts_with(kPrefix)) continue;
    const auto pid = std::strtol(file.c_str() + kPrefix.size(), nullptr, 10);
    if (pid <= 0 || kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    if (shm_unlink(("/" + file).c_str()) == 0) ++removed;
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

}  // namespace bgl::pkt
