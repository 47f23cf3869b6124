#include "store/redis_store.hpp"

#include "archive/archive_store.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>

namespace compactor::store {
namespace {

using Clock = std::chrono::steady_clock;

std::int64_t us_since(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t).count();
}

std::string unix_seconds() {
  return std::to_string(std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count());
}

// The stored value of the longest key that has one: {index (1-based), value}, or nil. One call,
// one round trip, however many prefixes the request has.
constexpr const char* kLongestScript = R"(for i = #KEYS, 1, -1 do
  local v = redis.call('GET', KEYS[i])
  if v then return {i, v} end
end
return false)";

// Removes up to ARGV[3] blobs whose index time is at most ARGV[1] (each checked again, so a blob
// put again meanwhile stays); ARGV[2] is the blob keys' prefix. Returns how many it removed.
constexpr const char* kCollectScript = R"(local old = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[3]))
for _, hex in ipairs(old) do
  redis.call('UNLINK', ARGV[2] .. hex)
  redis.call('ZREM', KEYS[1], hex)
end
return #old)";

// A run's archive: blobs spooled in a private temporary folder, shipped to Redis at commit.
class RedisRunArchive final : public RunArchive {
 public:
  RedisRunArchive(RedisStore& store, std::string spool, FileSystem& fs) : store_(store), spool_dir_(std::move(spool)), spool_(spool_dir_, fs) {}
  ~RedisRunArchive() override {
    spool_.rollback();
    std::error_code ec;
    std::filesystem::remove_all(spool_dir_, ec);
  }

  Expected<std::string> put(std::string_view bytes) override { return spool_.put(bytes); }
  Expected<std::string> put(std::string&& bytes) override { return spool_.put(std::move(bytes)); }
  Expected<std::string> put(HashedBlob&& blob) override { return spool_.put(std::move(blob)); }
  const std::string* find(std::string_view receipt) const override { return spool_.find(receipt); }
  bool holds(std::string_view receipt, std::uint64_t offset, std::string_view bytes) const override {
    return spool_.holds(receipt, offset, bytes);
  }
  std::optional<std::uint64_t> size_of(std::string_view receipt) const override { return spool_.size_of(receipt); }
  Mark mark() const override { return spool_.mark(); }
  void revert_to(Mark mark) override { spool_.revert_to(mark); }
  std::vector<std::string> receipts_since(Mark mark) const override { return spool_.receipts_since(mark); }
  void rollback() override { spool_.rollback(); }

  Expected<bool> commit() override {
    if (spool_.receipts().empty()) return true;
    std::vector<std::pair<std::string, std::string>> blobs;
    for (const std::string& receipt : spool_.receipts()) {
      auto bytes = spool_.bytes_of(receipt);
      if (!bytes) return Error{"archive: cannot read " + receipt + " back from the spool " + spool_dir_};
      blobs.emplace_back(receipt, std::move(*bytes));
    }
    auto stored = store_.put_blobs(blobs);
    spool_.rollback();
    return stored;
  }

 private:
  RedisStore& store_;
  std::string spool_dir_;
  ArchiveStore spool_;
};

// A private folder for one run's spool (mkdtemp makes it 0700), named by the process so that a
// killed worker's is found (remove_spools_of).
Expected<std::string> make_spool() {
  const char* tmp = std::getenv("TMPDIR");
  std::string path = std::string(tmp != nullptr && *tmp == '/' ? tmp : "/tmp") + "/compactor-spool." + std::to_string(::getpid()) + ".XXXXXX";
  if (::mkdtemp(path.data()) == nullptr) return Error{"archive: cannot create a spool folder " + path};
  return path;
}

