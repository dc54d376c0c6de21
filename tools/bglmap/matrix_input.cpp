#include "matrix_input.hpp"

#include <nlohmann/json.hpp>

#include "bgl/report/report.hpp"
#include "bgl/torus_emu/error.hpp"
#include "bgl/torus_emu/input_file.hpp"
#include "bgl/torus_emu/user_text.hpp"

namespace bgl::bglmap {

namespace {

using nlohmann::json;

// Statistics files of large all-to-all jobs are far larger than a mapping file.
constexpr std::size_t kMaxStatisticsBytes = std::size_t{1} << 30;

std::uint64_t unsigned_at(const json& v, const std::string& name, const std::string& pointer) {
  if (!v.is_number_unsigned())
    throw ConfigError(name + ": " + pointer + ": expected a non-negative integer, found " +
                      std::string(v.type_name()));
  return v.get<std::uint64_t>();
}

// A member of `object` that must be a string (when present), printable; `fallback` when absent.
std::string text_at(const json& object, const char* key, const std::string& name,
                    const std::string& pointer, const std::string& fallback) {
  const auto v = object.find(key);
  if (v == object.end()) return fallback;
  if (!v->is_string())
    throw ConfigError(name + ": " + pointer + ": expected a string, found " +
                      std::string(v->type_name()));
  return printable(v->get_ref<const std::string&>(), 256);
}

torus_emu::CommMatrix from_statistics(const json& stats, const std::string& name) {
  const auto t = stats.find("traffic");
  if (t == stats.end() || !t->is_object())
    throw ConfigError(name +
                      ": no communication matrix (/traffic): the run did not record one "
                      "(a bglrun without it, or a job of more than 2048 tasks)");
  const auto recorded = t->find("recorded");
  if (recorded != t->end() && !recorded->is_boolean())
    throw ConfigError(name + ": /traffic/recorded: expected true or false, found " +
                      std::string(recorded->type_name()));
  if (recorded == t->end() || !recorded->get<bool>())
    throw ConfigError(name + ": /traffic: the run did not record its communication matrix (" +
                      text_at(*t, "reason", name, "/traffic/reason", "no reason given") + ")");
  const auto tasks = unsigned_at(t->value("tasks", json()), name, "/traffic/tasks");
  if (tasks < 1 || tasks > static_cast<std::uint64_t>(torus_emu::CommMatrix::kMaxTasks))
    throw ConfigError(name + ": /traffic/tasks: " + std::to_string(tasks) + " is out of range 1.." +
                      std::to_string(torus_emu::CommMatrix::kMaxTasks));
  torus_emu::CommMatrix m(static_cast<int>(tasks));
  const auto rows = t->find("rows");
  if (rows == t->end() || !rows->is_array())
    throw ConfigError(name + ": /traffic/rows: expected an array");
  for (std::size_t i = 0; i < rows->size(); ++i) {
    const std::string row_at = "/traffic/rows/" + std::to_string(i);
    const json& row = (*rows)[i];
    if (!row.is_object() || !row.contains("source") || !row.contains("to") || !row["to"].is_array())
      throw ConfigError(name + ": " + row_at + ": expected {\"source\": S, \"to\": [...]}");
    const auto source = unsigned_at(row["source"], name, row_at + "/source");
    for (std::size_t k = 0; k < row["to"].size(); ++k) {
      const std::string at = row_at + "/to/" + std::to_string(k);
      const json& e = row["to"][k];
      if (!e.is_array() || e.size() != 3)
        throw ConfigError(name + ": " + at + ": expected [destination, bytes, messages]");
      const auto dest = unsigned_at(e[0], name, at + "/0");
      const auto bytes = unsigned_at(e[1], name, at + "/1");
      const auto messages = unsigned_at(e[2], name, at + "/2");
      if (source >= tasks || dest >= tasks)
        throw ConfigError(name + ": " + at + ": rank " + std::to_string(std::max(source, dest)) +
                          " is out of range 0.." + std::to_string(tasks - 1));
      m.add(static_cast<torus_emu::Rank>(source), static_cast<torus_emu::Rank>(dest), bytes,
            messages, name + ": " + at);
    }
  }
  return m;
}

}  // namespace

MatrixInput read_matrix(const std::filesystem::path& path) {
  return parse_matrix(read_input_file(path, "communication matrix file", kMaxStatisticsBytes),
                      path.string());
}

MatrixInput parse_matrix(std::string_view text, std::string_view source_name) {
  const std::string name = printable(source_name, 256);
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos || text[first] != '{') {
    if (text.size() > kMaxInputFileBytes)
      throw ConfigError("cannot read communication matrix file " + name + ": it is " +
                        std::to_string(text.size()) + " bytes, more than the limit of " +
                        std::to_string(kMaxInputFileBytes) + " bytes for a plain matrix file");
    return {torus_emu::CommMatrix::from_text(text, source_name), std::nullopt};
  }
  json stats;
  try {
    stats = report::parse(text, source_name);
  } catch (const report::Error& e) {
    throw ConfigError(e.what());
  }
  auto matrix = from_statistics(stats, name);
  std::string run;
  if (const auto job = stats.find("job"); job != stats.end() && job->is_object())
    run = text_at(*job, "shape", name, "/job/shape", "?") + " " +
          text_at(*job, "mode", name, "/job/mode", "?") + ", " +
          text_at(*job, "mapping", name, "/job/mapping", "?");
  return {std::move(matrix), run};
}

}  // namespace bgl::bglmap
