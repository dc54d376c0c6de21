#pragma once
// Checked access to the statistics JSON: every value is read through a View that knows its JSON
// pointer, so a field that is missing or of the wrong type becomes an Error naming it.
#include <nlohmann/json.hpp>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace bgl::report {

class View {
 public:
  View(const nlohmann::json& value, std::string pointer);

  // A member that must be there.
  View operator[](std::string_view key) const;
  // A member that may be missing (null counts as missing).
  std::optional<View> find(std::string_view key) const;
  bool has(std::string_view key) const { return find(key).has_value(); }

  // The elements of an array.
  std::vector<View> elements() const;
  // The members of an object, in the file's order.
  std::vector<std::pair<std::string, View>> members() const;

  double number() const;
  std::uint64_t count() const;  // a non-negative integer
  std::int64_t integer() const;
  std::string text() const;
  bool boolean() const;
  // [x, y, z], each 0..255.
  std::array<int, 3> coord() const;

  // Optional members with a fallback.
  double number_or(std::string_view key, double fallback) const;
  std::uint64_t count_or(std::string_view key, std::uint64_t fallback) const;

  const std::string& pointer() const { return pointer_; }
  const nlohmann::json& json() const { return *value_; }

  [[noreturn]] void fail(std::string_view problem) const;

 private:
  const nlohmann::json* value_;
  std::string pointer_;
};

}  // namespace bgl::report
