#include "bgl/torus_emu/mapping.hpp"

#include <array>
#include <charconv>
#include <limits>
#include <span>

#include "bgl/torus_emu/error.hpp"
#include "bgl/torus_emu/input_file.hpp"
#include "bgl/torus_emu/user_text.hpp"

namespace bgl::torus_emu {

namespace {

constexpr std::string_view kFieldsHint = "expected 'x y z' or 'x y z t'";

std::string quoted(std::string_view s) {
  return "\"" + printable(s) + "\"";
}

void check_tasks_per_node(int tasks_per_node) {
  if (tasks_per_node != 1 && tasks_per_node != 2) {
    throw ConfigError(
        "tasks per node must be 1 (coprocessor/heater mode) or 2 (virtual-node mode), "
        "got " +
        std::to_string(tasks_per_node));
  }
}

int capacity(const Shape& shape, int tasks_per_node) {
  return shape.node_count() * tasks_per_node;
}

void check_ntasks(const Shape& shape, int tasks_per_node, int ntasks) {
  if (ntasks < 1) {
    throw ConfigError("the number of tasks must be at least 1, got " + std::to_string(ntasks));
  }
  if (ntasks > capacity(shape, tasks_per_node)) {
    throw ConfigError(std::to_string(ntasks) + " tasks do not fit shape " + shape.to_string() +
                      " with " + std::to_string(tasks_per_node) + " task(s) per node (at most " +
                      std::to_string(capacity(shape, tasks_per_node)) + ")");
  }
}

// Why a t value is wrong, phrased for the mode the job runs in.
std::string t_rule(int tasks_per_node) {
  return tasks_per_node == 1 ? "t must be 0 in coprocessor/heater mode (1 task per node)"
                             : "t must be 0 or 1 in virtual-node mode (2 tasks per node)";
}

std::string describe(const Shape& shape, TaskLocation loc) {
  return to_string(shape.coord(loc.node)) + " t=" + std::to_string(loc.t);
}

std::size_t slot_of(int tasks_per_node, TaskLocation loc) {
  return static_cast<std::size_t>(loc.node) * static_cast<std::size_t>(tasks_per_node) +
         static_cast<std::size_t>(loc.t);
}

// The order string's letters, fastest-varying first, as indices 0..3 for X, Y, Z, T.
struct Order {
  std::array<int, 4> axis{};
  int size = 0;
};

Order parse_order(std::string_view order, int tasks_per_node) {
  constexpr std::string_view kLetters = "XYZT";
  const std::string where = "mapping order " + quoted(order) + ": ";
  Order parsed;
  std::array<bool, 4> seen{};
  for (char c : order) {
    const char upper = (c >= 'a' && c <= 'z') ? static_cast<char>(c - 'a' + 'A') : c;
    const std::size_t i = kLetters.find(upper);
    if (i == std::string_view::npos) {
      throw ConfigError(where + "'" + printable(std::string_view(&c, 1)) +
                        "' is not one of X, Y, Z, T");
    }
    if (seen[i]) throw ConfigError(where + "'" + std::string(1, upper) + "' appears twice");
    seen[i] = true;
    parsed.axis[static_cast<std::size_t>(parsed.size++)] = static_cast<int>(i);
  }
  for (std::size_t i = 0; i < 3; ++i) {
    if (!seen[i]) {
      throw ConfigError(where + kLetters[i] + " is missing; give a permutation of XYZT");
    }
  }
  if (!seen[3]) {
    if (tasks_per_node != 1) {
      throw ConfigError(where +
                        "T is missing; it is required in virtual-node mode (2 tasks per node)");
    }
    parsed.axis[3] = 3;  // T has extent 1: appending it changes no position
    parsed.size = 4;
  }
  return parsed;
}

[[noreturn]] void fail_at(std::string_view source, int line, const std::string& problem) {
  throw ConfigError(std::string(source) + ":" + std::to_string(line) + ": " + problem);
}

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

// Splits a comment-free line into at most tokens.size() fields; returns the total field count so
// that "too many" can be reported with the real number.
int split_fields(std::string_view line, std::span<std::string_view> tokens) {
  int count = 0;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && is_space(line[i]))
      ++i;
    if (i == line.size()) break;
    const std::size_t start = i;
    while (i < line.size() && !is_space(line[i]))
      ++i;
    if (static_cast<std::size_t>(count) < tokens.size()) {
      tokens[static_cast<std::size_t>(count)] = line.substr(start, i - start);
    }
    ++count;
  }
  return count;
}

