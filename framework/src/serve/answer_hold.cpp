#include "serve/answer_hold.hpp"

#include "serve/tenant.hpp"

#include <boost/beast/core/string.hpp>

namespace compactor::serve {
namespace {

// Events end at a blank line ("\n\n", or "\r\n\r\n").
bool first_event_complete(const std::string& held) {
  return held.find("\n\n") != std::string::npos || held.find("\r\n\r\n") != std::string::npos;
}

}  // namespace

bool hop_by_hop(std::string_view name) {
  static constexpr std::string_view names[] = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "te",
                                               "trailer", "upgrade", "host", "content-length", "expect", "accept-encoding",
                                               "proxy-authorization", kTokenHeader};
  for (std::string_view n : names)
    if (boost::beast::iequals(name, n)) return true;
  return false;
}

Headers answer_fields(const Headers& upstream, const Headers& extra) {
  Headers out;
  for (const auto& [k, v] : upstream)
    if (!hop_by_hop(k) && header_value(extra, k).empty()) out.emplace_back(k, v);
  out.insert(out.end(), extra.begin(), extra.end());
  return out;
}

void AnswerHold::reset() {
  mode_ = Mode::waiting;
  status_ = 0;
  held_.clear();
}

void AnswerHold::head(int status, Sink& sink) {
  status_ = status;
  if (status / 100 != 2) mode_ = Mode::buffering;
  else if (compacting_ != nullptr && compacting_->refuses_in_stream()) mode_ = Mode::holding;
  else stream(sink);
}

// From here on the answer is the client's.
void AnswerHold::stream(Sink& sink) {
  sink.begin_stream();
  mode_ = Mode::streaming;
}

bool AnswerHold::body(std::string_view bytes, Sink& sink) {
  switch (mode_) {
    case Mode::streaming:
      if (sink.behind()) return false;
      sink.write(bytes);
      return true;
    case Mode::holding:
      held_.append(bytes);
      if (!first_event_complete(held_) && held_.size() < kHoldLimit) return true;
      if (compacting_->context_refusal(200, held_)) {
        mode_ = Mode::buffering;  // a refusal: the rest is held with it, and the exchange retries
        return true;
      }
      stream(sink);
      sink.write(held_);
      held_.clear();
      return true;
    case Mode::buffering:
      if (held_.size() + bytes.size() <= kErrorBodyLimit) {
        held_.append(bytes);
        return true;
      }
      stream(sink);
      sink.write(held_);
      held_.clear();
      sink.write(bytes);
      return true;
    case Mode::waiting:
      return true;
  }
  return true;
}

bool AnswerHold::refusal() const {
  if (compacting_ == nullptr || (mode_ != Mode::buffering && mode_ != Mode::holding)) return false;
  return compacting_->context_refusal(mode_ == Mode::buffering ? status_ : 200, held_);
}

}  // namespace compactor::serve
