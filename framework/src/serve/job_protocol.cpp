#include "serve/job_protocol.hpp"

#include "model/json_scanner.hpp"

#include <boost/json.hpp>

#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace compactor::serve {

namespace json = boost::json;

std::string_view to_string(JobOutcome::Result result) {
  switch (result) {
    case JobOutcome::compacted: return "compacted";
    case JobOutcome::unchanged: return "unchanged";
    case JobOutcome::refused: return "refused";
    case JobOutcome::failed: return "failed";
    case JobOutcome::passed: return "passed";
  }
  return "failed";
}

std::string_view JobOutcome::status_header() const {
  if (result == compacted || result == unchanged) {
    if (status == "over_budget") return "over_budget";
    if (status == "declined" || status == "deferred") return status;
    if (!changed) return "unchanged";
  }
  return to_string(result);
}

json::object JobOutcome::to_json() const {
  json::array receipt_ids;
  for (const auto& r : receipts) receipt_ids.push_back(json::string(r));
  json::array stages;
  for (std::size_t i = 0; i < stage_statuses.size(); ++i)
    stages.push_back(json::array{json::string(stage_statuses[i].first), json::string(stage_statuses[i].second),
                                 i < stage_us.size() ? stage_us[i] : 0});
  json::array summaries;
  for (const auto& key : background_summaries) summaries.emplace_back(key);
  return json::object{{"result", to_string(result)}, {"warning", warning},  {"status", status},
                      {"background_summaries", std::move(summaries)}, {"summaries_replaced", summaries_replaced},
                      {"unit", unit},                {"in", size_in},         {"out", size_out}, {"received", size_received},
                      {"stages", std::move(stages)}, {"parse_us", parse_us},  {"state_us", state_us},
                      {"stages_us", stages_us},      {"write_us", write_us},  {"messages", messages},
                      {"covered", covered},          {"state_hit", state_hit},
                      {"peak_rss_kb", peak_rss_kb},  {"model", model},
                      {"window", window},            {"limit", limit},
                      {"gated", gated},              {"gate_commit", gate_commit},
                      {"gate_saved_usd", gate_saved_usd}, {"gate_broken_usd", gate_broken_usd}, {"saved_usd", saved_usd}, {"saved_tokens", saved_tokens},
                      {"changed", changed}, {"receipts", std::move(receipt_ids)}, {"receipt_count", receipt_count},
                      {"store", json::object{{"kind", store.kind}, {"get_us", store.state_get_us}, {"put_us", store.state_put_us},
                                             {"blobs_us", store.blobs_put_us}, {"get_errors", store.state_get_errors},
                                             {"put_errors", store.state_put_errors}, {"blob_errors", store.blob_errors},
                                             {"error", store.error}, {"fault", store_fault},
                                             {"over_tenant", store.over_tenant_bound}, {"over_unverified", store.over_unverified_bound},
                                             {"usage", store.usage_bytes}, {"unverified", store.unverified},
                                             {"rejected", store.state_rejected}}}};
}

