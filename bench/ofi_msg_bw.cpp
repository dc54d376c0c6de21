// libfabric's own streaming floor, measured the way fabtests' fi_msg_bw measures it (fabtests is
// not packaged in Debian 12): a sender posts a window of `--window` messages of `--size` bytes on
// an RDM endpoint, waits for their completions, and after each window the receiver, which keeps a
// window of receives posted, answers with a small acknowledgement; both sides poll their
// completion queue busily, as fabtests does by default. The sender and the receiver are two
// processes (forked), on 127.0.0.1 unless --address says otherwise, exchanging their libfabric
// addresses over a pipe. Prints the payload bandwidth in MB/s and messages per second.
//   ofi_msg_bw [--size B] [--window W] [--iterations N] [--warmup N] [--address A] [--json]
// FI_PROVIDER picks the provider (default tcp;ofi_rxm, bglemu's).
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

struct Options {
  std::size_t size = 256;
  int window = 64;
  int iterations = 1000;
  int warmup = 10;
  std::string address = "127.0.0.1";
  bool json = false;
};

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr,
               "ofi_msg_bw: %s\nusage: ofi_msg_bw [--size B] [--window W] [--iterations N] "
               "[--warmup N] [--address A] [--json]\n",
               why.c_str());
  std::exit(2);
}

long number(const char* text, long min, long max, const char* what) {
  char* end = nullptr;
  const long v = std::strtol(text, &end, 10);
  if (!end || *end || v < min || v > max)
    usage(std::string(what) + " '" + text + "': expected " + std::to_string(min) + ".." +
          std::to_string(max));
  return v;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto value = [&]() -> const char* {
      if (i + 1 >= argc) usage(a + " needs a value");
      return argv[++i];
    };
    if (a == "--size")
      o.size = static_cast<std::size_t>(number(value(), 1, 1 << 20, "--size"));
    else if (a == "--window")
      o.window = static_cast<int>(number(value(), 1, 4096, "--window"));
    else if (a == "--iterations")
      o.iterations = static_cast<int>(number(value(), 1, 1 << 24, "--iterations"));
    else if (a == "--warmup")
      o.warmup = static_cast<int>(number(value(), 0, 1 << 20, "--warmup"));
    else if (a == "--address")
      o.address = value();
    else if (a == "--json")
      o.json = true;
    else
      usage("unknown option " + a);
  }
  return o;
}

void check(int rc, const char* what) {
  if (rc) throw std::runtime_error(std::string(what) + ": " + fi_strerror(-rc));
}

// One side's endpoint, the same attributes as bglemu's agent (RDM, messages, send-after-send).
class Side {
 public:
  Side(const Options& o, std::size_t buffers) : o_(o) {
    fi_info* hints = fi_allocinfo();
    hints->ep_attr->type = FI_EP_RDM;
    hints->caps = FI_MSG;
    hints->mode = FI_CONTEXT | FI_CONTEXT2;
    hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_VIRT_ADDR;
    hints->domain_attr->threading = FI_THREAD_DOMAIN;
    hints->tx_attr->msg_order = FI_ORDER_SAS;
    hints->rx_attr->msg_order = FI_ORDER_SAS;
    if (!std::getenv("FI_PROVIDER")) hints->fabric_attr->prov_name = strdup("tcp;ofi_rxm");
    const int rc =
        fi_getinfo(FI_VERSION(1, 9), o.address.c_str(), nullptr, FI_SOURCE, hints, &info_);
    fi_freeinfo(hints);
    check(rc, "fi_getinfo");
    check(fi_fabric(info_->fabric_attr, &fabric_, nullptr), "fi_fabric");
    check(fi_domain(fabric_, info_, &domain_, nullptr), "fi_domain");
    fi_cq_attr cq_attr{};
    cq_attr.format = FI_CQ_FORMAT_CONTEXT;
    cq_attr.size = 4096;
    check(fi_cq_open(domain_, &cq_attr, &cq_, nullptr), "fi_cq_open");
    fi_av_attr av_attr{};
    av_attr.type = FI_AV_TABLE;
    check(fi_av_open(domain_, &av_attr, &av_, nullptr), "fi_av_open");
    check(fi_endpoint(domain_, info_, &ep_, nullptr), "fi_endpoint");
    check(fi_ep_bind(ep_, &av_->fid, 0), "fi_ep_bind(av)");
    check(fi_ep_bind(ep_, &cq_->fid, FI_TRANSMIT | FI_RECV), "fi_ep_bind(cq)");
    check(fi_enable(ep_), "fi_enable");
    memory_.resize(buffers * o.size + 64);
    contexts_.resize(buffers);
    if (info_->domain_attr->mr_mode & FI_MR_LOCAL) {
      check(fi_mr_reg(domain_, memory_.data(), memory_.size(), FI_SEND | FI_RECV, 0, 0, 0, &mr_,
                      nullptr),
            "fi_mr_reg");
      desc_ = fi_mr_desc(mr_);
    }
  }
  ~Side() {
    for (fid* f : {ep_ ? &ep_->fid : nullptr, mr_ ? &mr_->fid : nullptr, av_ ? &av_->fid : nullptr,
                   cq_ ? &cq_->fid : nullptr, domain_ ? &domain_->fid : nullptr,
                   fabric_ ? &fabric_->fid : nullptr})
      if (f) fi_close(f);
    if (info_) fi_freeinfo(info_);
  }
  Side(const Side&) = delete;
  Side& operator=(const Side&) = delete;

