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

  // The storage is reserved once (pointers into it stay valid) but slots are made when first
  // needed: a task that never uses most of a large table does not touch (fault in) its memory.
  explicit SlotTable(std::uint32_t capacity) : capacity_(capacity) {
    slots_.reserve(capacity);
    free_.reserve(capacity);
  }

  // An id of a fresh slot (value reset to T{}), or false when the table is full.
  bool acquire(std::uint32_t& id) {
    T* value = acquire_as_is(id);
    if (!value) return false;
    *value = T{};
    return true;
  }
  // Like acquire(), but the value is left as its last user left it (no reset: for a hot path that
  // sets what it uses). nullptr when the table is full.
  T* acquire_as_is(std::uint32_t& id) {
    std::uint32_t index;
    if (!free_.empty()) {
      index = free_.back();
      free_.pop_back();
    } else if (slots_.size() < capacity_) {
      index = static_cast<std::uint32_t>(slots_.size());
      slots_.emplace_back();  // within the reserved storage: no allocation
    } else {
      return nullptr;
    }
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
    free_.push_back(index);  // within the reserved storage
  }
  std::uint32_t in_use() const { return static_cast<std::uint32_t>(slots_.size() - free_.size()); }
  bool full() const { return free_.empty() && slots_.size() == capacity_; }

 private:
  struct Slot {
    T value{};
    std::uint32_t generation = 0;
    bool used = false;
  };
  std::uint32_t capacity_;
  std::vector<Slot> slots_;
  std::vector<std::uint32_t> free_;  // released indices, a stack (reused before new slots)
};

}  // namespace bgl::message_layer
