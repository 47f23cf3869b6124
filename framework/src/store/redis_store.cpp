#include "store/redis_store.hpp"

#include "archive/archive_store.hpp"

#include <fmt/core.h>
#include <nettle/hmac.h>
#include <nettle/memops.h>
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

std::int64_t unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string unix_seconds() {
  return std::to_string(std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count());
}

constexpr std::size_t kProbeChunk = 512;   // state keys one lookup's EVAL asks for
constexpr std::size_t kProbeLimit = 8192;  // and one lookup in all: further back is a miss
constexpr int kForgedLimit = 8;            // states that do not verify before a lookup gives up

// The stored value of the longest key that has one: {index (1-based), value}, or nil. One call,
// one round trip, however many prefixes the request has.
constexpr const char* kLongestScript = R"(for i = #KEYS, 1, -1 do
  local v = redis.call('GET', KEYS[i])
  if v then return {i, v} end
end
return false)";

// Removes up to ARGV[3] blobs whose index time is at most ARGV[1] (each checked again, so a blob
// put again meanwhile stays); ARGV[2] is the blob keys' prefix; what each held leaves the
// namespace's byte count (KEYS[2]). Returns how many it removed.
constexpr const char* kCollectScript = R"(local old = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[3]))
for _, hex in ipairs(old) do
  redis.call('DECRBY', KEYS[2], redis.call('STRLEN', ARGV[2] .. hex))
  redis.call('UNLINK', ARGV[2] .. hex)
  redis.call('ZREM', KEYS[1], hex)
end
if tonumber(redis.call('GET', KEYS[2]) or '0') < 0 then redis.call('SET', KEYS[2], 0) end
return #old)";

// A run's blobs, at once (gc runs before or after, never between a blob and its index entry).
// KEYS: the index, the byte count, the pending set, then each blob's key; ARGV: the time (s), the
// tenant's bound (0: none), the unverified lifetime (0: a known tenant), then each blob's hex and
// bytes. A known tenant's new blobs are counted, and refused whole past the bound (-1); an
// unverified tenant's expire unless a vouch makes them the tenant's (the pending set names them).
// Returns {bytes new, bytes held}.
constexpr const char* kPutBlobsScript = R"(local n, ttl, new = #KEYS - 3, tonumber(ARGV[3]), 0
for i = 1, n do
  if redis.call('EXISTS', KEYS[3 + i]) == 0 then new = new + string.len(ARGV[3 + 2 * i]) end
end
local used, max = tonumber(redis.call('GET', KEYS[2]) or '0'), tonumber(ARGV[2])
if ttl == 0 and max > 0 and used + new > max then return {-1, used} end
for i = 1, n do
  local hex, bytes = ARGV[2 + 2 * i], ARGV[3 + 2 * i]
  if ttl > 0 then
    if redis.call('SET', KEYS[3 + i], bytes, 'NX', 'EX', ttl) then redis.call('ZADD', KEYS[3], ARGV[1], hex) end
  else
    if redis.call('SET', KEYS[3 + i], bytes, 'NX') then redis.call('INCRBY', KEYS[2], string.len(bytes)) end
    redis.call('ZADD', KEYS[1], ARGV[1], hex)
  end
end
if ttl > 0 then redis.call('EXPIRE', KEYS[3], ttl) return {new, 0} end
return {new, used + new})";

// One state, with the namespace's accounting. KEYS: the state, the states' expiry set, their
// sizes, the byte count, the superseded state. ARGV: the value, its lifetime (s), now (ms), the
// tenant's bound (0: none), the superseded lifetime, the key's hex, the superseded hex ('' none),
// '1' for an unverified tenant (the area counts it: no accounting here). Forgets a few expired
// states first; refuses past the bound ({-1, held}); returns {1, held}.
constexpr const char* kPutStateScript = R"(local now, ttl = tonumber(ARGV[3]), tonumber(ARGV[2])
if ARGV[8] == '1' then
  redis.call('SET', KEYS[1], ARGV[1], 'EX', ttl)
  if ARGV[7] ~= '' then redis.call('EXPIRE', KEYS[5], ARGV[5], 'LT') end
  return {1, 0}
end
for _, h in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, 64)) do
  redis.call('DECRBY', KEYS[4], tonumber(redis.call('HGET', KEYS[3], h) or '0'))
  redis.call('HDEL', KEYS[3], h)
  redis.call('ZREM', KEYS[2], h)
