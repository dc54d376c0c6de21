#include "bgl/torus_emu/user_text.hpp"

#include <array>

namespace bgl {
namespace {

void append_escaped(std::string& out, unsigned char c, bool keep_newline) {
  if (c >= 0x20 && c < 0x7f) {
    out += static_cast<char>(c);
    return;
  }
  switch (c) {
    case '\n':
      out += keep_newline ? "\n" : "\\n";
      return;
    case '\t':
      out += "\\t";
      return;
    case '\r':
      out += "\\r";
      return;
    case '\0':
      out += "\\0";
      return;
    default: {
      constexpr std::string_view kHex = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
    }
  }
}

}  // namespace

std::string printable(std::string_view text, std::size_t limit) {
  const std::string_view shown = text.substr(0, limit);
  std::string out;
  out.reserve(shown.size() + 24);
  for (const char c : shown)
    append_escaped(out, static_cast<unsigned char>(c), false);
  if (shown.size() < text.size()) out += "... (" + std::to_string(text.size()) + " bytes)";
  return out;
}

std::string printable_message(std::string_view message) {
  std::string out;
  out.reserve(message.size());
  for (const char c : message)
    append_escaped(out, static_cast<unsigned char>(c), true);
  return out;
}

}  // namespace bgl
