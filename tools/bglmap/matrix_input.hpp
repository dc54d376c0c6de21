#pragma once
// The communication matrix bglmap reads: a bglrun statistics file (its "traffic" member) or a
// plain matrix file (bgl/torus_emu/comm_matrix.hpp), told apart by their first character.
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "bgl/torus_emu/comm_matrix.hpp"

namespace bgl::bglmap {

struct MatrixInput {
  torus_emu::CommMatrix matrix;
  // From a statistics file: the run's job (shape, mode, mapping source), for the report.
  std::optional<std::string> run;
};

// Throws ConfigError naming the file and the line (plain) or JSON pointer (statistics) at fault.
MatrixInput read_matrix(const std::filesystem::path& path);
// The same for a file's text; `name` names it in errors.
MatrixInput parse_matrix(std::string_view text, std::string_view name);

}  // namespace bgl::bglmap