end
local old, size = tonumber(redis.call('HGET', KEYS[3], ARGV[6]) or '0'), string.len(ARGV[1])
local used, max = tonumber(redis.call('GET', KEYS[4]) or '0'), tonumber(ARGV[4])
if max > 0 and size > old and used - old + size > max then return {-1, used} end
redis.call('SET', KEYS[1], ARGV[1], 'EX', ttl)
redis.call('ZADD', KEYS[2], now + ttl * 1000, ARGV[6])
redis.call('HSET', KEYS[3], ARGV[6], size)
redis.call('INCRBY', KEYS[4], size - old)
if ARGV[7] ~= '' then
  redis.call('EXPIRE', KEYS[5], ARGV[5], 'LT')
  redis.call('ZADD', KEYS[2], 'XX', 'LT', now + tonumber(ARGV[5]) * 1000, ARGV[7])
end
return {1, used - old + size})";

// Charges ARGV[2] bytes to tenant ARGV[1] in the area of unverified keys (KEYS: its expiry set,
// each tenant's bytes, the total), after forgetting a few entries past their time (ARGV[3] now,
// ms); ARGV[4] the lifetime (ms), ARGV[5] the area's bound. 1 when charged, 0 when full.
constexpr const char* kReserveScript = R"(for _, t in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[3], 'LIMIT', 0, 256)) do
  redis.call('DECRBY', KEYS[3], tonumber(redis.call('HGET', KEYS[2], t) or '0'))
  redis.call('HDEL', KEYS[2], t)
  redis.call('ZREM', KEYS[1], t)
end
if tonumber(redis.call('GET', KEYS[3]) or '0') + tonumber(ARGV[2]) > tonumber(ARGV[5]) then return 0 end
redis.call('HINCRBY', KEYS[2], ARGV[1], ARGV[2])
redis.call('INCRBY', KEYS[3], ARGV[2])
redis.call('ZADD', KEYS[1], tonumber(ARGV[3]) + tonumber(ARGV[4]), ARGV[1])
return 1)";

// Vouching, in the tenant's slot (KEYS: the pending set, the index, the byte count, the marker;
// ARGV[1] the blob keys' prefix): each pending blob still there is the tenant's for good.
constexpr const char* kPromoteScript = R"(local pending = redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')
for i = 1, #pending, 2 do
  local key = ARGV[1] .. pending[i]
  if redis.call('PERSIST', key) == 1 then
    redis.call('ZADD', KEYS[2], pending[i + 1], pending[i])
    redis.call('INCRBY', KEYS[3], redis.call('STRLEN', key))
  end
end
redis.call('DEL', KEYS[1])
redis.call('SET', KEYS[4], '1')
return #pending / 2)";

// And in the area's slot (KEYS as kReserveScript's, ARGV[1] the tenant): its entry goes.
constexpr const char* kReleaseScript = R"(redis.call('DECRBY', KEYS[3], tonumber(redis.call('HGET', KEYS[2], ARGV[1]) or '0'))
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[1], ARGV[1])
return 1)";

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

Expected<bool> RedisStore::unverified() {
  if (!bounds_.by_upstream) return false;
  if (unverified_) return *unverified_;
  // Known: vouched for, or a tenant with blobs from before vouching (an unverified one has none
  // in its index).
  auto replies = client_.run({{"EXISTS", tag_ + ":known", index_key()}});
  if (!replies) return Error{replies.error().message};
  unverified_ = replies->front().integer == 0;
  return *unverified_;
}

Expected<bool> RedisStore::reserve_unverified(std::int64_t bytes) {
  const std::string area = "{" + config_.prefix + "}:unverified";
  const std::string shares = area + ":bytes", total = area + ":total", amount = std::to_string(bytes), now = std::to_string(unix_ms()),
                    life = std::to_string(bounds_.unverified_ttl_s * 1000), bound = std::to_string(bounds_.unverified_bytes);
  auto replies = client_.run({{"EVAL", kReserveScript, "3", area, shares, total, tenant_, amount, now, life, bound}});
  if (!replies) return Error{replies.error().message};
  return replies->front().integer == 1;
}

