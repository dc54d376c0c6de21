#pragma once
// Small pieces for writing the page: escaping, number formats, colour scales, tables.
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace bgl::report {

// Text for HTML content and attribute values: & < > " ' become entities; control characters
// other than tab and newline, and invalid UTF-8, become U+FFFD.
std::string escape(std::string_view text);
// Text for an error message: printable ASCII, others as \xNN, at most `limit` characters.
std::string printable_text(std::string_view text, std::size_t limit = 80);

// 1234567 -> "1,234,567".
std::string grouped(std::uint64_t n);
// 1536 -> "1.5 KiB".
std::string bytes(double n);
// Seconds in the unit that suits them: "812 ns", "3.25 us", "1.20 ms", "2.500 s".
std::string duration(double seconds);
// `value` with `digits` digits after the point.
std::string fixed(double value, int digits);
// 0.123 -> "12.3%".
std::string percent(double fraction);

// A colour on the report's scale from cool (0) to hot (1), as "#rrggbb".
std::string heat(double fraction);

// Tables: <table class="data sortable"> with a header row; cells are added as ready HTML, so the
// caller escapes text it takes from the statistics.
class Table {
 public:
  // The first column is text, the others numbers (right-aligned, sorted as numbers).
  Table(std::string& out, std::initializer_list<std::string_view> headers);
  ~Table();
  Table(const Table&) = delete;
  Table& operator=(const Table&) = delete;
  void row(std::initializer_list<std::string> cells);

 private:
  std::string& out_;
};

}  // namespace bgl::report

namespace bgl::report {

// Horizontal bars, one per (label, value), longest = the largest value; `shown` is the text after
// each bar (escaped by the caller). An inline SVG of class "chart".
struct Bar {
  std::string label;  // plain text, escaped here
  double value = 0;
  std::string shown;  // ready HTML
};
std::string bar_chart(std::string_view id, const std::vector<Bar>& bars);

// Aligned columns for the terminal: the first column left-aligned, the others right-aligned.
std::string columns(const std::vector<std::vector<std::string>>& rows, std::string_view indent);

}  // namespace bgl::report
