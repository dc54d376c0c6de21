#pragma once
// Reading a file a user named (a mapping file, a host file, a host network file): every such file
// is read through here, so that each gets the same checks and the same errors.
#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>

namespace bgl {

// The largest input file read: a mapping file of the largest partition (64x64x64 in virtual-node
// mode, 524,288 lines of "x y z t") is under 6 MiB.
inline constexpr std::size_t kMaxInputFileBytes = std::size_t{16} << 20;

// The whole content of the regular file at `path` (symbolic links are followed). Anything else
// (a FIFO, a device such as /dev/zero, a directory, a socket) is refused without reading from it
// or waiting for a writer, and so is a file of more than `limit` bytes. Throws ConfigError
// "cannot read <what> <path>: <problem>", e.g. "cannot read mapping file m.fifo: it is a FIFO
// (named pipe), not a regular file".
std::string read_input_file(const std::filesystem::path& path, std::string_view what,
                            std::size_t limit = kMaxInputFileBytes);

}  // namespace bgl