// A decimal integer; one too large for any field is kept as the largest (or smallest) value, so
// that it is reported as out of range, not as malformed.
std::optional<long long> parse_int(std::string_view token) {
  long long value = 0;
  const auto* end = token.data() + token.size();
  const auto [ptr, ec] = std::from_chars(token.data(), end, value);
  if (ptr != end) return std::nullopt;
  if (ec == std::errc::result_out_of_range)
    return token.starts_with('-') ? std::numeric_limits<long long>::min()
                                  : std::numeric_limits<long long>::max();
  if (ec != std::errc{}) return std::nullopt;
  return value;
}

}  // namespace

Mapping::Mapping(const Shape& shape, int tasks_per_node, std::vector<TaskLocation> locations)
    : shape_(shape),
      tasks_per_node_(tasks_per_node),
      locations_(std::move(locations)),
      rank_of_slot_(static_cast<std::size_t>(capacity(shape, tasks_per_node)), -1) {
  for (std::size_t r = 0; r < locations_.size(); ++r) {
    rank_of_slot_[slot_of(tasks_per_node_, locations_[r])] = static_cast<std::int32_t>(r);
  }
}

Mapping Mapping::from_order(const Shape& shape, int tasks_per_node, std::string_view order,
                            int ntasks) {
  check_tasks_per_node(tasks_per_node);
  const Order parsed = parse_order(order, tasks_per_node);
  check_ntasks(shape, tasks_per_node, ntasks);

  const std::array<int, 4> extent{shape.extent(Dim::x), shape.extent(Dim::y), shape.extent(Dim::z),
                                  tasks_per_node};
  std::array<int, 4> position{};  // x, y, z, t
  std::vector<TaskLocation> locations;
  locations.reserve(static_cast<std::size_t>(ntasks));
  for (int r = 0; r < ntasks; ++r) {
    locations.push_back(
        TaskLocation{shape.node_id(Coord{position[0], position[1], position[2]}), position[3]});
    // Mixed-radix increment, the first letter of the order being the least significant digit.
    for (int k = 0; k < parsed.size; ++k) {
      const auto axis = static_cast<std::size_t>(parsed.axis[static_cast<std::size_t>(k)]);
      if (++position[axis] < extent[axis]) break;
      position[axis] = 0;
    }
  }
  return Mapping(shape, tasks_per_node, std::move(locations));
}

Mapping Mapping::from_text(const Shape& shape, int tasks_per_node, std::string_view text,
                           std::string_view source_name, int ntasks) {
  check_tasks_per_node(tasks_per_node);
  check_ntasks(shape, tasks_per_node, ntasks);

  std::vector<TaskLocation> locations;
  std::vector<int> line_of_rank;
  std::vector<std::int32_t> rank_of_slot(static_cast<std::size_t>(capacity(shape, tasks_per_node)),
                                         -1);
  constexpr std::array<std::string_view, 4> kField{"x", "y", "z", "t"};
  constexpr std::array<Dim, kDims> kAxis{Dim::x, Dim::y, Dim::z};

  int line_no = 0;
  while (!text.empty()) {
    ++line_no;
    const std::size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text.remove_prefix(eol == std::string_view::npos ? text.size() : eol + 1);
    line = line.substr(0, line.find('#'));

    std::array<std::string_view, 4> tokens{};
    const int fields = split_fields(line, tokens);
    if (fields == 0) continue;
    if (static_cast<int>(locations.size()) == ntasks) {
      fail_at(source_name, line_no,
              "more task lines than the " + std::to_string(ntasks) + " tasks of the job");
    }
    if (fields < 3) {
      fail_at(source_name, line_no,
              std::string(kFieldsHint) + ", got " + std::to_string(fields) + " field(s)");
    }
    if (fields > 4) {
      fail_at(source_name, line_no,
              "too many fields (" + std::to_string(fields) + "); " + std::string(kFieldsHint));
    }
    if (fields == 3 && tasks_per_node == 2) {
      fail_at(source_name, line_no,
              "missing t: virtual-node mode (2 tasks per node) needs 'x y z t'");
    }

    std::array<long long, 4> value{};
    for (std::size_t f = 0; f < static_cast<std::size_t>(fields); ++f) {
      const auto parsed = parse_int(tokens[f]);
      if (!parsed) {
        fail_at(source_name, line_no,
                "malformed number " + quoted(tokens[f]) + " for " + std::string(kField[f]) +
                    ": expected a decimal integer");
      }
      value[f] = *parsed;
    }
    for (std::size_t f = 0; f < kDims; ++f) {
      const int extent = shape.extent(kAxis[f]);
      if (value[f] < 0 || value[f] >= extent) {
        fail_at(source_name, line_no,
                std::string(kField[f]) + " = " + printable(tokens[f]) + " is out of range 0.." +
                    std::to_string(extent - 1) + " of shape " + shape.to_string());
      }
    }
    if (value[3] < 0 || value[3] >= tasks_per_node) {
      fail_at(source_name, line_no,
              "t = " + printable(tokens[3]) + " is out of range: " + t_rule(tasks_per_node));
    }

    const TaskLocation loc{
        shape.node_id(Coord{static_cast<int>(value[0]), static_cast<int>(value[1]),
                            static_cast<int>(value[2])}),
        static_cast<int>(value[3])};
    std::int32_t& owner = rank_of_slot[slot_of(tasks_per_node, loc)];
    if (owner >= 0) {
      fail_at(source_name, line_no,
              "location " + describe(shape, loc) + " is already used by rank " +
                  std::to_string(owner) + " (line " +
                  std::to_string(line_of_rank[static_cast<std::size_t>(owner)]) + ")");
    }
    owner = static_cast<std::int32_t>(locations.size());
    locations.push_back(loc);
    line_of_rank.push_back(line_no);
  }

  if (static_cast<int>(locations.size()) != ntasks) {
    throw ConfigError(std::string(source_name) + ": " + std::to_string(locations.size()) +
                      " task lines, expected " + std::to_string(ntasks));
  }
  return Mapping(shape, tasks_per_node, std::move(locations));
}