// A run's archive that refuses every put, when no spool could be made: the stages that archive
// decline, with the reason.
class RefusingArchive final : public RunArchive {
 public:
  explicit RefusingArchive(Error why) : why_(std::move(why)) {}
  Expected<std::string> put(std::string_view) override { return why_; }
  Expected<std::string> put(std::string&&) override { return why_; }
  Expected<std::string> put(HashedBlob&&) override { return why_; }
  const std::string* find(std::string_view) const override { return nullptr; }
  bool holds(std::string_view, std::uint64_t, std::string_view) const override { return false; }
  std::optional<std::uint64_t> size_of(std::string_view) const override { return std::nullopt; }
  Mark mark() const override { return {}; }
  void revert_to(Mark) override {}
  std::vector<std::string> receipts_since(Mark) const override { return {}; }
  Expected<bool> commit() override { return true; }
  void rollback() override {}

 private:
  Error why_;
};

}  // namespace

RedisStore::RedisStore(const StoreConfig& config, const std::string& tenant)
    : config_(config), tenant_(tenant), tag_("{" + config.prefix + (tenant.empty() ? "" : ":" + tenant) + "}"), client_(config) {}

std::string RedisStore::where() const { return client_.where() + (tenant_.empty() ? "" : " (tenant " + tenant_ + ")"); }

std::unique_ptr<RunArchive> RedisStore::open_run(FileSystem& fs) {
  auto spool = make_spool();
  if (!spool) return std::make_unique<RefusingArchive>(spool.error());
  return std::make_unique<RedisRunArchive>(*this, *spool, fs);
}

Expected<std::vector<std::string>> RedisStore::tenants(const StoreConfig& config) {
  RedisClient client(config);
  const std::string pattern = "{" + config.prefix + ":*}:blobs", head = "{" + config.prefix + ":";
  std::vector<std::string> out;
  std::string cursor = "0";
  do {
    auto replies = client.run({{"SCAN", cursor, "MATCH", pattern, "COUNT", "1000"}});
    if (!replies) return Error{replies.error().message};
    const RedisReply& r = replies->front();
    if (r.type != RedisReply::Type::array || r.elements.size() != 2) return Error{client.where() + ": SCAN answered something else"};
    cursor = r.elements[0].text;
    for (const RedisReply& key : r.elements[1].elements) {
      const std::string& k = key.text;
      std::string tenant = k.size() > head.size() + 7 ? k.substr(head.size(), k.size() - head.size() - 7) : "";
      if (is_tenant_id(tenant)) out.push_back(tenant);
    }
  } while (cursor != "0");
  return out;
}

Expected<bool> RedisStore::put_blobs(const std::vector<std::pair<std::string, std::string>>& blobs) {
  const auto started = Clock::now();
  const std::string now = unix_seconds(), index = index_key();
  std::vector<std::string> keys;
  keys.reserve(blobs.size());
  std::vector<RedisClient::Command> commands;
  // Write first, then mark: each blob, then its entry in the index.
  for (const auto& [receipt, bytes] : blobs) {
    keys.push_back(blob_key(std::string_view(receipt).substr(7)));
    commands.push_back({"SET", keys.back(), bytes, "NX"});
  }
  for (const auto& blob : blobs) commands.push_back({"ZADD", index, now, std::string_view(blob.first).substr(7)});
  auto replies = client_.run(commands);
  counters_.blobs_put_us = us_since(started);
  if (!replies) {
    failed_blobs("archive: " + replies.error().message);
    return Error{"archive: " + replies.error().message};
  }
  return true;
}

Expected<std::string> RedisStore::restore(std::string_view receipt) {
  if (!is_receipt(receipt))
    return Error{"\"" + std::string(receipt) + "\" is not a receipt (expected sha256: and 64 lowercase hex digits)"};
  auto replies = client_.run({{"GET", blob_key(receipt.substr(7))}});
  if (!replies) return Error{replies.error().message};
  const RedisReply& r = replies->front();
  if (r.type != RedisReply::Type::string) return Error{where() + ": no blob " + std::string(receipt) + " in this store"};
  if (receipt_of(r.text) != receipt) return Error{where() + ": " + std::string(receipt) + ": the blob does not match its hash (the store is corrupted)"};
  return r.text;
}

