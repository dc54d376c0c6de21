#pragma once
// Echoing text that came from a user (a file, a flag, a variable) in an error message. Such text
// may hold anything: a NUL byte (which would cut a C string), terminal escape sequences, or a
// megabyte without a space. Everything echoed goes through here first.
#include <cstddef>
#include <string>
#include <string_view>

namespace bgl {

// Longest piece of user text echoed whole; longer ones are cut and their length is given.
inline constexpr std::size_t kEchoLimit = 64;

// `text` as printable ASCII: control characters, DEL and bytes >= 0x80 become escapes (\n, \t,
// \r, \0, \xNN); text longer than `limit` bytes is cut to `limit` and followed by
// "... (N bytes)".
std::string printable(std::string_view text, std::size_t limit = kEchoLimit);

// A whole message for the terminal: as printable() but keeping line breaks and without a length
// limit (the pieces of user text in it were cut already).
std::string printable_message(std::string_view message);

}  // namespace bgl
