#include "bgl/report/report.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "html.hpp"
#include "page_assets.hpp"
#include "section.hpp"

namespace bgl::report {
namespace {

// Statistics files are a few megabytes at 1,024 tasks; far more is not a statistics file.
constexpr std::size_t kMaxBytes = std::size_t{1} << 30;

// The position of byte `offset` as "line L, column C".
std::string position(std::string_view text, std::size_t offset) {
  offset = std::min(offset, text.size());
  std::size_t line = 1, column = 1;
  for (std::size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n')
      ++line, column = 1;
    else
      ++column;
  }
  return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

void check_top_level(const nlohmann::json& stats) {
  const View root(stats, "");
  if (!stats.is_object())
    root.fail("expected a bglrun statistics object, found " + std::string(stats.type_name()));
  for (const char* required : {"job", "tasks"})
    if (!root.has(required))
      root.fail("missing member \"" + std::string(required) +
                "\": not a bglrun statistics file (bglrun --stats)");
}

}  // namespace

nlohmann::json parse(std::string_view text, std::string_view source) {
  const std::string where(printable_text(source, 256));
  if (text.empty()) throw Error(where + ": the file is empty");
  try {
    auto stats = nlohmann::json::parse(text);
    check_top_level(stats);
    return stats;
  } catch (const nlohmann::json::parse_error& e) {
    // The library's byte is one past the offending one.
    const std::size_t at = e.byte > 0 ? e.byte - 1 : 0;
    const bool truncated = at >= text.size() || e.byte > text.size();
    std::string what = e.what();
    if (const auto p = what.find("syntax error"); p != std::string::npos) what = what.substr(p);
    throw Error(where + ": " +
                (truncated ? "truncated JSON (it ends early): "
                           : "malformed JSON at " + position(text, at) + ": ") +
                printable_text(what, 200));
  } catch (const nlohmann::json::out_of_range& e) {
    // a number too large for a double: the library names the number but not where it is
    std::string what = e.what();
    if (const auto p = what.find("number overflow"); p != std::string::npos) what = what.substr(p);
    throw Error(where + ": malformed JSON: " + printable_text(what, 200));
  } catch (const Error& e) {
    throw Error(where + ": " + e.what());
  }
}

nlohmann::json load(const std::filesystem::path& path) {
  const std::string name = printable_text(path.string(), 256);
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw Error(name + ": is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(name + ": cannot open: " + std::strerror(errno));
  std::string text;
  char buffer[1 << 16];
  while (in.read(buffer, sizeof buffer) || in.gcount() > 0) {
    text.append(buffer, static_cast<std::size_t>(in.gcount()));
    if (text.size() > kMaxBytes)
      throw Error(name + ": larger than " + std::to_string(kMaxBytes >> 20) +
                  " MiB: not a statistics file");
  }
  if (in.bad()) throw Error(name + ": cannot read: " + std::strerror(errno));
  return parse(text, path.string());
}

std::string html(const nlohmann::json& stats, const PageOptions& options) {
  check_top_level(stats);
  const View root(stats, "");
  const auto context = Context::make(root);
  const auto job = root["job"];
  const std::string title = "bglemu run: " + escape(job["shape"].text()) + " " +
                            escape(job["mode"].text()) + ", " +
                            std::to_string(job["tasks"].count()) + " tasks";
  std::string body, contents;
  for (const auto& s : all_sections()) {
    std::string part;
    if (!s.render(context, part)) continue;
    contents += "<a href=\"#" + std::string(s.id) + "\">" + escape(s.title) + "</a>\n";
    body += "<section id=\"" + std::string(s.id) + "\"><h2>" + escape(s.title) + "</h2>\n" + part +
            "</section>\n";
  }
  std::string page =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      // Nothing is fetched: the page carries its style, script and pictures.
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
      "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">\n"
      "<title>" +
      title + "</title>\n<script>" + std::string(kErrorTrap) + "</script>\n<style>" +
      std::string(kStyle) + "</style></head>\n<body>\n";
  page += "<header><h1>" + title + "</h1>";
  if (!options.source.empty())
    page += "<p class=\"source\">from " + escape(options.source) + "</p>";
  page += "<nav>" + contents + "</nav></header>\n<main>\n" + body + "</main>\n<script>" +
          std::string(kScript) + "</script>\n</body></html>\n";
  return page;
}

void write_file(const std::filesystem::path& path, std::string_view text) {
  const std::string name = printable_text(path.string(), 256);
  if (path.empty()) throw Error("cannot write the report: empty path");
  const auto dir = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  std::string temp = (dir / ("." + path.filename().string() + ".XXXXXX")).string();
  const int fd = ::mkostemp(temp.data(), O_CLOEXEC);
  if (fd < 0) throw Error("cannot write " + name + ": " + std::strerror(errno));
  const auto fail = [&](int err) {
    ::close(fd);
    ::unlink(temp.c_str());
    throw Error("cannot write " + name + ": " + std::strerror(err));
  };
  const mode_t mask = ::umask(0);
  ::umask(mask);
  ::fchmod(fd, 0666 & ~mask);
  for (std::size_t done = 0; done < text.size();) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail(errno);
    done += static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(temp.c_str());
    throw Error("cannot write " + name + ": " + std::strerror(err));
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(temp.c_str());
    throw Error("cannot write " + name + ": " + std::strerror(err));
  }
}

}  // namespace bgl::report
