// An upstream answer's head, read line by line as libcurl hands each line to the header
// callback, and checked before any of it reaches Beast or the client. Beast's fields keep a
// name or value in at most 65,535 bytes and throw std::length_error past that, which inside
// curl's callback ended the process (every tenant's streams with it); a field name that is no
// token, a value holding a control character (CR, LF, NUL…), or an obs-fold continuation line
// would be written to the client as it came (a response split). RFC 9112 lets a proxy reject such a message, and
// nginx ("upstream sent too big header") and Envoy (60 KiB) refuse an oversized head with 502:
// so does serve. Dropping the field instead would lose what the upstream said.
#pragma once

#include "serve/reply.hpp"

#include <cstddef>
#include <string>
#include <string_view>

namespace compactor::serve {

class UpstreamHead {
 public:
  // The head's bytes at most, with the interim (1xx) heads before it: what Beast and a client
  // can take (serve's own limit on a request's head is the same).
  static constexpr std::size_t kMaxBytes = 64 * 1024;

  enum class Step { more, complete, refused };

  // One line as curl gives it (a status line, a field, or the blank line that ends a head; CRLF
  // or LF at its end). After `complete`, further lines are trailers: the caller ignores them.
  Step line(std::string_view raw);

  int status() const { return status_; }
  // The final head's fields, in order, names and values as the upstream wrote them.
  Headers take_fields() { return std::move(fields_); }
  // Why the head was refused, one line (for the 502 and the log).
  const std::string& refusal() const { return refusal_; }

 private:
  Step refuse(std::string why);

  int status_ = 0;
  std::size_t bytes_ = 0;
  bool seen_status_ = false;
  Headers fields_;
  std::string refusal_;
};

}  // namespace compactor::serve
