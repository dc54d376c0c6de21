#include "view.hpp"

#include <cmath>

#include "bgl/report/report.hpp"
#include "html.hpp"

namespace bgl::report {
namespace {

std::string_view type_name(const nlohmann::json& v) {
  return v.type_name();
}

// RFC 6901: '~' and '/' in a key are escaped.
std::string pointer_token(std::string_view key) {
  std::string out;
  for (char c : key) {
    if (c == '~')
      out += "~0";
    else if (c == '/')
      out += "~1";
    else
      out += c;
  }
  return out;
}

}  // namespace

View::View(const nlohmann::json& value, std::string pointer)
    : value_(&value), pointer_(std::move(pointer)) {}

void View::fail(std::string_view problem) const {
  throw Error((pointer_.empty() ? std::string("the top level") : pointer_) + ": " +
              std::string(problem));
}

std::optional<View> View::find(std::string_view key) const {
  if (!value_->is_object()) fail("expected an object, found " + std::string(type_name(*value_)));
  const auto it = value_->find(key);
  if (it == value_->end() || it->is_null()) return std::nullopt;
  return View(*it, pointer_ + "/" + pointer_token(key));
}

View View::operator[](std::string_view key) const {
  if (auto v = find(key)) return *v;
  fail("missing member \"" + printable_text(key) + "\"");
}

std::vector<View> View::elements() const {
  if (!value_->is_array()) fail("expected an array, found " + std::string(type_name(*value_)));
  std::vector<View> out;
  out.reserve(value_->size());
  for (std::size_t i = 0; i < value_->size(); ++i)
    out.emplace_back((*value_)[i], pointer_ + "/" + std::to_string(i));
  return out;
}

std::vector<std::pair<std::string, View>> View::members() const {
  if (!value_->is_object()) fail("expected an object, found " + std::string(type_name(*value_)));
  std::vector<std::pair<std::string, View>> out;
  for (const auto& [key, value] : value_->items())
    out.emplace_back(key, View(value, pointer_ + "/" + pointer_token(key)));
  return out;
}

double View::number() const {
  if (!value_->is_number()) fail("expected a number, found " + std::string(type_name(*value_)));
  const double v = value_->get<double>();
  if (!std::isfinite(v)) fail("expected a finite number");
  return v;
}

std::uint64_t View::count() const {
  if (value_->is_number_unsigned()) return value_->get<std::uint64_t>();
  if (value_->is_number_integer() && value_->get<std::int64_t>() >= 0)
    return static_cast<std::uint64_t>(value_->get<std::int64_t>());
  fail("expected a non-negative integer, found " +
       (value_->is_number() ? value_->dump() : std::string(type_name(*value_))));
}

std::int64_t View::integer() const {
  if (value_->is_number_integer() && !value_->is_number_unsigned())
    return value_->get<std::int64_t>();
  if (value_->is_number_unsigned() && value_->get<std::uint64_t>() <= INT64_MAX)
    return static_cast<std::int64_t>(value_->get<std::uint64_t>());
  fail("expected an integer, found " +
       (value_->is_number() ? value_->dump() : std::string(type_name(*value_))));
}

std::string View::text() const {
  if (!value_->is_string()) fail("expected a string, found " + std::string(type_name(*value_)));
  return value_->get<std::string>();
}

bool View::boolean() const {
  if (!value_->is_boolean())
    fail("expected true or false, found " + std::string(type_name(*value_)));
  return value_->get<bool>();
}

std::array<int, 3> View::coord() const {
  const auto e = elements();
  if (e.size() != 3) fail("expected [x, y, z], found " + std::to_string(e.size()) + " elements");
  std::array<int, 3> c{};
  for (std::size_t i = 0; i < 3; ++i) {
    const auto v = e[i].integer();
    if (v < 0 || v > 255) e[i].fail("coordinate " + std::to_string(v) + " out of range 0..255");
    c[i] = static_cast<int>(v);
  }
  return c;
}

double View::number_or(std::string_view key, double fallback) const {
  const auto v = find(key);
  return v ? v->number() : fallback;
}

std::uint64_t View::count_or(std::string_view key, std::uint64_t fallback) const {
  const auto v = find(key);
  return v ? v->count() : fallback;
}

}  // namespace bgl::report