std::optional<JobOutcome> JobOutcome::from_json(std::string_view text) {
  boost::system::error_code ec;
  json::value v = detail::parse_json(text, ec);
  if (ec || !v.is_object()) return std::nullopt;
  try {
    const json::object& o = v.get_object();
    JobOutcome out;
    std::string_view result = o.at("result").as_string();
    out.result = result == "compacted" ? compacted : result == "unchanged" ? unchanged : result == "refused" ? refused
                 : result == "passed"  ? passed
                                       : failed;
    out.warning = std::string(o.at("warning").as_string());
    out.status = std::string(o.at("status").as_string());
    out.unit = std::string(o.at("unit").as_string());
    out.size_in = o.at("in").to_number<std::uint64_t>();
    out.size_out = o.at("out").to_number<std::uint64_t>();
    out.size_received = o.at("received").to_number<std::uint64_t>();
    for (const auto& s : o.at("stages").as_array()) {
      const auto& a = s.as_array();
      out.stage_statuses.emplace_back(std::string(a.at(0).as_string()), std::string(a.at(1).as_string()));
      out.stage_us.push_back(a.at(2).to_number<std::int64_t>());
    }
    out.parse_us = o.at("parse_us").to_number<std::int64_t>();
    out.state_us = o.at("state_us").to_number<std::int64_t>();
    out.stages_us = o.at("stages_us").to_number<std::int64_t>();
    out.write_us = o.at("write_us").to_number<std::int64_t>();
    out.messages = o.at("messages").to_number<std::size_t>();
    out.covered = o.at("covered").to_number<std::size_t>();
    out.state_hit = o.at("state_hit").as_bool();
    out.peak_rss_kb = o.at("peak_rss_kb").to_number<std::int64_t>();
    if (const json::value* store = o.if_contains("store")) {
      const json::object& st = store->as_object();
      out.store.kind = std::string(st.at("kind").as_string());
      out.store.state_get_us = st.at("get_us").to_number<std::int64_t>();
      out.store.state_put_us = st.at("put_us").to_number<std::int64_t>();
      out.store.blobs_put_us = st.at("blobs_us").to_number<std::int64_t>();
      out.store.state_get_errors = st.at("get_errors").to_number<int>();
      out.store.state_put_errors = st.at("put_errors").to_number<int>();
      out.store.blob_errors = st.at("blob_errors").to_number<int>();
      out.store.error = std::string(st.at("error").as_string());
      out.store_fault = st.at("fault").as_bool();
      out.store.over_tenant_bound = st.at("over_tenant").to_number<int>();
      out.store.over_unverified_bound = st.at("over_unverified").to_number<int>();
      out.store.usage_bytes = st.at("usage").to_number<std::int64_t>();
      out.store.unverified = st.at("unverified").as_bool();
      out.store.state_rejected = st.at("rejected").to_number<int>();
    }
    out.model = std::string(o.at("model").as_string());
    out.window = o.at("window").to_number<std::uint64_t>();
    out.limit = o.at("limit").to_number<std::uint64_t>();
    out.gated = o.at("gated").as_bool();
    out.gate_commit = o.at("gate_commit").as_bool();
    out.gate_saved_usd = o.at("gate_saved_usd").to_number<double>();
    out.gate_broken_usd = o.at("gate_broken_usd").to_number<double>();
    out.saved_usd = o.at("saved_usd").to_number<double>();
    out.saved_tokens = o.at("saved_tokens").to_number<std::uint64_t>();
    out.changed = o.at("changed").as_bool();
    for (const auto& r : o.at("receipts").as_array()) out.receipts.emplace_back(r.as_string());
    out.receipt_count = o.at("receipt_count").to_number<std::size_t>();
    for (const auto& key : o.at("background_summaries").as_array()) out.background_summaries.emplace_back(key.as_string());
    out.summaries_replaced = o.at("summaries_replaced").to_number<int>();
    return out;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

bool send_message(int socket, std::string_view text, const std::vector<int>& fds) {
  iovec iov{const_cast<char*>(text.data()), text.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 4)] = {};
  if (!fds.empty()) {
    const std::size_t n = std::min<std::size_t>(fds.size(), 4);
    msg.msg_control = control;
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * n);
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * n);
    std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * n);
  }
  for (;;) {
    ssize_t n = ::sendmsg(socket, &msg, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    return n == static_cast<ssize_t>(text.size());
  }
}

std::optional<Received> receive_message(int socket, int timeout_ms) {
  for (;;) {
    pollfd p{socket, POLLIN, 0};
    int ready = ::poll(&p, 1, timeout_ms);
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) return std::nullopt;
    break;
  }
  Received out;
  // A datagram is at most a few KB (an outcome with a stage list); 64 KiB leaves room.
  std::string buffer(65536, '\0');
  iovec iov{buffer.data(), buffer.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 4)] = {};
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n;
  do {
    n = ::recvmsg(socket, &msg, MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (std::size_t i = 0; i < count; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      out.fds.push_back(fd);
    }
  }
  if (n <= 0) {
    for (int fd : out.fds) ::close(fd);
    out.fds.clear();
    out.closed = true;
    return out;
  }
  buffer.resize(static_cast<std::size_t>(n));
  out.text = std::move(buffer);
  return out;
}

int memfd_with(std::string_view name, std::string_view bytes) {
  int fd = ::memfd_create(std::string(name).c_str(), MFD_CLOEXEC);
  if (fd < 0) return -1;
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int saved = errno;
      ::close(fd);
      errno = saved;
      return -1;
    }
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return fd;
}

std::string read_whole(int fd) {
  std::string out;
  off_t size = ::lseek(fd, 0, SEEK_END);
  if (size > 0) out.reserve(static_cast<std::size_t>(size));
  ::lseek(fd, 0, SEEK_SET);
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

}  // namespace compactor::serve
