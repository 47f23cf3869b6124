// What becomes of an upstream answer's body before the client may see it: the part of an
// exchange that reads what the upstream sends, apart from sockets so that it can be driven
// whole (tests/fuzz/upstream_fuzz.cpp). A 2xx answer streams as it arrives, except on a route
// whose API may refuse the context in a 2xx stream's first event: that event is held until it is
// complete (a blank line ends it), then either streams with the rest or, a refusal, is held with
// the rest for the exchange to retry. An error answer is held whole so that a context refusal can
// be retried before the client sees anything, up to a bound past which it is no refusal and
// streams as it arrives.
#pragma once

#include "serve/reply.hpp"
#include "wire/wire_format.hpp"

#include <cstddef>
#include <string>
#include <string_view>

namespace compactor::serve {

// A field that belongs to one connection, or is serve's own (a client's token), and is passed on
// neither way: not from the client to the upstream, nor from the upstream's answer to the client
// (where its framing is serve's: it writes its own Content-Length or chunks).
bool hop_by_hop(std::string_view name);

// The upstream's answer fields a client may see, with the server's own set over them.
Headers answer_fields(const Headers& upstream, const Headers& extra);

class AnswerHold {
 public:
  // An error answer held whole at most; one larger goes to the client as it arrives.
  static constexpr std::size_t kErrorBodyLimit = 1 << 20;
  // A 2xx stream's first event held at most before it must stream (no event stream worth holding).
  static constexpr std::size_t kHoldLimit = 1 << 20;

  enum class Mode { waiting, holding, streaming, buffering };

  // Where an answer goes once it is the client's.
  class Sink {
   public:
    virtual ~Sink() = default;
    virtual void begin_stream() = 0;          // the answer's head goes out; bytes follow
    virtual bool behind() const = 0;          // the client has not read enough: take nothing now
    virtual void write(std::string_view bytes) = 0;
  };

  // `compacting`: the wire format whose request this answers (its refusals), or null.
  explicit AnswerHold(const wire::WireFormat* compacting) : compacting_(compacting) {}

  // A new call (the first, or a retry): nothing held, waiting for a head.
  void reset();
  // The answer's status: holding, buffering, or streaming at once.
  void head(int status, Sink& sink);
  // Body bytes as they arrive. False: not taken (the client is behind); offer them again later.
  bool body(std::string_view bytes, Sink& sink);
  // Whether the whole answer, now ended, is a context refusal the exchange may retry.
  bool refusal() const;

  Mode mode() const { return mode_; }
  int status() const { return status_; }
  std::size_t held_size() const { return held_.size(); }
  std::string take_held() { return std::move(held_); }

 private:
  void stream(Sink& sink);

  const wire::WireFormat* compacting_;
  Mode mode_ = Mode::waiting;
  int status_ = 0;
  std::string held_;  // a held first event, or a held error answer
};

}  // namespace compactor::serve
