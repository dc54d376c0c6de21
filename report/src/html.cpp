#include "html.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>

namespace bgl::report {
namespace {

// The length of the valid UTF-8 sequence at the start of `s` (0: invalid).
std::size_t utf8_length(std::string_view s) {
  const auto b = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  const auto cont = [&](std::size_t i) { return i < s.size() && (b(i) & 0xC0) == 0x80; };
  const unsigned char c = b(0);
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (!cont(1) || !cont(2)) return 0;
    if (c == 0xE0 && b(1) < 0xA0) return 0;   // overlong
    if (c == 0xED && b(1) >= 0xA0) return 0;  // surrogates
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (!cont(1) || !cont(2) || !cont(3)) return 0;
    if (c == 0xF0 && b(1) < 0x90) return 0;
    if (c == 0xF4 && b(1) >= 0x90) return 0;
    return 4;
  }
  return 0;
}

}  // namespace

std::string escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  while (!text.empty()) {
    const char c = text.front();
    const std::size_t n = utf8_length(text);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      text.remove_prefix(1);
      continue;
    }
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        if ((static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n') || c == 0x7F)
          out += "\xEF\xBF\xBD";
        else
          out.append(text.substr(0, n));
    }
    text.remove_prefix(n);
  }
  return out;
}

std::string printable_text(std::string_view text, std::size_t limit) {
  std::string out;
  for (const char c : text) {
    if (out.size() >= limit) return out + "...";
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7F) {
      out += c;
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", u);
      out += buf;
    }
  }
  return out;
}

std::string grouped(std::uint64_t n) {
  std::string digits = std::to_string(n);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string fixed(double value, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, value);
  return buf;
}

std::string bytes(double n) {
  constexpr std::array<const char*, 5> units{"B", "KiB", "MiB", "GiB", "TiB"};
  std::size_t u = 0;
  while (n >= 1024 && u + 1 < units.size())
    n /= 1024, ++u;
  return (u == 0 ? fixed(n, 0) : fixed(n, n < 10 ? 2 : 1)) + " " + units[u];
}

std::string duration(double seconds) {
  const double a = std::fabs(seconds);
  if (a == 0) return "0 s";
  if (a < 1e-6) return fixed(seconds * 1e9, 0) + " ns";
  if (a < 1e-3) return fixed(seconds * 1e6, 2) + " us";
  if (a < 1) return fixed(seconds * 1e3, 2) + " ms";
  return fixed(seconds, 3) + " s";
}

std::string percent(double fraction) {
  return fixed(fraction * 100, 1) + "%";
}

std::string heat(double fraction) {
  // A sequential scale (pale yellow, orange, dark red) that stays distinct on white.
  constexpr std::array<std::array<double, 3>, 4> stops{
      {{255, 237, 160}, {254, 178, 76}, {240, 59, 32}, {128, 0, 38}}};
  const double f = std::clamp(std::isfinite(fraction) ? fraction : 0.0, 0.0, 1.0) *
                   static_cast<double>(stops.size() - 1);
  const auto i = std::min(static_cast<std::size_t>(f), stops.size() - 2);
  const double t = f - static_cast<double>(i);
  char buf[8];
  const auto mix = [&](int k) {
    return static_cast<int>(std::lround(stops[i][static_cast<std::size_t>(k)] * (1 - t) +
                                        stops[i + 1][static_cast<std::size_t>(k)] * t));
  };
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", mix(0), mix(1), mix(2));
  return buf;
}

Table::Table(std::string& out, std::initializer_list<std::string_view> headers) : out_(out) {
  out_ += "<table class=\"data sortable\"><thead><tr>";
  for (const auto h : headers)
    out_ += "<th>" + escape(h) + "</th>";
  out_ += "</tr></thead><tbody>\n";
}

Table::~Table() {
  out_ += "</tbody></table>\n";
}

void Table::row(std::initializer_list<std::string> cells) {
  out_ += "<tr>";
  for (const auto& c : cells)
    out_ += "<td>" + c + "</td>";
  out_ += "</tr>\n";
}

}  // namespace bgl::report

namespace bgl::report {

std::string bar_chart(std::string_view id, const std::vector<Bar>& bars) {
  double top = 0;
  for (const auto& b : bars)
    top = std::max(top, b.value);
  constexpr int kLabel = 170, kBar = 420, kRow = 22;
  const int height = static_cast<int>(bars.size()) * kRow + 4;
  std::string out = "<svg class=\"chart\" id=\"" + escape(id) + "\" viewBox=\"0 0 " +
                    std::to_string(kLabel + kBar + 200) + " " + std::to_string(height) +
                    "\" width=\"" + std::to_string(kLabel + kBar + 200) + "\" height=\"" +
                    std::to_string(height) + "\" role=\"img\">";
  int y = 2;
  for (const auto& b : bars) {
    const double w = top > 0 ? b.value / top * kBar : 0;
    out += "<text x=\"" + std::to_string(kLabel - 6) + "\" y=\"" + std::to_string(y + 15) +
           "\" text-anchor=\"end\">" + escape(b.label) + "</text><rect class=\"bar\" x=\"" +
           std::to_string(kLabel) + "\" y=\"" + std::to_string(y + 3) + "\" width=\"" +
           fixed(std::max(w, b.value > 0 ? 1.0 : 0.0), 1) + "\" height=\"16\"/><text x=\"" +
           fixed(kLabel + w + 6, 1) + "\" y=\"" + std::to_string(y + 15) + "\">" + b.shown +
           "</text>";
    y += kRow;
  }
  return out + "</svg>\n";
}

std::string columns(const std::vector<std::vector<std::string>>& rows, std::string_view indent) {
  std::vector<std::size_t> width;
  for (const auto& r : rows)
    for (std::size_t i = 0; i < r.size(); ++i) {
      if (width.size() <= i) width.push_back(0);
      width[i] = std::max(width[i], r[i].size());
    }
  std::string out;
  for (const auto& r : rows) {
    std::string line(indent);
    for (std::size_t i = 0; i < r.size(); ++i) {
      const std::string pad(width[i] - r[i].size(), ' ');
      line += i == 0 ? r[i] + pad : "  " + pad + r[i];
    }
    while (!line.empty() && line.back() == ' ')
      line.pop_back();
    out += line + "\n";
  }
  return out;
}

}  // namespace bgl::report
