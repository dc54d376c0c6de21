#include "bgl/job_runtime/remote_store.hpp"

namespace bgl::job_runtime {

const char* check_store(const StoreRequest& r, std::size_t bytes, std::size_t region_bytes) {
  if (region_bytes == 0) return "no such region";
  if (bytes > kMaxStoreBytes) return "more bytes than a store carries";
  if (bytes > 0 && (r.offset > region_bytes || bytes > region_bytes - r.offset))
    return "bytes beyond the region";
  if (r.word != kNoOffset) {
    if (r.word % alignof(std::atomic<std::uint64_t>) != 0) return "word not 8-byte aligned";
    if (region_bytes < sizeof(std::uint64_t) || r.word > region_bytes - sizeof(std::uint64_t))
      return "word beyond the region";
    if (bytes > 0 && r.word < r.offset + bytes && r.offset < r.word + sizeof(std::uint64_t))
      return "word inside the stored bytes";
  }
  if (r.bell != kNoOffset) {
    if (r.bell % alignof(Doorbell) != 0) return "doorbell not 64-byte aligned";
    if (region_bytes < sizeof(Doorbell) || r.bell > region_bytes - sizeof(Doorbell))
      return "doorbell beyond the region";
  }
  if (bytes == 0 && r.word == kNoOffset && r.bell == kNoOffset) return "a store of nothing";
  return nullptr;
}

void apply_store(std::span<std::byte> region, const StoreRequest& r,
                 std::span<const std::byte> bytes) {
  if (!bytes.empty()) std::memcpy(region.data() + r.offset, bytes.data(), bytes.size());
  if (r.word != kNoOffset) {
    // The component laid an std::atomic<std::uint64_t> out there (lock-free, the size of the
    // integer), which other processes read with acquire loads.
    auto* word = reinterpret_cast<std::atomic<std::uint64_t>*>(region.data() + r.word);
    std::uint64_t seen = word->load(std::memory_order_relaxed);
    while (seen < r.value && !word->compare_exchange_weak(seen, r.value, std::memory_order_release,
                                                          std::memory_order_relaxed)) {
    }
  }
  if (r.bell != kNoOffset) reinterpret_cast<Doorbell*>(region.data() + r.bell)->ring();
}

}  // namespace bgl::job_runtime