// Before anything is written: whose bound admits it (the unverified area's, charged here, or the
// tenant's, which the write's own script checks); the lifetime an unverified write takes (else 0).
Expected<std::int64_t> RedisStore::admit(std::int64_t bytes, const std::string& what) {
  auto fail = [&](const std::string& why) {
    if (what == "archive") failed_blobs(what + ": " + why);
    else failed(counters_.state_put_errors, what + ": " + why);
    return Error{what + ": " + why};
  };
  auto unknown = unverified();
  if (!unknown) return fail(unknown.error().message);
  if (!*unknown) return std::int64_t{0};
  auto room = reserve_unverified(bytes);
  if (!room) return fail(room.error().message);
  if (!*room)
    return over_bound(true, fmt::format("{}: the area for API keys no upstream answer has vouched for yet cannot take {} more bytes "
                                        "(serve.unverified_max_bytes, {})",
                                        what, bytes, bounds_.unverified_bytes));
  counters_.unverified = true;
  return bounds_.unverified_ttl_s;
}

Expected<bool> RedisStore::put_blobs(const std::vector<std::pair<std::string, std::string>>& blobs) {
  const auto started = Clock::now();
  auto done = [&](Expected<bool> out) {
    counters_.blobs_put_us = us_since(started);
    return out;
  };
  std::int64_t total = 0;
  for (const auto& blob : blobs) total += static_cast<std::int64_t>(blob.second.size());
  auto lifetime = admit(total, "archive");  // counts its own refusals and failures
  if (!lifetime) return done(lifetime.error());
  const std::string now = unix_seconds(), ttl = std::to_string(*lifetime), bound = std::to_string(bounds_.tenant_bytes);
  const std::string index = index_key(), bytes_key = tag_ + ":bytes", pending = tag_ + ":pending", count = std::to_string(3 + blobs.size());
  std::vector<std::string> keys;
  keys.reserve(blobs.size());
  for (const auto& blob : blobs) keys.push_back(blob_key(std::string_view(blob.first).substr(7)));
  RedisClient::Command eval{"EVAL", kPutBlobsScript, count, index, bytes_key, pending};
  for (const std::string& key : keys) eval.push_back(key);
  eval.insert(eval.end(), {now, bound, ttl});
  for (const auto& [receipt, bytes] : blobs) eval.insert(eval.end(), {std::string_view(receipt).substr(7), bytes});
  auto replies = client_.run({eval});
  if (!replies) {
    failed_blobs("archive: " + replies.error().message);
    return done(Error{"archive: " + replies.error().message});
  }
  const RedisReply& r = replies->front();
  const long long held = r.elements.size() == 2 ? r.elements[1].integer : -1;
  if (r.elements.size() == 2 && r.elements[0].integer < 0)
    return done(over_bound(false, fmt::format("archive: {} holds {} bytes, and these blobs would pass serve.tenant_max_bytes ({})",
                                              where(), held, bounds_.tenant_bytes)));
  if (*lifetime == 0 && held >= 0) counters_.usage_bytes = held;
  return done(true);
}

