#pragma once
// LazyPool: a fixed-capacity pool of objects addressed by index, made when first needed.
// SlotTable: a LazyPool addressed by generation-tagged 32-bit ids, so that an id that comes back
// in a packet can be checked cheaply: a stale or forged id finds nothing.
#include <cstdint>
#include <vector>

namespace bgl::message_layer {

// The storage is reserved once (references into it stay valid, nothing allocates afterwards), but
// an object is made only when its index is first handed out: a task that never uses most of a
// large pool does not touch (fault in) its memory. Released indices are reused first, the last
// released first; a reused object is left as its last user left it.
template <class T>
class LazyPool {
 public:
  explicit LazyPool(std::uint32_t capacity) : capacity_(capacity) {
    objects_.reserve(capacity);
    free_.reserve(capacity);
  }

  // A free index, or false when the pool is full.
  bool acquire(std::uint32_t& index) {
    if (!free_.empty()) {
      index = free_.back();
      free_.pop_back();
      return true;
    }
    if (objects_.size() == capacity_) return false;
    index = static_cast<std::uint32_t>(objects_.size());
    objects_.emplace_back();  // within the reserved storage
    return true;
  }
  void release(std::uint32_t index) { free_.push_back(index); }  // within the reserved storage

  T& operator[](std::uint32_t index) { return objects_[index]; }
  // Indices below made() have an object (in use or released).
  std::uint32_t made() const { return static_cast<std::uint32_t>(objects_.size()); }
  std::uint32_t in_use() const {
    return static_cast<std::uint32_t>(objects_.size() - free_.size());
  }
  bool full() const { return free_.empty() && objects_.size() == capacity_; }

 private:
  std::uint32_t capacity_;
  std::vector<T> objects_;
  std::vector<std::uint32_t> free_;  // released indices, a stack
};

template <class T>
class SlotTable {
 public:
  static constexpr std::uint32_t kIndexBits = 20;
  static constexpr std::uint32_t kMaxCapacity = 1u << kIndexBits;

  explicit SlotTable(std::uint32_t capacity) : slots_(capacity) {}

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
    if (!slots_.acquire(index)) return nullptr;
    Slot& s = slots_[index];
    s.used = true;
    id = index | (s.generation << kIndexBits);
    return &s.value;
  }
  T* find(std::uint32_t id) {
    const std::uint32_t index = id & (kMaxCapacity - 1);
    if (index >= slots_.made()) return nullptr;
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
    slots_.release(index);
  }
  std::uint32_t in_use() const { return slots_.in_use(); }
  bool full() const { return slots_.full(); }

 private:
  struct Slot {
    T value{};
    std::uint32_t generation = 0;
    bool used = false;
  };
  LazyPool<Slot> slots_;
};

}  // namespace bgl::message_layer
