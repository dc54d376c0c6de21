#pragma once
// The executor's table of expected and early messages: an open-addressing hash map (linear
// probing, backward-shift deletion, power-of-two capacity). A lookup is one hash and a short walk
// through one array, with no node per entry; it allocates only when it grows past half full, so a
// task's tables stop allocating once they have held the most messages a collective leaves open.
#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

namespace bgl::collectives::detail {

template <class Key, class Value, class Hash>
class FlatMap {
 public:
  // The value stored under `k`, or nullptr. Valid until the next insert() or erase().
  Value* find(const Key& k) {
    if (size_ == 0) return nullptr;
    for (std::size_t i = home(k);; i = next(i)) {
      Entry& e = entries_[i];
      if (!e.used) return nullptr;
      if (e.key == k) return &e.value;
    }
  }
  // Stores `v` under `k`, which must not be present.
  Value& insert(const Key& k, Value v) {
    if (2 * (size_ + 1) > entries_.size()) grow();
    std::size_t i = home(k);
    while (entries_[i].used)
      i = next(i);
    entries_[i] = {k, std::move(v), true};
    ++size_;
    return entries_[i].value;
  }
  // Removes `k` if present. Later entries of its probe run move back into the hole, so that no
  // lookup stops short of them.
  void erase(const Key& k) {
    if (size_ == 0) return;
    std::size_t hole = home(k);
    for (;; hole = next(hole)) {
      if (!entries_[hole].used) return;
      if (entries_[hole].key == k) break;
    }
    for (std::size_t j = next(hole); entries_[j].used; j = next(j)) {
      // The entry at j may fill the hole if the hole lies on its probe path, from its home to j.
      if (((j - home(entries_[j].key)) & mask()) >= ((j - hole) & mask())) {
        entries_[hole] = std::move(entries_[j]);
        hole = j;
      }
    }
    entries_[hole] = Entry{};
    --size_;
  }
  std::size_t size() const { return size_; }
  template <class F>
  void for_each(F&& f) const {
    for (const Entry& e : entries_)
      if (e.used) f(e.key, e.value);
  }

 private:
  struct Entry {
    Key key{};
    Value value{};
    bool used = false;
  };
  static constexpr std::size_t kFirstCapacity = 64;
  std::size_t mask() const { return entries_.size() - 1; }
  std::size_t home(const Key& k) const { return Hash{}(k)&mask(); }
  std::size_t next(std::size_t i) const { return (i + 1) & mask(); }
  void grow() {
    std::vector<Entry> old =
        std::exchange(entries_, std::vector<Entry>(std::max(kFirstCapacity, 2 * entries_.size())));
    size_ = 0;
    for (Entry& e : old)
      if (e.used) insert(e.key, std::move(e.value));
  }

  std::vector<Entry> entries_;
  std::size_t size_ = 0;
};

}  // namespace bgl::collectives::detail
