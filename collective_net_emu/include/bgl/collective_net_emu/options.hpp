#pragma once
// How the launcher lays out the emulated collective network, from the BGL_* environment:
//   BGL_TREE        tree shape: "torus" (default; a spanning tree along torus links, at most 3
//                   children per node as on BG/L), "torus:K" (at most K children), "kary:K" (a
//                   K-ary heap over the nodes in id order, ignoring the torus); K in 1..8
//   BGL_TREE_RING   packets in flight per class and node: ring depth, a power of two in [2, 4096];
//                   a task may inject this many sequence numbers ahead of the results it has
//                   received. Default 256 for jobs of up to 128 tasks (a deep window means fewer
//                   context switches per packet when tasks outnumber cores), 64 above (memory)
//   BGL_TREE_INBOX  capacity of each task's point-to-point inbox, a power of two in [2, 1024]
//                   (default 16)
// Tasks never read these: they find the layout in the segment.
#include <cstdint>
#include <string>
#include <string_view>

namespace bgl::collective_net_emu {

inline constexpr int kMaxFanout = 8;

enum class TreeKind : std::uint8_t { torus, kary };

struct TreeSpec {
  TreeKind kind = TreeKind::torus;
  int fanout = 3;

  // Throws ConfigError naming `source` (e.g. "BGL_TREE") and the accepted forms.
  static TreeSpec parse(std::string_view text, std::string_view source);
  std::string to_string() const;  // the form parse() accepts
  bool operator==(const TreeSpec&) const = default;
};

struct Options {
  static constexpr std::uint32_t kAutomaticRing = 0;
  static constexpr std::uint32_t kDefaultInbox = 16;

  TreeSpec tree;
  std::uint32_t ring_packets = kAutomaticRing;  // 0: ring_for(tasks)
  std::uint32_t inbox_packets = kDefaultInbox;

  // The ring depth for a job of `tasks` tasks: ring_packets, or the automatic default.
  std::uint32_t ring_for(int tasks) const {
    if (ring_packets != kAutomaticRing) return ring_packets;
    return tasks <= 128 ? 256 : 64;
  }

  // Defaults overridden by BGL_TREE, BGL_TREE_RING, BGL_TREE_INBOX; ConfigError names a bad one.
  static Options from_environment();
  // Throws ConfigError when a field is out of range (`source` prefixes the message).
  void validate(std::string_view source = "collective network") const;
};

}  // namespace bgl::collective_net_emu
