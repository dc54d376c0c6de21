#include "bgl/torus_emu/comm_matrix.hpp"

#include <algorithm>
#include <charconv>
#include <limits>
#include <optional>

#include "bgl/torus_emu/error.hpp"
#include "bgl/torus_emu/input_file.hpp"
#include "bgl/torus_emu/user_text.hpp"

namespace bgl::torus_emu {

namespace {

constexpr std::string_view kFormat =
    "expected \"tasks N\" first, then \"SOURCE DEST BYTES [MESSAGES]\" lines "
    "(docs/CONFIGURATION.md, "
    "\"Communication matrix files\")";

std::vector<std::string_view> fields_of(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r'))
      ++i;
    const std::size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t' && line[i] != '\r')
      ++i;
    if (i > start) out.push_back(line.substr(start, i - start));
  }
  return out;
}

// A decimal integer in [0, max], or an error naming the field.
std::uint64_t number(std::string_view token, std::string_view what, std::uint64_t max,
                     const std::string& where) {
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), v);
  if (ec == std::errc::result_out_of_range ||
      (ec == std::errc{} && end == token.data() + token.size() && v > max)) {
    throw ConfigError(where + std::string(what) + " " + printable(token) + " is out of range 0.." +
                      std::to_string(max));
  }
  if (ec != std::errc{} || end != token.data() + token.size())
    throw ConfigError(where + std::string(what) + " \"" + printable(token) +
                      "\" is not a non-negative decimal integer");
  return v;
}

}  // namespace

CommMatrix::CommMatrix(int tasks) : tasks_(tasks) {
  if (tasks < 1 || tasks > kMaxTasks)
    throw ConfigError("a communication matrix needs 1.." + std::to_string(kMaxTasks) +
                      " tasks, got " + std::to_string(tasks));
}

void CommMatrix::add(Rank source, Rank dest, std::uint64_t bytes, std::uint64_t messages,
                     std::string_view where) {
  const std::string prefix = where.empty() ? std::string() : std::string(where) + ": ";
  for (const Rank r : {source, dest})
    if (r >= static_cast<Rank>(tasks_))
      throw ConfigError(prefix + "rank " + std::to_string(r) + " is out of range 0.." +
                        std::to_string(tasks_ - 1) + " of a " + std::to_string(tasks_) +
                        "-task matrix");
  if (bytes == 0) return;
  if (!flows_.empty() && sorted_) {
    const Flow& last = flows_.back();
    sorted_ = std::pair(last.source, last.dest) < std::pair(source, dest);
  }
  if (total_ > std::numeric_limits<std::uint64_t>::max() - bytes)
    throw ConfigError(prefix + "the matrix's bytes add up to more than 2^64");
  total_ += bytes;  // so no pair's sum of bytes can overflow when flows() merges duplicates
  flows_.push_back({source, dest, bytes, messages});
}

const std::vector<Flow>& CommMatrix::flows() const {
  if (sorted_) return flows_;
  std::stable_sort(flows_.begin(), flows_.end(), [](const Flow& a, const Flow& b) {
    return std::pair(a.source, a.dest) < std::pair(b.source, b.dest);
  });
  std::vector<Flow> merged;
  merged.reserve(flows_.size());
  for (const Flow& f : flows_) {
    if (!merged.empty() && merged.back().source == f.source && merged.back().dest == f.dest) {
      merged.back().bytes += f.bytes;  // bounded by total_, which add() checked
      // one unknown count makes the pair's unknown; a sum past 2^64 saturates (no real run)
      auto& m = merged.back().messages;
      m = m && f.messages ? (m > std::numeric_limits<std::uint64_t>::max() - f.messages
                                 ? std::numeric_limits<std::uint64_t>::max()
                                 : m + f.messages)
                          : 0;
    } else
      merged.push_back(f);
  }
  flows_ = std::move(merged);
  sorted_ = true;
  return flows_;
}

CommMatrix CommMatrix::from_text(std::string_view text, std::string_view source_name) {
  const std::string name = printable(source_name, 256);
  std::optional<CommMatrix> m;
  int line_no = 0;
  while (!text.empty()) {
    ++line_no;
    const std::size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view{} : text.substr(eol + 1);
    line = line.substr(0, line.find('#'));
    const auto f = fields_of(line);
    if (f.empty()) continue;
    const std::string where = name + ":" + std::to_string(line_no) + ": ";
    if (!m) {
      if (f.size() != 2 || f[0] != "tasks")
        throw ConfigError(where + "the first line must be \"tasks N\"; " + std::string(kFormat));
      const auto tasks = static_cast<int>(number(f[1], "task count", kMaxTasks, where));
      if (tasks < 1) throw ConfigError(where + "the task count must be at least 1");
      m.emplace(tasks);
      continue;
    }
    if (f.size() != 3 && f.size() != 4)
      throw ConfigError(where + std::to_string(f.size()) + " fields; " + std::string(kFormat));
    const auto max_rank = static_cast<std::uint64_t>(m->tasks() - 1);
    const auto source = static_cast<Rank>(number(f[0], "source rank", max_rank, where));
    const auto dest = static_cast<Rank>(number(f[1], "destination rank", max_rank, where));
    const std::uint64_t bytes =
        number(f[2], "byte count", std::numeric_limits<std::uint64_t>::max(), where);
    const std::uint64_t messages =
        f.size() == 4
            ? number(f[3], "message count", std::numeric_limits<std::uint64_t>::max(), where)
            : 0;
    if (f.size() == 4 && messages == 0 && bytes > 0)
      throw ConfigError(where +
                        "a pair with bytes needs at least one message (or no MESSAGES field)");
    m->add(source, dest, bytes, messages, where.substr(0, where.size() - 2));
  }
  if (!m) throw ConfigError(name + ": no \"tasks N\" line; " + std::string(kFormat));
  return std::move(*m);
}

CommMatrix CommMatrix::from_file(const std::filesystem::path& path) {
  return from_text(read_input_file(path, "communication matrix file"), path.string());
}

std::string CommMatrix::to_text() const {
  std::string out = "# communication matrix: SOURCE DEST BYTES [MESSAGES]\ntasks " +
                    std::to_string(tasks_) + "\n";
  for (const Flow& f : flows())
    out += std::to_string(f.source) + " " + std::to_string(f.dest) + " " + std::to_string(f.bytes) +
           (f.messages ? " " + std::to_string(f.messages) : std::string()) + "\n";
  return out;
}

}  // namespace bgl::torus_emu
