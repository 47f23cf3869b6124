#include "serve/continuity_store.hpp"

#include "archive/archive_gc.hpp"
#include "model/conversation_host.hpp"
#include "model/conversation_reader.hpp"
#include "model/json_scanner.hpp"

#include <boost/json/value.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace compactor::serve {
namespace {

// Written whole (a temporary renamed over the name) but not flushed to disk: a state file is a
// cache of what was sent, and one that a power loss leaves empty or short reads as a miss (a full
// run), never as a wrong history. Flushing it cost each compacted call about 3 ms of its worker.
bool write_whole(const std::string& path, std::string_view bytes) {
  const std::string temp = path + ".tmp." + std::to_string(::getpid()) + ".0";
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  bool ok = true;
  while (!bytes.empty() && ok) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  ok = ::close(fd) == 0 && ok;
  if (ok && ::rename(temp.c_str(), path.c_str()) == 0) return true;
  ::unlink(temp.c_str());
  return false;
}

}  // namespace

std::string continuity_dir(const std::string& archive_dir) { return archive_dir + "/" + kContinuityFolder; }

std::string ContinuityStore::path_of(const std::string& key) const { return dir_ + "/" + key + ".json"; }

// A stored history is a messages array, or, when system entries sit among its messages,
// `{"system_slots":[…],"messages":[…]}`: the entries themselves are the request's (the key names
// them), and writing them inline could not say which ones share a slot (joined entries), since
// two side by side are refused on reading.
std::optional<SentHistory> ContinuityStore::longest(const std::vector<std::string>& keys) const {
  for (std::size_t k = keys.size(); k > 0; --k) {
    std::string path = path_of(keys[k - 1]);
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    std::ifstream in(path, std::ios::binary);
    std::stringstream buffer;
    buffer << in.rdbuf();
    std::string text = std::move(buffer).str();
    SentHistory sent;
    sent.covered = k;
    // The file is written when its history is sent: its time is the conversation's last call.
    sent.sent_at_ms = static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1000000;
    if (text == "=") {
      sent.unchanged = true;
      return sent;
    }
    const bool with_slots = text.starts_with(R"({"system_slots":)");
    ReadOptions options;
    options.source = path;
    options.format = with_slots ? InputFormat::request_body : InputFormat::messages_array;
    auto conversation = read_conversation(text, options);
    if (!conversation || conversation->empty()) continue;  // unreadable: as if absent (a full run follows)
    std::vector<std::size_t> slots = conversation->system_slots();  // an older file's inline entries
    if (with_slots) {  // the slots are in the frame's prefix, `{"system_slots":[…],"messages":[`
      boost::system::error_code ec;
      boost::json::value head = detail::parse_json(std::string(ConversationHost::layout(conversation->frame()).prefix) + "]}", ec);
      const boost::json::array* list = ec ? nullptr : head.at("system_slots").if_array();
      if (list == nullptr) continue;
      for (const auto& slot : *list) {
        if (!slot.is_uint64() && !(slot.is_int64() && slot.get_int64() >= 0)) continue;
        slots.push_back(static_cast<std::size_t>(slot.to_number<std::uint64_t>()));
      }
      if (slots.size() != list->size()) continue;
    }
    sent.messages = conversation->messages();
    sent.system_slots = std::move(slots);
    return sent;
  }
  return std::nullopt;
}

bool ContinuityStore::put(const std::string& key, const SentHistory& sent) const {
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (sent.unchanged) return write_whole(path_of(key), "=");
  std::string bytes;
  if (!sent.system_slots.empty()) {
    bytes = R"({"system_slots":[)";
    for (std::size_t k = 0; k < sent.system_slots.size(); ++k) bytes += (k > 0 ? "," : "") + std::to_string(sent.system_slots[k]);
    bytes += R"(],"messages":)";
  }
  bytes += "[";
  for (std::size_t i = 0; i < sent.messages.size(); ++i) {
    if (i > 0) bytes += ',';
    bytes.append(sent.messages[i]->raw());
  }
  bytes += "]";
  if (!sent.system_slots.empty()) bytes += "}";
  return write_whole(path_of(key), bytes);
}

}  // namespace compactor::serve
