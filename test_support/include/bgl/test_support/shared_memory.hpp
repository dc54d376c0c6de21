#pragma once
// A zero-filled, page-aligned MAP_SHARED anonymous mapping, as the launcher's segment would be.
#include <sys/mman.h>

#include <cstddef>
#include <span>
#include <stdexcept>

namespace bgl::test_support {

class SharedMemory {
 public:
  explicit SharedMemory(std::size_t bytes) : bytes_(bytes) {
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::runtime_error("mmap failed");
    base_ = static_cast<std::byte*>(p);
  }
  SharedMemory(const SharedMemory&) = delete;
  SharedMemory& operator=(const SharedMemory&) = delete;
  ~SharedMemory() { ::munmap(base_, bytes_); }
  std::span<std::byte> span() const { return {base_, bytes_}; }

 private:
  std::size_t bytes_;
  std::byte* base_ = nullptr;
};

}  // namespace bgl::test_support
