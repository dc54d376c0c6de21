#pragma once
// The job's shared-memory segment: POSIX shm, mode 0600, a unique name that encodes the creator's
// pid (so that stale segments of a killed launcher can be recognised and removed).
#include <cstddef>
#include <span>
#include <string>

namespace bgl::pkt {

class Segment {
 public:
  // Creates and maps a new segment of `bytes` (zero-filled, pages allocated lazily). The file
  // descriptor stays open and is inherited by children (no FD_CLOEXEC).
  static Segment create(std::size_t bytes);
  // Maps an inherited descriptor (which stays open: the segment uses a duplicate), or opens by
  // name when fd < 0.
  static Segment attach(int fd, const std::string& name);

  // Removes segments named by dead creators ("/dev/shm/bglemu.<pid>.*"); returns how many.
  static int remove_stale();

  Segment() = default;
  Segment(Segment&& other) noexcept;
  Segment& operator=(Segment&& other) noexcept;
  Segment(const Segment&) = delete;
  Segment& operator=(const Segment&) = delete;
  ~Segment();

  // Removes the name (mappings stay valid). Idempotent.
  void unlink();

  std::span<std::byte> bytes() const { return {base_, size_}; }
  std::byte* base() const { return base_; }
  const std::string& name() const { return name_; }
  int fd() const { return fd_; }

 private:
  void release();
  std::byte* base_ = nullptr;
  std::size_t size_ = 0;
  int fd_ = -1;
  std::string name_;
  bool owner_ = false;
};

}  // namespace bgl::pkt
