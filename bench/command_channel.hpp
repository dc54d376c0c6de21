// The control plane of the message-layer benchmarks: tasks tell each other what to measure next
// with one-packet messages on their own handler, separate from the measured traffic.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <deque>
#include <span>
#include <utility>

#include "bgl/msg/message_layer.hpp"

namespace bgl::bench {

// `Command` is a trivially copyable struct whose `op` member names what to do; `kSync` is the op
// that quiesce() exchanges.
template <class Command, auto kSync>
class CommandChannel {
 public:
  using Op = decltype(kSync);

  CommandChannel(msg::MessageLayer& ml, msg::HandlerId handler) : ml_(ml), handler_(handler) {
    ml_.register_handler(handler, &CommandChannel::on_command, this);
  }
  CommandChannel(const CommandChannel&) = delete;
  CommandChannel& operator=(const CommandChannel&) = delete;

  // Advances until pred(); `sleepy` waits in the message layer (spin, yield, doorbell sleep) when
  // nothing happened, otherwise busy-polls as a benchmark's measured side must.
  template <class Pred>
  void progress(Pred&& pred, bool sleepy) {
    while (!pred())
      if (!ml_.advance() && sleepy) ml_.wait();
  }

  void send(msg::Rank dest, const Command& c) {
    msg::SendMessage m;
    m.dest = dest;
    m.handler = handler_;
    m.header = std::as_bytes(std::span(&c, 1));
    m.protocol = msg::Protocol::one_packet;
    bool sent = false;
    m.context = &sent;
    m.done = [](msg::SendMessage& s) { *static_cast<bool*>(s.context) = true; };
    ml_.post(m);
    while (!sent)
      ml_.advance();
  }

  std::pair<msg::Rank, Command> next(bool sleepy) {
    progress([&] { return !commands_.empty(); }, sleepy);
    const auto c = commands_.front();
    commands_.pop_front();
    return c;
  }

  // Waits for `n` commands `op` (from anybody) and removes them.
  void expect(Op op, std::size_t n, bool sleepy) {
    const auto count = [&] {
      return static_cast<std::size_t>(std::count_if(
          commands_.begin(), commands_.end(), [&](const auto& c) { return c.second.op == op; }));
    };
    progress([&] { return count() >= n; }, sleepy);
    for (auto it = commands_.begin(); n > 0 && it != commands_.end();) {
      if (it->second.op == op) {
        it = commands_.erase(it);
        --n;
      } else {
        ++it;
      }
    }
  }

  // Nothing of the message layer left in flight between this task and `peers` once it returns
  // (on both sides): each side sends a sync when its own sends, fins and tokens are out, and
  // ordered packets from a peer arrive in order, so its sync comes after all of them. Needed
  // before a raw floor shares the reception FIFOs, and to start every measurement from rest.
  void quiesce(std::span<const msg::Rank> peers, bool sleepy) {
    progress([&] { return ml_.idle(); }, sleepy);
    for (const msg::Rank p : peers)
      send(p, Command{.op = kSync});
    expect(kSync, peers.size(), sleepy);
    progress([&] { return ml_.idle(); }, sleepy);
  }

 private:
  static msg::RecvTarget on_command(void* context, const msg::Arrival& a) {
    auto& self = *static_cast<CommandChannel*>(context);
    Command c{};
    std::memcpy(&c, a.header.data(), std::min(sizeof c, a.header.size()));
    self.commands_.emplace_back(a.source, c);
    return msg::RecvTarget::into({}, nullptr, nullptr);
  }

  msg::MessageLayer& ml_;
  msg::HandlerId handler_;
  std::deque<std::pair<msg::Rank, Command>> commands_;
};

}  // namespace bgl::bench
