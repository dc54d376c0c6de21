#include "pmi_server.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "bgl/job_runtime/log.hpp"
#include "bgl/torus_emu/error.hpp"
#include "bgl/torus_emu/user_text.hpp"
#include "pmi_client.hpp"

namespace bgl::bglrun {
namespace {

// Longest PMI-1 command line MPICH's client writes (PMIU_MAXLINE) and then some.
constexpr std::size_t kMaxLine = 4096;

// The hand-over channel's message: a client's index with its socket attached (SCM_RIGHTS).
struct Handover {
  std::uint32_t index = 0;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  iovec data{&index, sizeof index};
  msghdr header{};

  Handover() {
    header.msg_iov = &data;
    header.msg_iovlen = 1;
    header.msg_control = control;
    header.msg_controllen = sizeof control;
  }
  Handover(const Handover&) = delete;  // points into itself
  Handover& operator=(const Handover&) = delete;
};

bool send_descriptor(int socket, std::uint32_t index, int fd) {
  Handover m;
  m.index = index;
  cmsghdr* c = CMSG_FIRSTHDR(&m.header);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
  ssize_t n;
  while ((n = sendmsg(socket, &m.header, MSG_NOSIGNAL)) < 0 && errno == EINTR) {
  }
  return n == static_cast<ssize_t>(sizeof m.index);
}

}  // namespace

std::optional<std::size_t> PmiServer::receive_client() {
  Handover m;
  const ssize_t n = recvmsg(handover_[1], &m.header, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
  int fd = -1;
  if (const cmsghdr* c = CMSG_FIRSTHDR(&m.header);
      n >= 0 && c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
    std::memcpy(&fd, CMSG_DATA(c), sizeof fd);
  const std::uint32_t index = m.index;
  if (n != static_cast<ssize_t>(sizeof index) || fd < 0 || index >= clients_.size() ||
      clients_[index].fd >= 0) {
    if (fd >= 0) close(fd);
    return std::nullopt;
  }
  clients_[index].fd = fd;
  return index;
}

std::string PmiServer::process_mapping(const std::vector<int>& host_of_rank,
                                       std::size_t max_chars) {
  std::string out = "(vector";
  for (std::size_t r = 0; r < host_of_rank.size();) {
    std::size_t end = r;
    while (end < host_of_rank.size() && host_of_rank[end] == host_of_rank[r])
      ++end;
    out += ",(" + std::to_string(host_of_rank[r]) + ",1," + std::to_string(end - r) + ")";
    r = end;
    if (out.size() + 1 >= max_chars) return {};
  }
  return out + ")";
}

PmiServer::PmiServer(JobStore& upstream, std::vector<int> local_ranks,
                     const std::vector<int>& host_of_rank, std::function<std::string(int)> describe)
    : upstream_(upstream),
      describe_(std::move(describe)),
      world_size_(static_cast<int>(host_of_rank.size())),
      kvs_name_(upstream.kvs_name()) {
  if (local_ranks.empty()) throw std::logic_error("PmiServer: no ranks on this host");
  maxes_ = upstream_.maxes();
  mapping_ = process_mapping(host_of_rank, static_cast<std::size_t>(maxes_.value));
  std::sort(local_ranks.begin(), local_ranks.end());
  for (int rank : local_ranks)
    clients_.push_back(Client{rank});
  // The serving thread holds a socket per rank: 1,024 ranks need more than the usual soft limit.
  getrlimit(RLIMIT_NOFILE, &descriptor_limit_);
  const rlim_t want = clients_.size() + 256;
  if (descriptor_limit_.rlim_cur != RLIM_INFINITY && descriptor_limit_.rlim_cur < want) {
    const rlimit raised{std::min(want, descriptor_limit_.rlim_max), descriptor_limit_.rlim_max};
    setrlimit(RLIMIT_NOFILE, &raised);
  }
  stop_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (stop_fd_ < 0) throw std::runtime_error(std::string("eventfd: ") + std::strerror(errno));
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, handover_) != 0)
    throw std::runtime_error(std::string("socketpair: ") + std::strerror(errno));
}

PmiServer::~PmiServer() {
  stop();
  // The clients' sockets were the serving thread's, which closed them.
  after_fork();
  for (const int fd : {stop_fd_, handover_[0], handover_[1]})
    if (fd >= 0) close(fd);
}

bool PmiServer::connect(int rank) {
  const auto it = std::lower_bound(clients_.begin(), clients_.end(), rank,
                                   [](const Client& c, int r) { return c.rank < r; });
  if (it == clients_.end() || it->rank != rank) {
    errno = EINVAL;
    return false;
  }
  after_fork();  // a previous rank's end, if its fork was skipped
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) return false;
  const auto index = static_cast<std::uint32_t>(it - clients_.begin());
  const bool sent = send_descriptor(handover_[0], index, fds[0]);
  const int error = errno;
  close(fds[0]);  // the serving thread has its own copy now
  if (!sent) {
    close(fds[1]);
    errno = error;
    return false;
  }
  pending_task_fd_ = fds[1];
  pending_rank_ = rank;
  return true;
}

