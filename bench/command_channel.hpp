// The control plane of the message-layer benchmarks: tasks tell each other what to measure next
// with one-packet messages on their own handler, separate from the measured traffic.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <deque>
#include <span>
#include <utility>

#include "bgl/message_layer/message_layer.hpp"

namespace bgl::bench {

// `Command` is a trivially copyable struct whose `op` member names what to do; `kSync` is the op
// that quiesce() exchanges.
template <class Command, auto kSync>
class CommandChannel {
 public:
  using Op = decltype(kSync);

  CommandChannel(message_layer::MessageLayer& ml, message_layer::HandlerId handler)
      : ml_(ml), handler_(handler) {
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

  void send(message_layer::Rank dest, const Command& c) {
    message_layer::SendMessage m;
    m.dest = dest;
    m.handler = handler_;
    m.header = std::as_bytes(std::span(&c, 1));
    m.protocol = message_layer::Protocol::one_packet;
    bool sent = false;
    m.context = &sent;
    m.done = [](message_layer::SendMessage& s) { *static_cast<bool*>(s.context) = true; };
    ml_.post(m);
    while (!sent)
      ml_.advance();
  }

  std::pair<message_layer::Rank, Command> next(bool sleepy) {
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
  void quiesce(std::span<const message_layer::Rank> peers, bool sleepy) {
    progress([&] { return ml_.idle(); }, sleepy);
    for (const message_layer::Rank p : peers)
      send(p, Command{.op = kSync});
    expect(kSync, peers.size(), sleepy);
    progress([&] { return ml_.idle(); }, sleepy);
  }

 private:
  static message_layer::RecvTarget on_command(void* context, const message_layer::Arrival& a) {
    auto& self = *static_cast<CommandChannel*>(context);
    Command c{};
    std::memcpy(&c, a.header.data(), std::min(sizeof c, a.header.size()));
    self.commands_.emplace_back(a.source, c);
    return message_layer::RecvTarget::into({}, nullptr, nullptr);
  }

  message_layer::MessageLayer& ml_;
  message_layer::HandlerId handler_;
  std::deque<std::pair<message_layer::Rank, Command>> commands_;
};

}  // namespace bgl::bench
