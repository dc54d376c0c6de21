#include "bgl/torus_emu/input_file.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "bgl/torus_emu/error.hpp"
#include "bgl/torus_emu/user_text.hpp"

namespace bgl {
namespace {

using ::testing::HasSubstr;

std::string error_of(const std::filesystem::path& path, std::size_t limit = kMaxInputFileBytes) {
  try {
    read_input_file(path, "test file", limit);
  } catch (const ConfigError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a ConfigError for " << path;
  return "";
}

class InputFile : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = ::testing::TempDir() + "/bgl_input_file_XXXXXX";
    dir_ = mkdtemp(pattern.data());
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name, std::ios::binary) << text;
    return dir_ / name;
  }
  std::filesystem::path dir_;
};

TEST_F(InputFile, ReadsARegularFileWhole) {
  const std::string text("line 1\n\0binary\xff\n", 16);
  EXPECT_EQ(read_input_file(write("a", text), "test file"), text);
  EXPECT_EQ(read_input_file(write("empty", ""), "test file"), "");
}

TEST_F(InputFile, ReadsUpToTheLimitAndNotAByteMore) {
  const auto path = write("ten", std::string(10, 'x'));
  EXPECT_EQ(read_input_file(path, "test file", 10).size(), 10u);
  EXPECT_EQ(error_of(path, 9), "cannot read test file " + path.string() +
                                   ": it is 10 bytes, more than the limit of 9 "
                                   "bytes");
}

TEST_F(InputFile, ReadsFilesWhoseSizeIsNotKnownInAdvance) {
  // /proc files say 0 bytes; they are read until their end, within the limit.
  EXPECT_THAT(read_input_file("/proc/self/status", "test file"), HasSubstr("Pid:"));
  EXPECT_THAT(error_of("/proc/self/status", 16), HasSubstr("it grew past the limit of 16 bytes"));
}

TEST_F(InputFile, RefusesAFifoWithoutWaitingForAWriter) {
  const auto fifo = dir_ / "f";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(error_of(fifo), "cannot read test file " + fifo.string() +
                                ": it is a FIFO (named pipe), not a regular "
                                "file");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
}

TEST_F(InputFile, RefusesDevicesDirectoriesAndMissingFiles) {
  EXPECT_THAT(error_of("/dev/zero"), HasSubstr("/dev/zero: it is a character device, not a"));
  EXPECT_THAT(error_of("/dev/urandom"), HasSubstr("it is a character device"));
  EXPECT_THAT(error_of(dir_), HasSubstr("it is a directory, not a regular file"));
  EXPECT_THAT(error_of(dir_ / "missing"), HasSubstr("missing: No such file or directory"));
  const auto file = write("plain", "x");
  EXPECT_THAT(error_of(file / "below"), HasSubstr("Not a directory"));
}

TEST_F(InputFile, FollowsSymbolicLinksToRegularFiles) {
  const auto target = write("target", "content");
  std::filesystem::create_symlink(target, dir_ / "link");
  EXPECT_EQ(read_input_file(dir_ / "link", "test file"), "content");
  std::filesystem::create_symlink("/dev/zero", dir_ / "zero");
  EXPECT_THAT(error_of(dir_ / "zero"), HasSubstr("character device"));
}

TEST_F(InputFile, EscapesThePathInErrors) {
  const auto path = dir_ / "a\x1b[2Jb";
  EXPECT_THAT(error_of(path), HasSubstr("a\\x1b[2Jb: No such file or directory"));
}

TEST(Printable, EscapesControlAndNonAsciiBytes) {
  EXPECT_EQ(printable("plain text 123"), "plain text 123");
  EXPECT_EQ(printable(std::string_view("a\0b", 3)), "a\\0b");
  EXPECT_EQ(printable("\x1b[31mred\x7f"), "\\x1b[31mred\\x7f");
  EXPECT_EQ(printable("tab\there\nnl\r"), "tab\\there\\nnl\\r");
  EXPECT_EQ(printable("caf\xc3\xa9"), "caf\\xc3\\xa9");
}

TEST(Printable, CutsLongTextAndGivesItsLength) {
  EXPECT_EQ(printable(std::string(kEchoLimit, 'x')), std::string(kEchoLimit, 'x'));
  EXPECT_EQ(printable(std::string(1 << 20, 'x')),
            std::string(kEchoLimit, 'x') + "... (1048576 bytes)");
  EXPECT_EQ(printable("abcdef", 3), "abc... (6 bytes)");
}

TEST(Printable, WholeMessagesKeepTheirLineBreaks) {
  EXPECT_EQ(printable_message(std::string_view("line 1\nline\x1b 2\0", 15)),
            "line 1\nline\\x1b 2\\0");
}

}  // namespace
}  // namespace bgl
