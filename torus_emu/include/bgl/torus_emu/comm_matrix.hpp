#pragma once
// A job's communication matrix: bytes per (source, destination) rank pair, sparse. Read from a
// plain text file (format below) or built by a caller (bglmap reads bglrun's statistics JSON).
//
// Plain format: '#' starts a comment, blank lines are ignored; the first line is "tasks N"; then
// one "SOURCE DEST BYTES [MESSAGES]" line per pair (decimal integers, ranks 0..N-1); a pair listed
// twice adds up. MESSAGES (how many messages carried the bytes) is optional: without it the
// pair's message count is unknown (0), which the time prediction estimates from the bytes.
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "bgl/torus_emu/mapping.hpp"

namespace bgl::torus_emu {

struct Flow {
  Rank source = 0;
  Rank dest = 0;
  std::uint64_t bytes = 0;
  std::uint64_t messages = 0;  // 0: not known
  bool operator==(const Flow&) const = default;
};

class CommMatrix {
 public:
  static constexpr int kMaxTasks = 1 << 20;

  // Throws ConfigError when tasks is out of 1..kMaxTasks.
  explicit CommMatrix(int tasks);
  // Adds bytes from source to dest; throws ConfigError naming `where` when a rank is out of range
  // or the pair's total would overflow.
  void add(Rank source, Rank dest, std::uint64_t bytes, std::string_view where = {}) {
    add(source, dest, bytes, 0, where);
  }
  // The same with the number of messages that carried them (0: not known).
  void add(Rank source, Rank dest, std::uint64_t bytes, std::uint64_t messages,
           std::string_view where);

  // Throws ConfigError as "<source_name>:<line>: <problem>" (or "<source_name>: <problem>").
  static CommMatrix from_text(std::string_view text, std::string_view source_name);
  static CommMatrix from_file(const std::filesystem::path& path);

  int tasks() const { return tasks_; }
  // Pairs with bytes, sorted by (source, dest); a pair appears once. Self-pairs are kept (they
  // cost no hops).
  const std::vector<Flow>& flows() const;
  std::uint64_t total_bytes() const { return total_; }
  // The text form that from_text reads.
  std::string to_text() const;

 private:
  int tasks_;
  mutable std::vector<Flow> flows_;
  mutable bool sorted_ = true;
  std::uint64_t total_ = 0;
};

}  // namespace bgl::torus_emu
