// What an upstream sends, read as serve reads it, on any bytes: the answer's head line by line
// as curl's header callback hands it over (serve/upstream_head.hpp), then its body in pieces of
// any size as curl's write callback does, with the client now and then behind (the call paused
// and the same bytes offered again), through the exchange's holding and buffering
// (serve/answer_hold.hpp) for no route or for each API's. Chunked framing is curl's and comes
// decoded; a truncated answer is an input that ends anywhere. The properties:
//  - never a crash, and never an exception (one inside curl's callback ended the process);
//  - a head it takes has a status of 200 to 599, and the fields the client may see of it (the
//    exchange's answer_fields) are ones Beast holds and writes back as the same fields (no field
//    over Beast's limit, no split answer; fields of different names may change places);
//  - every body byte taken reaches the client once and in order, or is still held, never both;
//    nothing is written before the answer's head; bytes not taken are taken when the client
//    has caught up; what is held stays within its bounds.
#include "serve/answer_hold.hpp"
#include "serve/upstream_head.hpp"

#include "fuzz_check.hpp"
#include "wire/wire_format.hpp"

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include <cctype>
#include <cstdint>
#include <map>
#include <sstream>
#include <vector>
#include <string>
#include <string_view>

namespace {

namespace http = boost::beast::http;
using compactor::serve::answer_fields;
using compactor::serve::AnswerHold;
using compactor::serve::Headers;
using compactor::serve::UpstreamHead;

// A client as the exchange sees it.
struct Client final : AnswerHold::Sink {
  bool begun = false, behind_now = false;
  std::string written;
  void begin_stream() override {
    FUZZ_CHECK(!begun, "the answer's head went out twice");
    begun = true;
  }
  bool behind() const override { return behind_now; }
  void write(std::string_view bytes) override {
    FUZZ_CHECK(begun, "body bytes went out before the answer's head");
    written.append(bytes);
  }
};

// Fields by name (case folded), each name's fields in order: what a head means (RFC 9110: the
// order of fields with different names carries nothing; Beast writes same-named ones together).
std::map<std::string, std::vector<std::pair<std::string, std::string>>> by_name(const Headers& fields) {
  std::map<std::string, std::vector<std::pair<std::string, std::string>>> out;
  for (const auto& [k, v] : fields) {
    std::string key = k;
    for (char& c : key) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    out[key].emplace_back(k, v);
  }
  return out;
}

// The head as the session writes it (Beast), parsed back: the same fields, no more.
void check_beast_takes(int status, const Headers& fields) {
  FUZZ_CHECK(status >= 200 && status <= 599, "a head was taken with status " + std::to_string(status));
  http::response<http::empty_body> res{static_cast<http::status>(status), 11};
  try {
    for (const auto& [k, v] : fields) res.insert(k, v);
  } catch (const std::exception& e) {
    FUZZ_CHECK(false, std::string("Beast refused a field the head let through: ") + e.what());
  }
  std::ostringstream text;
  text << res.base();
  const std::string head = text.str();
  http::response_parser<http::empty_body> parser;
  parser.header_limit(1u << 20);
  boost::system::error_code ec;
  parser.put(boost::asio::buffer(head), ec);
  FUZZ_CHECK(!ec || ec == http::error::need_more, "the written head does not parse: " + ec.message());
  FUZZ_CHECK(parser.is_header_done(), "the written head does not end where it should");
  Headers read;
  for (const auto& f : parser.get()) read.emplace_back(std::string(f.name_string()), std::string(f.value()));
  FUZZ_CHECK(read.size() == fields.size(), "the written head holds another number of fields than the upstream sent");
  FUZZ_CHECK(by_name(read) == by_name(fields), "a field was written back otherwise");
}

// Reads the head; returns where the body begins, or npos when the head was refused or never ended.
std::size_t read_head(std::string_view bytes, UpstreamHead& head) {
  std::size_t at = 0;
  while (at < bytes.size()) {
    std::size_t end = bytes.find('\n', at);
    end = end == std::string_view::npos ? bytes.size() : end + 1;
    const UpstreamHead::Step step = head.line(bytes.substr(at, end - at));
    at = end;
    if (step == UpstreamHead::Step::refused) {
      FUZZ_CHECK(!head.refusal().empty(), "a refusal that says nothing");
      return std::string_view::npos;
    }
    if (step == UpstreamHead::Step::complete) return at;
  }
  return std::string_view::npos;
}

void feed_body(std::string_view body, std::uint32_t seed, AnswerHold& hold, Client& client) {
  std::string taken;
  for (std::size_t at = 0; at < body.size();) {
    seed = seed * 1664525u + 1013904223u;
    const std::size_t size = std::min<std::size_t>(body.size() - at, 1 + (seed >> 8) % ((seed & 1) != 0 ? 7 : 300));
    const std::string_view piece = body.substr(at, size);
    client.behind_now = (seed & 6) == 6;
    if (!hold.body(piece, client)) {
      FUZZ_CHECK(hold.mode() == AnswerHold::Mode::streaming && client.behind_now, "bytes refused while the client was not behind");
      client.behind_now = false;  // the client read: curl offers the same bytes again
      FUZZ_CHECK(hold.body(piece, client), "bytes refused again once the client caught up");
    }
    taken.append(piece);
    at += size;
    if (hold.mode() == AnswerHold::Mode::buffering)
      FUZZ_CHECK(hold.held_size() <= AnswerHold::kErrorBodyLimit, "an error answer held past its bound");
    if (hold.mode() == AnswerHold::Mode::holding)
      FUZZ_CHECK(hold.held_size() < AnswerHold::kHoldLimit, "a first event held past its bound");
    if (hold.mode() == AnswerHold::Mode::streaming) FUZZ_CHECK(hold.held_size() == 0, "bytes held while streaming");
  }
  (void)hold.refusal();
  if (hold.mode() == AnswerHold::Mode::streaming) {
    FUZZ_CHECK(client.written == taken, "the client did not get every byte once, in order");
  } else {
    FUZZ_CHECK(!client.begun && client.written.empty(), "bytes went out and the answer is still held");
    FUZZ_CHECK(hold.take_held() == taken, "the held answer is not every byte taken, in order");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const auto& formats = compactor::wire::wire_formats();
  const compactor::wire::WireFormat* route = data[0] % (formats.size() + 1) == 0 ? nullptr : formats[data[0] % (formats.size() + 1) - 1];
  const std::uint32_t seed = data[1];
  const std::string_view upstream(reinterpret_cast<const char*>(data) + 2, size - 2);
  try {
    UpstreamHead head;
    const std::size_t body_at = read_head(upstream, head);
    if (body_at == std::string_view::npos) return 0;
    const int status = head.status();
    const Headers fields = answer_fields(head.take_fields(), {{"x-compactor-status", "passed"}});
    check_beast_takes(status, fields);
    AnswerHold hold(route);
    Client client;
    hold.head(status, client);
    FUZZ_CHECK(client.begun == (hold.mode() == AnswerHold::Mode::streaming), "the head went out and the answer is held, or the reverse");
    feed_body(upstream.substr(body_at), seed, hold, client);
  } catch (const std::exception& e) {
    FUZZ_CHECK(false, std::string("an exception, which inside curl's callback ends the process: ") + e.what());
  }
  return 0;
}
