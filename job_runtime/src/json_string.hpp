#pragma once
// A JSON string literal appended to `out`, for the files tasks write without a JSON library
// (the trace's events, the call-site table): quotes and backslashes escaped, control and
// non-ASCII bytes as \u00XX.
#include <cstdio>
#include <string>
#include <string_view>

namespace bgl::job_runtime {

inline void json_string(std::string& out, std::string_view s) {
  out += '"';
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20 || u >= 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", u);
      out += buf;
    } else {
      out += c;
    }
  }
  out += '"';
}

}  // namespace bgl::job_runtime