bool PmiServer::prepare_task(int rank) const {
  // In the task's process after fork: no allocation beyond what setenv does.
  if (rank != pending_rank_ || pending_task_fd_ < 0) return false;
  const int fd = dup(pending_task_fd_);  // without close-on-exec
  if (fd < 0) return false;
  char text[16];
  std::snprintf(text, sizeof text, "%d", fd);
  setenv("PMI_FD", text, 1);
  std::snprintf(text, sizeof text, "%d", rank);
  setenv("PMI_RANK", text, 1);
  std::snprintf(text, sizeof text, "%d", world_size_);
  setenv("PMI_SIZE", text, 1);
  unsetenv("PMI_PORT");
  unsetenv("PMI_ID");
  setrlimit(RLIMIT_NOFILE, &descriptor_limit_);
  return true;
}

void PmiServer::after_fork() {
  if (pending_task_fd_ >= 0) close(std::exchange(pending_task_fd_, -1));
  pending_rank_ = -1;
}

void PmiServer::start() {
  thread_ = std::thread([this] {
    own_descriptor_table();
    table_owned_.store(true);
    table_owned_.notify_one();
    try {
      serve();
    } catch (const std::exception& e) {
      set_fault(std::string("the job-wide PMI key-value store failed: ") + e.what());
    }
    for (auto& c : clients_)
      if (c.fd >= 0) close(std::exchange(c.fd, -1));
    done_ = true;
  });
  // From here on the launcher's new descriptors (the ranks' ends) are not in the server's table.
  table_owned_.wait(false);
}

void PmiServer::stop() {
  if (!thread_.joinable()) return;
  stopping_ = true;
  const std::uint64_t one = 1;
  [[maybe_unused]] const auto n = write(stop_fd_, &one, sizeof one);
  // A barrier or get upstream waits for other hosts, which may be gone: make it fail. Other
  // calls (put, finalize) are answered by this host's proxy at once; one that is not within
  // seconds is abandoned too.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!done_) {
    if ((in_upstream_ || std::chrono::steady_clock::now() > give_up) && !abandoned_) {
      upstream_.abandon();
      abandoned_ = true;
    }
    usleep(2000);
  }
  thread_.join();
  // Every rank gone without finishing PMI (the job failed here): leave the store the usual way,
  // so that the process manager does not take this host for dead.
  if (!abandoned_ && !upstream_.finalized()) {
    try {
      upstream_.finalize();
    } catch (const std::exception&) {
      // the process manager is gone already
    }
  }
}

std::optional<std::string> PmiServer::fault() const {
  std::lock_guard lock(fault_mutex_);
  return fault_;
}

void PmiServer::set_fault(const std::string& what, int status) {
  std::lock_guard lock(fault_mutex_);
  if (fault_) return;
  fault_ = what;
  fault_status_ = status;
}

template <typename F>
auto PmiServer::waiting_for_hosts(F&& f) -> decltype(f()) {
  in_upstream_ = true;
  struct Clear {
    std::atomic<bool>& flag;
    ~Clear() { flag = false; }
  } clear{in_upstream_};
  return f();
}

void PmiServer::own_descriptor_table() const {
  // A copy of the launcher's table as it is now (the upstream store's connection, the stop and
  // hand-over sockets), released when this thread ends.
  if (unshare(CLONE_FILES) != 0)
    spdlog::warn(
        "the PMI server shares the launcher's descriptors (unshare: {}): each rank "
        "inherits the earlier ranks' PMI sockets",
        std::strerror(errno));
}

void PmiServer::serve() {
  const int epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd < 0) throw std::runtime_error(std::string("epoll_create1: ") + std::strerror(errno));
  const struct Closer {
    int fd;
    ~Closer() { close(fd); }
  } closer{epoll_fd};
  // Events name a client by its index; the two others by these.
  constexpr std::uint64_t kStop = ~std::uint64_t{0}, kHandover = kStop - 1;
  const auto watch = [&](int fd, std::uint64_t id) {
    epoll_event e{};
    e.events = EPOLLIN;
    e.data.u64 = id;
    if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &e) != 0)
      throw std::runtime_error(std::string("epoll_ctl: ") + std::strerror(errno));
  };
  watch(stop_fd_, kStop);
  watch(handover_[1], kHandover);
  std::array<epoll_event, 64> events;
  while (!stopping_) {
    const int n = epoll_wait(epoll_fd, events.data(), static_cast<int>(events.size()), -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error(std::string("epoll_wait: ") + std::strerror(errno));
    }
    for (int i = 0; i < n; ++i) {
      const std::uint64_t id = events[static_cast<std::size_t>(i)].data.u64;
      if (id == kStop) return;
      if (id == kHandover) {
        if (const auto c = receive_client()) watch(clients_[*c].fd, *c);
      } else if (!clients_[id].closed) {
        read_from(clients_[id]);
      }
    }
    barrier_if_complete();
    finalize_if_complete();
    if (upstream_.finalized()) return;  // every rank finished PMI
  }
}

