#include "pmi_client.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "bgl/job_runtime/env.hpp"
#include "bgl/torus_emu/error.hpp"

namespace bgl::bglrun {

std::optional<PmiClient> PmiClient::from_environment() {
  const auto fd = job_runtime::env::get_int("PMI_FD", 0, 1 << 20);
  if (!fd) return std::nullopt;
  const auto rank = job_runtime::env::get_int("PMI_RANK", 0, 1 << 24);
  const auto size = job_runtime::env::get_int("PMI_SIZE", 1, 1 << 24);
  if (!rank || !size || *rank >= *size)
    throw ConfigError("PMI_FD is set but PMI_RANK/PMI_SIZE are missing or inconsistent");
  PmiClient c(static_cast<int>(*fd), static_cast<int>(*rank), static_cast<int>(*size));
  // Not the tasks': a task that outlived this bglrun would keep the connection open, and the
  // process manager would never learn that this host is gone.
  fcntl(c.fd_, F_SETFD, fcntl(c.fd_, F_GETFD) | FD_CLOEXEC);
  c.command("cmd=init pmi_version=1 pmi_subversion=1\n", "response_to_init");
  c.kvs_ = field(c.command("cmd=get_my_kvsname\n", "my_kvsname"), "kvsname");
  if (c.kvs_.empty()) throw ConfigError("PMI: the process manager sent no KVS name");
  return c;
}

PmiClient::PmiClient(PmiClient&& o) noexcept
    : fd_(std::exchange(o.fd_, -1)),
      rank_(o.rank_),
      size_(o.size_),
      kvs_(std::move(o.kvs_)),
      finalized_(std::exchange(o.finalized_, true)) {}

PmiClient::~PmiClient() {
  if (fd_ >= 0 && !finalized_) {
    try {
      finalize();
    } catch (...) {
      // the process manager is gone; nothing to tell it
    }
  }
}

std::string PmiClient::field(const std::string& line, const std::string& name) {
  const std::string key = name + "=";
  for (std::size_t at = 0; (at = line.find(key, at)) != std::string::npos; ++at) {
    if (at != 0 && line[at - 1] != ' ') continue;
    const auto start = at + key.size();
    return line.substr(start, line.find_first_of(" \n", start) - start);
  }
  return {};
}

std::string PmiClient::command(const std::string& line, const std::string& expect, bool check_rc) {
  for (std::size_t done = 0; done < line.size();) {
    const ssize_t n = write(fd_, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      throw ConfigError("PMI: cannot talk to the process manager: " +
                        std::string(std::strerror(errno)));
    done += static_cast<std::size_t>(n);
  }
  std::string reply;
  for (char c = 0; c != '\n';) {
    const ssize_t n = read(fd_, &c, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      throw ConfigError("PMI: the process manager closed the connection (waiting for " + expect +
                        ")");
    reply.push_back(c);
    if (reply.size() > 4096) throw ConfigError("PMI: reply too long");
  }
  if (field(reply, "cmd") != expect)
    throw ConfigError("PMI: expected " + expect + ", got '" + reply.substr(0, reply.size() - 1) +
                      "'");
  if (const auto rc = field(reply, "rc"); check_rc && !rc.empty() && rc != "0")
    throw ConfigError("PMI: " + expect + " failed: '" + reply.substr(0, reply.size() - 1) + "'");
  return reply;
}

void PmiClient::put(const std::string& key, const std::string& value) {
  command("cmd=put kvsname=" + kvs_ + " key=" + key + " value=" + value + "\n", "put_result");
}

std::string PmiClient::get(const std::string& key) {
  return field(command("cmd=get kvsname=" + kvs_ + " key=" + key + "\n", "get_result"), "value");
}

std::optional<std::string> PmiClient::find(const std::string& key) {
  const auto reply = command("cmd=get kvsname=" + kvs_ + " key=" + key + "\n", "get_result", false);
  if (field(reply, "rc") != "0") return std::nullopt;
  return field(reply, "value");
}

PmiClient::Maxes PmiClient::maxes() {
  const auto reply = command("cmd=get_maxes\n", "maxes");
  Maxes m;
  const auto number = [&](const char* name, int fallback) {
    const auto v = field(reply, name);
    const int n = v.empty() ? 0 : std::atoi(v.c_str());
    return n > 0 ? n : fallback;
  };
  m.kvsname = number("kvsname_max", m.kvsname);
  m.key = number("keylen_max", m.key);
  m.value = number("vallen_max", m.value);
  return m;
}

void PmiClient::abandon() {
  if (fd_ >= 0) shutdown(fd_, SHUT_RDWR);
}

void PmiClient::barrier() {
  command("cmd=barrier_in\n", "barrier_out");
}

void PmiClient::finalize() {
  finalized_ = true;
  command("cmd=finalize\n", "finalize_ack");
}

}  // namespace bgl::bglrun