Mapping Mapping::from_file(const Shape& shape, int tasks_per_node,
                           const std::filesystem::path& path, int ntasks) {
  return from_text(shape, tasks_per_node, read_input_file(path, "mapping file"),
                   printable(path.string(), 256), ntasks);
}

Mapping Mapping::from_locations(const Shape& shape, int tasks_per_node,
                                std::vector<TaskLocation> locations) {
  check_tasks_per_node(tasks_per_node);
  if (locations.empty()) throw ConfigError("mapping has no tasks");
  std::vector<std::int32_t> rank_of_slot(static_cast<std::size_t>(capacity(shape, tasks_per_node)),
                                         -1);
  for (std::size_t r = 0; r < locations.size(); ++r) {
    const TaskLocation loc = locations[r];
    const std::string who = "mapping: rank " + std::to_string(r);
    if (loc.node >= static_cast<NodeId>(shape.node_count())) {
      throw ConfigError(who + " is on node " + std::to_string(loc.node) + ", outside shape " +
                        shape.to_string() + " (" + std::to_string(shape.node_count()) + " nodes)");
    }
    if (loc.t < 0 || loc.t >= tasks_per_node) {
      throw ConfigError(who + " has t = " + std::to_string(loc.t) + "; " + t_rule(tasks_per_node));
    }
    std::int32_t& owner = rank_of_slot[slot_of(tasks_per_node, loc)];
    if (owner >= 0) {
      throw ConfigError(who + " has the same location " + describe(shape, loc) + " as rank " +
                        std::to_string(owner));
    }
    owner = static_cast<std::int32_t>(r);
  }
  return Mapping(shape, tasks_per_node, std::move(locations));
}

std::optional<Rank> Mapping::rank_at(NodeId node, int t) const {
  if (node >= static_cast<NodeId>(shape_.node_count()) || t < 0 || t >= tasks_per_node_) {
    return std::nullopt;
  }
  const std::int32_t r = rank_of_slot_[slot_of(tasks_per_node_, TaskLocation{node, t})];
  if (r < 0) return std::nullopt;
  return static_cast<Rank>(r);
}

std::string Mapping::to_text() const {
  std::string out =
      "# bglemu task mapping: shape " + shape_.to_string() + ", " +
      std::to_string(tasks_per_node_) + " task(s) per node, " + std::to_string(locations_.size()) +
      " tasks; one line per rank: " + (tasks_per_node_ == 2 ? "x y z t" : "x y z") + "\n";
  for (const TaskLocation& loc : locations_) {
    const Coord c = shape_.coord(loc.node);
    out += std::to_string(c.x) + ' ' + std::to_string(c.y) + ' ' + std::to_string(c.z);
    if (tasks_per_node_ == 2) out += ' ' + std::to_string(loc.t);
    out += '\n';
  }
  return out;
}

}  // namespace bgl::torus_emu
