#pragma once
// The job's shared-memory segment: POSIX shm (/dev/shm), mode 0600, a unique name. The creator
// holds an exclusive flock on it for the job's life (its tasks share that lock through the
// inherited descriptor): a segment whose lock can be taken belongs to nobody and may be removed.
// The lock, unlike the pid in the name, means the same in every PID namespace sharing /dev/shm.
#include <cstddef>
#include <span>
#include <string>
#include <vector>

namespace bgl::job_runtime {

class Segment {
 public:
  // A byte range of the segment that is allocated up front.
  struct Extent {
    std::size_t offset = 0;
    std::size_t bytes = 0;
  };
  // Creates, locks and maps a new segment of `bytes` (zero-filled). The pages of `allocate` (all
  // of the segment when empty) are allocated now, so that a full /dev/shm is a ConfigError naming
  // the size needed and free, not a SIGBUS later; the rest stays sparse. The name appears only
  // once the segment is locked and sized. The descriptor stays open and is inherited by children
  // (no FD_CLOEXEC).
  static Segment create(std::size_t bytes, std::span<const Extent> allocate = {});
  // Maps an inherited descriptor (which stays open: the segment uses a duplicate), or opens by
  // name when fd < 0.
  static Segment attach(int fd, const std::string& name);

  // Removes bglemu segments ("/dev/shm/bglemu.<pid>.<n>", and files named after them) that no
  // live job holds (their lock can be taken, and no process has the pid in the name here: older
  // versions held no lock); returns how many.
  static int remove_stale();
  // Bytes free for new segments in /dev/shm (0 when it cannot be told).
  static std::size_t free_bytes();
  // The bytes of `allocate` (all `bytes` when empty), as create() would allocate them.
  static std::size_t allocated_bytes(std::size_t bytes, std::span<const Extent> allocate);

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

}  // namespace bgl::job_runtime