  std::vector<char> name() const {
    std::vector<char> out(256);
    std::size_t len = out.size();
    check(fi_getname(&ep_->fid, out.data(), &len), "fi_getname");
    out.resize(len);
    return out;
  }
  void connect(const std::vector<char>& peer) {
    if (fi_av_insert(av_, peer.data(), 1, &peer_, 0, nullptr) != 1)
      throw std::runtime_error("fi_av_insert failed");
  }
  void post_recv(std::size_t i, std::size_t bytes) {
    while (fi_recv(ep_, buffer(i), bytes, desc_, FI_ADDR_UNSPEC, &contexts_[i]) == -FI_EAGAIN)
      progress();
  }
  void post_send(std::size_t i, std::size_t bytes) {
    while (fi_send(ep_, buffer(i), bytes, desc_, peer_, &contexts_[i]) == -FI_EAGAIN)
      progress();
  }
  // Busy-polls until `n` completions have been read.
  void wait(int n) {
    std::array<fi_cq_entry, 64> entries;
    while (n > 0) {
      const auto got = fi_cq_read(cq_, entries.data(), entries.size());
      if (got > 0) {
        n -= static_cast<int>(got);
      } else if (got != -FI_EAGAIN) {
        fi_cq_err_entry err{};
        fi_cq_readerr(cq_, &err, 0);
        throw std::runtime_error(std::string("completion error: ") + fi_strerror(err.err));
      }
    }
  }

 private:
  void progress() { fi_cq_read(cq_, nullptr, 0); }
  char* buffer(std::size_t i) { return memory_.data() + i * o_.size; }

  const Options& o_;
  fi_info* info_ = nullptr;
  fid_fabric* fabric_ = nullptr;
  fid_domain* domain_ = nullptr;
  fid_cq* cq_ = nullptr;
  fid_av* av_ = nullptr;
  fid_ep* ep_ = nullptr;
  fid_mr* mr_ = nullptr;
  void* desc_ = nullptr;
  fi_addr_t peer_ = FI_ADDR_UNSPEC;
  std::vector<char> memory_;
  std::vector<fi_context2> contexts_;
};

void write_all(int fd, const std::vector<char>& bytes) {
  const auto n = static_cast<std::uint32_t>(bytes.size());
  if (write(fd, &n, sizeof n) != sizeof n ||
      write(fd, bytes.data(), bytes.size()) != static_cast<ssize_t>(bytes.size()))
    throw std::runtime_error("address exchange: write failed");
}

std::vector<char> read_all(int fd) {
  std::uint32_t n = 0;
  if (read(fd, &n, sizeof n) != sizeof n || n > 4096)
    throw std::runtime_error("address exchange: read failed");
  std::vector<char> out(n);
  if (read(fd, out.data(), n) != static_cast<ssize_t>(n))
    throw std::runtime_error("address exchange: read failed");
  return out;
}

// The receiver: a window of receives per round, then the acknowledgement.
void receiver(const Options& o, int to_sender, int from_sender) {
  Side side(o, static_cast<std::size_t>(o.window) + 1);
  write_all(to_sender, side.name());
  side.connect(read_all(from_sender));
  const auto ack = static_cast<std::size_t>(o.window);
  for (int round = 0; round < o.warmup + o.iterations; ++round) {
    for (int i = 0; i < o.window; ++i)
      side.post_recv(static_cast<std::size_t>(i), o.size);
    side.wait(o.window);
    side.post_send(ack, 4);
    side.wait(1);
  }
}

double sender(const Options& o, int to_receiver, int from_receiver) {
  Side side(o, static_cast<std::size_t>(o.window) + 1);
  const auto peer = read_all(from_receiver);
  write_all(to_receiver, side.name());
  side.connect(peer);
  const auto ack = static_cast<std::size_t>(o.window);
  std::chrono::steady_clock::time_point start;
  for (int round = 0; round < o.warmup + o.iterations; ++round) {
    if (round == o.warmup) start = std::chrono::steady_clock::now();
    side.post_recv(ack, 4);
    for (int i = 0; i < o.window; ++i)
      side.post_send(static_cast<std::size_t>(i), o.size);
    side.wait(o.window + 1);  // the sends and the acknowledgement
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  int down[2], up[2];  // sender -> receiver, receiver -> sender
  if (pipe(down) || pipe(up)) {
    std::perror("ofi_msg_bw: pipe");
    return 1;
  }
  std::fflush(nullptr);
  const pid_t child = fork();
  if (child < 0) {
    std::perror("ofi_msg_bw: fork");
    return 1;
  }
  if (child == 0) {
    try {
      receiver(o, up[1], down[0]);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "ofi_msg_bw receiver: %s\n", e.what());
      _exit(1);
    }
    _exit(0);
  }
  double seconds = 0;
  try {
    seconds = sender(o, down[1], up[0]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ofi_msg_bw sender: %s\n", e.what());
    kill(child, SIGKILL);
    waitpid(child, nullptr, 0);
    return 1;
  }
  int status = 0;
  waitpid(child, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "ofi_msg_bw: the receiver failed\n");
    return 1;
  }
  const double messages = static_cast<double>(o.iterations) * o.window;
  const double mbps = messages * static_cast<double>(o.size) / seconds / 1e6;
  if (o.json) {
    std::printf("%s\n", nlohmann::json{{"size", o.size},
                                       {"window", o.window},
                                       {"iterations", o.iterations},
                                       {"MBps", mbps},
                                       {"messages_per_s", messages / seconds}}
                            .dump()
                            .c_str());
  } else {
    std::printf("bytes  window  iterations  MB/s  Mmsg/s\n%zu  %d  %d  %.2f  %.3f\n", o.size,
                o.window, o.iterations, mbps, messages / seconds / 1e6);
  }
  return 0;
}