namespace {

// A state value starts with when it was stored, "@<ms since the epoch>\n": the time of the call
// that sent it (the cost gate's cold-cache rule reads it). A value without one reads as of
// unknown time.
std::string stamped(std::string_view bytes) {
  const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  return "@" + std::to_string(now) + "\n" + std::string(bytes);
}

StoredState read_stamped(std::size_t covered, std::string value) {
  StoredState out{covered, std::move(value), 0};
  if (!out.bytes.starts_with('@')) return out;
  const std::size_t newline = out.bytes.find('\n');
  if (newline == std::string::npos) return out;
  out.written_at_ms = std::strtoll(out.bytes.c_str() + 1, nullptr, 10);
  out.bytes.erase(0, newline + 1);
  return out;
}

}  // namespace

Expected<std::optional<StoredState>> RedisStore::longest_state(const std::vector<std::string>& keys, std::size_t count) {
  const auto started = Clock::now();
  count = std::min(count, keys.size());
  std::vector<std::string> names;
  names.reserve(count);
  for (std::size_t i = 0; i < count; ++i) names.push_back(state_key(is_state_key(keys[i]) ? keys[i] : std::string(64, '-')));
  const std::string how_many = std::to_string(count);
  RedisClient::Command eval{"EVAL", kLongestScript, how_many};
  for (const std::string& name : names) eval.push_back(name);
  Expected<std::optional<StoredState>> out = std::optional<StoredState>();
  if (count > 0) {
    auto replies = client_.run({eval});
    if (!replies) {
      out = Error{"continuity state: " + replies.error().message};
    } else if (const RedisReply& r = replies->front(); r.type == RedisReply::Type::array && r.elements.size() == 2 &&
                                                       r.elements[0].integer >= 1 && static_cast<std::size_t>(r.elements[0].integer) <= count) {
      out = std::optional<StoredState>(read_stamped(static_cast<std::size_t>(r.elements[0].integer), std::move(replies->front().elements[1].text)));
    }
  }
  counters_.state_get_us = us_since(started);
  if (!out) failed(counters_.state_get_errors, out.error().message);
  return out;
}

Expected<bool> RedisStore::put_state(const std::string& key, std::string_view bytes, const std::string& supersedes) {
  const auto started = Clock::now();
  Expected<bool> out = true;
  if (!is_state_key(key)) {
    out = Error{"\"" + key + "\" is not a state key"};
  } else {
    const std::string ttl = std::to_string(config_.state_ttl_s), shorter = std::to_string(config_.superseded_ttl_s);
    const std::string name = state_key(key), previous = state_key(supersedes);  // the commands view them
    const std::string value = stamped(bytes);
    std::vector<RedisClient::Command> commands{{"SET", name, value, "EX", ttl}};
    // Each call's state holds the whole compacted history: the one it continued from is needed
    // only by a retry or a rewind, so it goes sooner (LT: never later than it would have).
    if (is_state_key(supersedes) && supersedes != key) commands.push_back({"EXPIRE", previous, shorter, "LT"});
    auto replies = client_.run(commands);
    if (!replies) out = Error{"continuity state: " + replies.error().message};
  }
  counters_.state_put_us = us_since(started);
  if (!out) failed(counters_.state_put_errors, out.error().message);
  return out;
}

Expected<ArchiveGcResult> RedisStore::collect_garbage(std::chrono::hours keep) {
  const auto now = std::chrono::system_clock::now();
  const std::string cutoff = std::to_string(std::chrono::duration_cast<std::chrono::seconds>((now - keep).time_since_epoch()).count());
  const std::string index = index_key(), prefix = tag_ + ":b:";
  ArchiveGcResult result;
  for (;;) {
    auto replies = client_.run({{"EVAL", kCollectScript, "1", index, cutoff, prefix, "500"}});
    if (!replies) return Error{replies.error().message};
    result.removed += static_cast<std::size_t>(replies->front().integer);
    if (replies->front().integer < 500) break;
  }
  auto left = client_.run({{"ZCARD", index}});
  if (!left) return Error{left.error().message};
  result.kept = static_cast<std::size_t>(left->front().integer);
  return result;
}

}  // namespace compactor::store
