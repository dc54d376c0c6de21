#pragma once
// A fixed-capacity table of objects addressed by generation-tagged 32-bit ids, so that an id that
// comes back in a packet can be checked cheaply: a stale or forged id finds nothing.
#include <cstdint>
#include <vector>

namespace bgl::message_layer {

template <class T>
class SlotTable {
 public:
  static constexpr std::uint32_t kIndexBits = 20;
  static constexpr std::uint32_t kMaxCapacity = 1u << kIndexBits;

  explicit SlotTable(std::uint32_t capacity) : slots_(capacity), free_(capacity) {
    for (std::uint32_t i = capacity; i-- > 0;)
      free_[free_count_++] = i;
  }

  // An id of a fresh slot (value reset to T{}), or false when the table is full.
  bool acquire(std::uint32_t& id) {
    if (free_count_ == 0) return false;
    const std::uint32_t index = free_[--free_count_];
    Slot& s = slots_[index];
    s.used = true;
    s.value = T{};
    id = index | (s.generation << kIndexBits);
    return true;
  }
  // Like acquire(), but the value is left as its last user left it (no reset: for a hot path that
  // sets what it uses). nullptr when the table is full.
  T* acquire_as_is(std::uint32_t& id) {
    if (free_count_ == 0) return nullptr;
    const std::uint32_t index = free_[--free_count_];
    Slot& s = slots_[index];
    s.used = true;
    id = index | (s.generation << kIndexBits);
    return &s.value;
  }
  T* find(std::uint32_t id) {
    const std::uint32_t index = id & (kMaxCapacity - 1);
    if (index >= slots_.size()) return nullptr;
    Slot& s = slots_[index];
    return s.used && (id >> kIndexBits) == s.generation ? &s.value : nullptr;
  }
  // The value is left as it is (acquire() resets it): a release on the hot path stays cheap.
  // Values that own resources must give them up before.
  void release(std::uint32_t id) {
    const std::uint32_t index = id & (kMaxCapacity - 1);
    Slot& s = slots_[index];
    s.used = false;
    s.generation = (s.generation + 1) & ((1u << (32 - kIndexBits)) - 1);
    free_[free_count_++] = index;
  }
  std::uint32_t in_use() const { return static_cast<std::uint32_t>(slots_.size()) - free_count_; }
  bool full() const { return free_count_ == 0; }

 private:
  struct Slot {
    T value{};
    std::uint32_t generation = 0;
    bool used = false;
  };
  std::vector<Slot> slots_;
  // The free indices, a stack: sized once, so releasing never grows a vector.
  std::vector<std::uint32_t> free_;
  std::uint32_t free_count_ = 0;
};

}  // namespace bgl::message_layer