void PmiServer::read_from(Client& c) {
  char buf[4096];
  const ssize_t n = read(c.fd, buf, sizeof buf);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
  if (n <= 0) {
    // The rank ended (or closed its connection); bglrun's supervisor names a rank that failed.
    close_client(c);
    return;
  }
  c.input.append(buf, static_cast<std::size_t>(n));
  for (std::size_t nl; !c.closed && (nl = c.input.find('\n')) != std::string::npos;) {
    const std::string line = c.input.substr(0, nl + 1);
    c.input.erase(0, nl + 1);
    handle(c, line);
  }
  if (!c.closed && c.input.size() > kMaxLine) {
    set_fault(describe_(c.rank) + " sent a PMI command longer than " + std::to_string(kMaxLine) +
              " bytes");
    close_client(c);
  }
}

void PmiServer::close_client(Client& c) {
  if (c.closed) return;
  c.closed = true;
  c.in_barrier = false;
  close(std::exchange(c.fd, -1));
}

void PmiServer::reply(Client& c, const std::string& line) {
  for (std::size_t done = 0; done < line.size();) {
    const ssize_t n = send(c.fd, line.data() + done, line.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      close_client(c);
      return;
    }
    done += static_cast<std::size_t>(n);
  }
}

void PmiServer::handle(Client& c, const std::string& line) {
  const std::string cmd = PmiClient::field(line, "cmd");
  if (cmd == "init") {
    reply(c, "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0\n");
  } else if (cmd == "get_maxes") {
    reply(c, "cmd=maxes kvsname_max=" + std::to_string(maxes_.kvsname) + " keylen_max=" +
                 std::to_string(maxes_.key) + " vallen_max=" + std::to_string(maxes_.value) + "\n");
  } else if (cmd == "get_appnum") {
    reply(c, "cmd=appnum appnum=0\n");
  } else if (cmd == "get_my_kvsname") {
    reply(c, "cmd=my_kvsname kvsname=" + kvs_name_ + "\n");
  } else if (cmd == "get_universe_size") {
    reply(c, "cmd=universe_size size=" + std::to_string(world_size_) + "\n");
  } else if (cmd == "put") {
    const std::string key = PmiClient::field(line, "key"), value = PmiClient::field(line, "value");
    local_kvs_[key] = value;
    upstream_.put(key, value);
    reply(c, "cmd=put_result rc=0\n");
  } else if (cmd == "get") {
    const std::string key = PmiClient::field(line, "key");
    std::optional<std::string> value;
    if (const auto it = local_kvs_.find(key); it != local_kvs_.end())
      value = it->second;
    else if (key == "PMI_process_mapping")
      value = mapping_.empty() ? std::nullopt : std::optional(mapping_);
    else
      value = waiting_for_hosts([&] { return upstream_.find(key); });
    reply(c, value ? "cmd=get_result rc=0 value=" + *value + "\n"
                   : "cmd=get_result rc=-1 msg=key_" + key + "_not_found\n");
  } else if (cmd == "barrier_in") {
    c.in_barrier = true;
  } else if (cmd == "finalize") {
    c.finalized = true;
    reply(c, "cmd=finalize_ack\n");
  } else if (cmd == "abort") {
    const int code = std::atoi(PmiClient::field(line, "exitcode").c_str());
    // As Hydra: the job ends with the abort's code; the rank waits for no answer.
    set_fault(describe_(c.rank) + " called MPI_Abort (or hit a fatal MPI error) with code " +
                  std::to_string(code),
              code > 0 && code < 256 ? code : 1);
  } else {
    set_fault(describe_(c.rank) + " sent a PMI command bglrun does not serve: '" +
              printable(line.substr(0, std::min<std::size_t>(line.size() - 1, 80))) +
              "' (dynamic processes and name publishing are not supported: the partition is fixed "
              "when bglrun starts it)");
    // The answer the client waits for ("publish_name" -> "publish_result"), failed.
    const auto verb = cmd.substr(0, cmd.find('_'));
    reply(c, "cmd=" + (cmd.empty() ? std::string("error") : verb + "_result") +
                 " rc=-1 msg=unsupported\n");
  }
}

// Ranks still connected all entered the barrier: the host enters the job-wide one, then lets them
// go. A rank that ended meanwhile fails the job (its supervisor says so), so it is not waited for.
void PmiServer::barrier_if_complete() {
  bool any = false;
  for (const auto& c : clients_) {
    if (c.closed) continue;
    if (!c.in_barrier) return;
    any = true;
  }
  if (!any) return;
  waiting_for_hosts([&] { upstream_.barrier(); });
  for (auto& c : clients_) {
    if (c.closed) continue;
    c.in_barrier = false;
    reply(c, "cmd=barrier_out\n");
  }
}

void PmiServer::finalize_if_complete() {
  if (upstream_.finalized()) return;
  if (!std::all_of(clients_.begin(), clients_.end(), [](const Client& c) { return c.finalized; }))
    return;
  upstream_.finalize();
}

}  // namespace bgl::bglrun
