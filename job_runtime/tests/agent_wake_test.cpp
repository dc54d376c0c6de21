// How a task finds the eventfd that wakes its host's sleeping libfabric agent.
#include "bgl/job_runtime/agent_wake.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>

#include "bgl/torus_emu/error.hpp"

namespace bgl::job_runtime {
namespace {

// One test: the inherited descriptor is checked once per process.
TEST(AgentWake, InheritedDescriptorIsCheckedAndARegisteredAgentWins) {
  Doorbell bell, other;
  // A malformed value is an error naming the variable (and is checked again on the next call).
  ::setenv("BGL_AGENT_FD", "seven", 1);
  try {
    agent_wake_fd(bell);
    FAIL() << "a malformed BGL_AGENT_FD was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("BGL_AGENT_FD"), std::string::npos) << e.what();
  }
  // A descriptor that is not an eventfd (the program closed the inherited one and opened a file
  // under its number) is never written to: ignored.
  const int file = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  ASSERT_GE(file, 0);
  ::setenv("BGL_AGENT_FD", std::to_string(file).c_str(), 1);
  EXPECT_EQ(agent_wake_fd(bell), -1);
  // An agent in this process registers its eventfd for its own bell only.
  const int efd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  ASSERT_GE(efd, 0);
  register_agent_wake(bell, efd);
  EXPECT_EQ(agent_wake_fd(bell), efd);
  EXPECT_EQ(agent_wake_fd(other), -1);
  // A ring with the agent asleep writes the eventfd; without a sleeper it does not.
  ring_agent(bell);
  std::uint64_t count = 0;
  EXPECT_EQ(::read(efd, &count, sizeof count), -1);
  bell.arm();
  ring_agent(bell);
  ASSERT_EQ(::read(efd, &count, sizeof count), static_cast<ssize_t>(sizeof count));
  EXPECT_EQ(count, 1u);
  EXPECT_EQ(bell.rings.load(), 1u);
  unregister_agent_wake(bell);
  EXPECT_EQ(agent_wake_fd(bell), -1);
  ::unsetenv("BGL_AGENT_FD");
  ::close(efd);
  ::close(file);
}

}  // namespace
}  // namespace bgl::job_runtime