Expected<bool> RedisStore::vouch() {
  auto promoted = client_.run({{"EVAL", kPromoteScript, "4", tag_ + ":pending", index_key(), tag_ + ":bytes", tag_ + ":known", tag_ + ":b:"}});
  if (!promoted) return Error{promoted.error().message};
  const std::string area = "{" + config_.prefix + "}:unverified";
  auto released = client_.run({{"EVAL", kReleaseScript, "3", area, area + ":bytes", area + ":total", tenant_}});
  if (!released) return Error{released.error().message};
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

// A state value in Redis is "#<HMAC-SHA256 in hex>\n" and the stamped value, the MAC over the
// state's key name, a newline and the stamped value: a history planted under one key, or copied
// from another key or tenant, does not verify without the server's secret.
std::string mac_of(const std::string& secret, std::string_view name, std::string_view stamped_value) {
  hmac_sha256_ctx ctx;
  hmac_sha256_set_key(&ctx, secret.size(), reinterpret_cast<const std::uint8_t*>(secret.data()));
  hmac_sha256_update(&ctx, name.size(), reinterpret_cast<const std::uint8_t*>(name.data()));
  hmac_sha256_update(&ctx, 1, reinterpret_cast<const std::uint8_t*>("\n"));
  hmac_sha256_update(&ctx, stamped_value.size(), reinterpret_cast<const std::uint8_t*>(stamped_value.data()));
  std::uint8_t digest[SHA256_DIGEST_SIZE];
  hmac_sha256_digest(&ctx, sizeof digest, digest);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (std::uint8_t b : digest) hex += {kHex[b >> 4], kHex[b & 15]};
  return hex;
}

std::string signed_value(const std::string& secret, std::string_view name, std::string_view stamped_value) {
  return "#" + mac_of(secret, name, stamped_value) + "\n" + std::string(stamped_value);
}

// The stamped value when one of `secrets` signed it (the new one first, during a rotation).
std::optional<std::string> verified(const std::vector<std::string>& secrets, std::string_view name, std::string_view value) {
  if (value.size() < 66 || value[0] != '#' || value[65] != '\n') return std::nullopt;
  const std::string_view mac = value.substr(1, 64), rest = value.substr(66);
  for (const std::string& secret : secrets)
    if (memeql_sec(mac_of(secret, name, rest).data(), mac.data(), 64)) return std::string(rest);
  return std::nullopt;
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

const Expected<std::vector<std::string>>& RedisStore::secrets() {
  if (!secrets_) secrets_ = read_state_secrets(config_);
  return *secrets_;
}

// Asks at most kProbeChunk keys an EVAL, longest first, and kProbeLimit in all: a body of 800k
// tiny messages would otherwise send one script 800k keys, which holds the shared Redis for its
// whole run. A history whose last known prefix is further back is a miss (a full run). A state
// that does not verify is a miss too, counted, and the next shorter prefix is asked for.
Expected<std::optional<StoredState>> RedisStore::lookup(const std::vector<std::string>& keys, std::size_t count) {
  const auto& signing = secrets();
  if (!signing) return Error{"continuity state: " + signing.error().message};
  std::size_t asked = 0;
  int forged = 0;
  for (std::size_t top = count; top > 0 && asked < kProbeLimit && forged < kForgedLimit;) {
    const std::size_t n = std::min({kProbeChunk, top, kProbeLimit - asked});
    std::vector<std::string> names;
    names.reserve(n);
    for (std::size_t i = top - n; i < top; ++i) names.push_back(state_key(is_state_key(keys[i]) ? keys[i] : std::string(64, '-')));
    const std::string how_many = std::to_string(n);
    RedisClient::Command eval{"EVAL", kLongestScript, how_many};
    for (const std::string& name : names) eval.push_back(name);
    auto replies = client_.run({eval});
    if (!replies) return Error{"continuity state: " + replies.error().message};
    asked += n;
    const RedisReply& r = replies->front();
    if (r.type != RedisReply::Type::array || r.elements.size() != 2 || r.elements[0].integer < 1 ||
        static_cast<std::size_t>(r.elements[0].integer) > n) {
      top -= n;
      continue;
    }
    const std::size_t covered = top - n + static_cast<std::size_t>(r.elements[0].integer);
    if (auto value = verified(*signing, names[covered - 1 - (top - n)], r.elements[1].text))
      return std::optional<StoredState>(read_stamped(covered, std::move(*value)));
    ++counters_.state_rejected;
    ++forged;
    top = covered - 1;
  }
  return std::optional<StoredState>();
}

Expected<std::optional<StoredState>> RedisStore::longest_state(const std::vector<std::string>& keys, std::size_t count) {
  const auto started = Clock::now();
  auto out = lookup(keys, std::min(count, keys.size()));
  counters_.state_get_us = us_since(started);
  if (!out) failed(counters_.state_get_errors, out.error().message);
  return out;
}

// SET NX PX: the key exists while the lease lasts, and Redis ends it on time.
Expected<bool> RedisStore::take_lease(const std::string& key, std::int64_t ttl_ms) {
  if (!is_state_key(key)) return Error{"\"" + key + "\" is not a state key"};
  const std::string name = tag_ + ":lease:" + key, ttl = std::to_string(ttl_ms);
  auto replies = client_.run({{"SET", name, "1", "NX", "PX", ttl}});
  if (!replies) return Error{"lease: " + replies.error().message};
  return !replies->empty() && replies->front().type == RedisReply::Type::status;
}

void RedisStore::release_lease(const std::string& key) {
  if (is_state_key(key)) (void)client_.run({{"DEL", tag_ + ":lease:" + key}});
}

Expected<bool> RedisStore::put_state(const std::string& key, std::string_view bytes, const std::string& supersedes) {
  const auto started = Clock::now();
  auto done = [&](Expected<bool> out) {
    counters_.state_put_us = us_since(started);
    return out;
  };
  auto fail = [&](const std::string& why) {
    failed(counters_.state_put_errors, why);
    return done(Error{why});
  };
  if (!is_state_key(key)) return fail("\"" + key + "\" is not a state key");
  const auto& signing = secrets();
  if (!signing) return fail("continuity state: " + signing.error().message);
  const std::string value = signed_value(signing->front(), state_key(key), stamped(bytes));
  auto lifetime = admit(static_cast<std::int64_t>(value.size()), "continuity state");  // counts its own
  if (!lifetime) return done(lifetime.error());
  // Each call's state holds the whole compacted history: the one it continued from is needed
  // only by a retry or a rewind, so it goes sooner (LT: never later than it would have).
  const bool superseding = is_state_key(supersedes) && supersedes != key;
  const std::string ttl = std::to_string(*lifetime > 0 ? std::min(*lifetime, config_.state_ttl_s) : config_.state_ttl_s);
  const std::string shorter = std::to_string(config_.superseded_ttl_s), now = std::to_string(unix_ms()),
                    bound = std::to_string(bounds_.tenant_bytes), name = state_key(key),
                    previous = state_key(superseding ? supersedes : key);
  auto replies = client_.run({{"EVAL", kPutStateScript, "5", name, tag_ + ":states", tag_ + ":state_sizes", tag_ + ":bytes", previous,
                               value, ttl, now, bound, shorter, key, superseding ? std::string_view(supersedes) : std::string_view(),
                               *lifetime > 0 ? "1" : "0"}});
  if (!replies) return fail("continuity state: " + replies.error().message);
  const RedisReply& r = replies->front();
  const long long held = r.elements.size() == 2 ? r.elements[1].integer : -1;
  if (r.elements.size() == 2 && r.elements[0].integer < 0)
    return done(over_bound(false, fmt::format("continuity state: {} holds {} bytes, and this state would pass serve.tenant_max_bytes ({})",
                                              where(), held, bounds_.tenant_bytes)));
  if (*lifetime == 0 && held >= 0) counters_.usage_bytes = held;
  return done(true);
}

Expected<ArchiveGcResult> RedisStore::collect_garbage(std::chrono::hours keep, bool dry_run) {
  const auto now = std::chrono::system_clock::now();
  const std::string cutoff = std::to_string(std::chrono::duration_cast<std::chrono::seconds>((now - keep).time_since_epoch()).count());
  const std::string index = index_key(), prefix = tag_ + ":b:";
  ArchiveGcResult result;
  if (dry_run) return listed_garbage(cutoff);
  for (;;) {
    auto replies = client_.run({{"EVAL", kCollectScript, "2", index, tag_ + ":bytes", cutoff, prefix, "500"}});
    if (!replies) return Error{replies.error().message};
    result.removed += static_cast<std::size_t>(replies->front().integer);
    if (replies->front().integer < 500) break;
  }
  auto left = client_.run({{"ZCARD", index}});
  if (!left) return Error{left.error().message};
  result.kept = static_cast<std::size_t>(left->front().integer);
  return result;
}

// What gc would remove: the blobs the index dates at or before `cutoff`, a page at a time.
Expected<ArchiveGcResult> RedisStore::listed_garbage(const std::string& cutoff) {
  ArchiveGcResult result;
  const std::string index = index_key();
  for (std::size_t offset = 0;; offset += 1000) {
    auto page = client_.run({{"ZRANGEBYSCORE", index, "-inf", cutoff, "LIMIT", std::to_string(offset), "1000"}});
    if (!page) return Error{page.error().message};
    std::vector<std::string> keys;
    for (const RedisReply& hex : page->front().elements) keys.push_back(blob_key(hex.text));
    std::vector<RedisClient::Command> sizes;
    for (const std::string& key : keys) sizes.push_back({"STRLEN", key});
    auto lengths = sizes.empty() ? Expected<std::vector<RedisReply>>(std::vector<RedisReply>()) : client_.run(sizes);
    if (!lengths) return Error{lengths.error().message};
    for (std::size_t i = 0; i < keys.size(); ++i) {
      result.would_remove.push_back("sha256:" + page->front().elements[i].text);
      result.bytes += static_cast<std::uint64_t>((*lengths)[i].integer);
    }
    if (keys.size() < 1000) break;
  }
  result.removed = result.would_remove.size();
  auto all = client_.run({{"ZCARD", index}});
  if (!all) return Error{all.error().message};
  result.kept = static_cast<std::size_t>(all->front().integer) - result.removed;
  return result;
}

}  // namespace compactor::store
