// The store behind continuity state and archived blobs (store/store.hpp): the folder store's
// rules for state files (0600, folders 0700, a folder others could write never read), tenants
// that never see each other's receipts or state, and the Redis store against a Redis server of
// the test's own (tests/support/redis_server.hpp): blobs written once and read from any replica,
// state that expires, gc by age, and faults (down, hung, full, killed and restarted) that come
// back as counted errors in bounded time, never as a wrong answer.
#include "support/redis_server.hpp"
#include "support/test_support.hpp"

#include "archive/archive_store.hpp"
#include "host/pipeline.hpp"
#include "host/pipeline_config.hpp"
#include "host/stderr_logger.hpp"
#include "serve/compaction_job.hpp"
#include "serve/continuity_store.hpp"
#include "serve/mcp_endpoint.hpp"
#include "serve/tenant.hpp"
#include "store/folder_store.hpp"
#include "store/redis_client.hpp"
#include "store/redis_store.hpp"
#include "wire/anthropic/anthropic_messages.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>
#include <fmt/core.h>
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/stat.h>
#include <utime.h>

#include <chrono>
#include <thread>
#include <filesystem>
#include <fstream>

namespace compactor {
namespace {

namespace fs = std::filesystem;
using test::RedisServer;

const std::string kKeyA(64, 'a'), kKeyB(64, 'b');

unsigned mode_of(const fs::path& p) {
  struct stat st {};
  ::stat(p.c_str(), &st);
  return st.st_mode & 07777;
}

// Puts `bytes` through one run's archive of `s` and commits it; the receipt, or the error.
Expected<std::string> archive_one(store::Store& s, const std::string& bytes) {
  auto run = s.open_run(real_file_system());
  auto receipt = run->put(bytes);
  if (!receipt) return receipt;
  if (auto committed = run->commit(); !committed) return committed.error();
  return receipt;
}

StoreConfig redis_config(const RedisServer& redis, std::int64_t timeout_ms = 500) {
  StoreConfig c;
  c.kind = StoreConfig::Kind::redis;
  c.port = redis.port();
  c.timeout_ms = timeout_ms;
  c.state_secret_file = redis.secret_file();
  return c;
}

// A request body of the bundled session's first `count` messages.
std::string body_of(const Conversation& c, std::size_t count) {
  std::string body = R"({"model":"m","max_tokens":5,"messages":[)";
  for (std::size_t i = 0; i < count; ++i) body += (i ? "," : "") + std::string(c[i].raw());
  return body + "]}";
}

Pipeline micro_pipeline(const fs::path& dir) {
  std::ofstream(dir / "c.yaml") << "version: 1\nbudget: {unit: chars, limit: 50000, target: 40000}\narchive: {dir: "
                                << (dir / "archive").string() << "}\nplugin_dirs: [\"" << COMPACTOR_PLUGIN_DIR
                                << "\"]\npipeline:\n  - stage: micro\n    when: over_budget\n    params: {keep_recent: 3, until: target}\n";
  auto loaded = load_pipeline_config((dir / "c.yaml").string());
  if (!loaded.config) throw std::runtime_error(loaded.errors.front());
  auto built = Pipeline::build(std::move(*loaded.config));
  if (!built) throw std::runtime_error(built.error().message);
  return std::move(*built);
}

TEST(FolderStoreState, StateFilesAre0600InFoldersMade0700) {
  const fs::path dir = test::scratch_folder_until_exit("store-modes");
  const mode_t before = ::umask(022);
  store::FolderStore s((dir / "deep" / "archive").string());
  EXPECT_TRUE(s.put_state(kKeyA, "[]"));
  ::umask(before);
  EXPECT_EQ(mode_of(dir / "deep"), 0700u);
  EXPECT_EQ(mode_of(dir / "deep" / "archive"), 0700u);
  EXPECT_EQ(mode_of(dir / "deep" / "archive" / "serve-state"), 0700u);
  EXPECT_EQ(mode_of(dir / "deep" / "archive" / "serve-state" / (kKeyA + ".json")), 0600u);
}

TEST(FolderStoreState, AHistoryPlantedInAFolderOthersCanWriteIsNeverRead) {
  const fs::path dir = test::scratch_folder_until_exit("store-planted");
  const fs::path archive = dir / "archive";
  store::FolderStore s(archive.string());
  ASSERT_TRUE(s.put_state(kKeyA, R"([{"role":"user","content":"planted"}])"));
  ASSERT_TRUE(s.longest_state({kKeyA}, 1).value());  // trusted: read
  fs::permissions(archive / "serve-state", fs::perms::others_write, fs::perm_options::add);
  serve::ContinuityStore continuity(s);
  EXPECT_FALSE(continuity.longest({kKeyA}));
  EXPECT_EQ(s.counters().state_get_errors, 1);
  EXPECT_NE(s.counters().first_error.find("writable by every user"), std::string::npos) << s.counters().first_error;
  // Nor is one written there.
  EXPECT_FALSE(s.put_state(kKeyB, "[]"));
  EXPECT_FALSE(fs::exists(archive / "serve-state" / (kKeyB + ".json")));
}

TEST(FolderStoreState, AFailedPutIsCountedInTheWorkersOutcome) {
  const fs::path dir = test::scratch_folder_until_exit("store-put-fails");
  Pipeline pipeline = micro_pipeline(dir);
  fs::create_directories(dir / "archive");
  std::ofstream(dir / "archive" / "serve-state") << "a file where the state folder should be";
  const Conversation session = test::load_or_die(test::data_path("cc-ff33b5b0-cc51-4271-a3eb-545a85882e5f.json"));
  store::FolderStore s((dir / "archive").string());
  auto log = make_stderr_logger("");
  serve::CompactionResult r = serve::run_compaction(pipeline, s, wire::anthropic_messages(), body_of(session, session.size()), false, nullptr, *log);
  serve::report_store(r.outcome, s, "folder");
  EXPECT_EQ(r.outcome.result, serve::JobOutcome::compacted);  // the request goes on
  EXPECT_EQ(r.outcome.store.state_put_errors, 1);
  EXPECT_NE(r.outcome.store.error.find("serve-state"), std::string::npos) << r.outcome.store.error;
  EXPECT_FALSE(r.outcome.store_fault);
  // And the outcome carries it to the server.
  auto back = serve::JobOutcome::from_json(boost::json::serialize(r.outcome.to_json()));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->store.state_put_errors, 1);
  EXPECT_EQ(back->store.kind, "folder");
}

TEST(Tenants, AFolderTenantHasItsOwnArchiveAndStateAndReachesNoOther) {
  const fs::path dir = test::scratch_folder_until_exit("store-tenants");
  const std::string archive = (dir / "archive").string();
  StoreConfig folder;
  auto alice = store::open_store(folder, archive, "alice"), bob = store::open_store(folder, archive, "bob"),
       plain = store::open_store(folder, archive, "");
  auto receipt = archive_one(*alice, "alice's secret tool output");
  ASSERT_TRUE(receipt) << receipt.error().message;
  ASSERT_TRUE(fs::is_directory(dir / "archive" / "tenants" / "alice" / "pack"));
  EXPECT_EQ(alice->restore(*receipt).value(), "alice's secret tool output");
  EXPECT_FALSE(bob->restore(*receipt));
  EXPECT_FALSE(plain->restore(*receipt));
  ASSERT_TRUE(alice->put_state(kKeyA, "[]"));
  EXPECT_TRUE(alice->longest_state({kKeyA}, 1).value());
  EXPECT_FALSE(bob->longest_state({kKeyA}, 1).value());  // the same key, another namespace
  EXPECT_FALSE(plain->longest_state({kKeyA}, 1).value());
  // The default namespace is today's layout exactly.
  auto mine = archive_one(*plain, "default");
  ASSERT_TRUE(mine);
  EXPECT_EQ(restore_blob(archive, *mine).value(), "default");
  // gc for every namespace at once: the default, then each tenant, a line each.
  EXPECT_EQ(store::list_tenants(folder, archive).value(), std::vector<std::string>{"alice"});  // bob only read
  auto gc = test::run_cli({"archive", "gc", "--keep-days", "1", "--archive", archive, "--every-tenant"});
  EXPECT_EQ(gc.exit_code, 0) << gc.err;
  EXPECT_EQ(gc.out, "archive gc " + archive + ": removed 0 file(s) older than 1 day(s), kept 1\narchive gc " + archive +
                        "/tenants/alice: removed 0 file(s) older than 1 day(s), kept 2\n");
  // A tenant id that is not one never becomes a path.
  auto sneaky = store::open_store(folder, archive, "../alice");
  EXPECT_FALSE(sneaky->restore(*receipt));
  EXPECT_FALSE(is_tenant_id("../alice"));
  EXPECT_FALSE(is_tenant_id("{x}"));
  EXPECT_TRUE(is_tenant_id("key-0123456789abcdef"));
}

TEST(Tenants, ARequestContinuesOnlyItsOwnTenantsConversation) {
  const fs::path dir = test::scratch_folder_until_exit("store-tenant-continuity");
  Pipeline pipeline = micro_pipeline(dir);
  const Conversation session = test::load_or_die(test::data_path("cc-ff33b5b0-cc51-4271-a3eb-545a85882e5f.json"));
  auto log = make_stderr_logger("");
  StoreConfig folder;
  auto alice = store::open_store(folder, (dir / "archive").string(), "alice");
  auto bob = store::open_store(folder, (dir / "archive").string(), "bob");
  auto first = serve::run_compaction(pipeline, *alice, wire::anthropic_messages(), body_of(session, session.size() - 2), false, nullptr, *log);
  ASSERT_EQ(first.outcome.result, serve::JobOutcome::compacted);
  const std::vector<std::string> receipts = find_receipts(first.body);
  ASSERT_FALSE(receipts.empty());
  for (const std::string& receipt : receipts) {
    EXPECT_TRUE(alice->restore(receipt)) << receipt;
    EXPECT_FALSE(bob->restore(receipt)) << receipt;
  }
  auto again = serve::run_compaction(pipeline, *alice, wire::anthropic_messages(), body_of(session, session.size()), false, nullptr, *log);
  EXPECT_TRUE(again.outcome.state_hit);
  // Bob sending Alice's very history continues nothing of hers: his run starts from scratch.
  auto other = serve::run_compaction(pipeline, *bob, wire::anthropic_messages(), body_of(session, session.size()), false, nullptr, *log);
  EXPECT_FALSE(other.outcome.state_hit);
}

// One POST /mcp through McpEndpoint::handle, as the client with `token` (none: no token).
serve::Reply mcp_call(serve::McpEndpoint& endpoint, const std::string& token, const boost::json::object& message,
                      const std::string& session = "") {
  namespace http = boost::beast::http;
  serve::Request req{http::verb::post, "/mcp", 11};
  req.set(http::field::host, "127.0.0.1:0");
  req.set("mcp-protocol-version", "2025-06-18");
  if (!token.empty()) req.set("x-compactor-token", token);
  if (!session.empty()) req.set("mcp-session-id", session);
  req.body() = boost::json::serialize(message);
  req.prepare_payload();
  return endpoint.handle(req);
}

// A client of serve.clients whose token is `name`-token.
ServeClient client_named(const std::string& name) { return {name, serve::sha256_hex(name + "-token")}; }

boost::json::object restore_call(const std::string& receipt) {
  return {{"jsonrpc", "2.0"}, {"id", 1}, {"method", "tools/call"},
          {"params", boost::json::object{{"name", "restore"}, {"arguments", boost::json::object{{"receipt", receipt}}}}}};
}

TEST(Tenants, ServesMcpAnswersEachRequestFromItsTenantsArchiveOnly) {
  RedisServer redis;
  ASSERT_NE(redis.port(), 0);
  const StoreConfig config = redis_config(redis);
  auto receipt = archive_one(*store::open_store(config, "", "alice"), "\"alice's result\"");
  ASSERT_TRUE(receipt);
  serve::McpEndpoint endpoint("/nonexistent", config, "test",
                              serve::McpAccess{"127.0.0.1", 0, true, std::nullopt, {client_named("alice"), client_named("bob")}});
  serve::McpEndpoint open_endpoint("/nonexistent", config, "test", serve::McpAccess{"127.0.0.1", 0, true, std::nullopt, {}});
  auto mine = mcp_call(endpoint, "alice-token", restore_call(*receipt));
  ASSERT_EQ(mine.status, 200) << mine.body;
  EXPECT_NE(mine.body.find("alice's result"), std::string::npos) << mine.body;
  // Bob, and the default tenant of a serve with no clients, restore nothing of Alice's.
  auto bobs = mcp_call(endpoint, "bob-token", restore_call(*receipt));
  EXPECT_NE(bobs.body.find("\"isError\":true"), std::string::npos) << bobs.body;
  EXPECT_EQ(bobs.body.find("alice's result"), std::string::npos);
  auto defaults = mcp_call(open_endpoint, "", restore_call(*receipt));
  EXPECT_NE(defaults.body.find("\"isError\":true"), std::string::npos) << defaults.body;
  EXPECT_EQ(defaults.body.find("alice's result"), std::string::npos);
  // A token this server did not issue reaches nothing.
  EXPECT_EQ(mcp_call(endpoint, "mallory-token", restore_call(*receipt)).status, 401);
  // A session alice opened is unknown to a request for bob.
  auto init = mcp_call(endpoint, "alice-token", {{"jsonrpc", "2.0"}, {"id", 0}, {"method", "initialize"},
                                                 {"params", boost::json::object{{"protocolVersion", "2025-06-18"}, {"capabilities", boost::json::object{}},
                                                                                {"clientInfo", boost::json::object{{"name", "t"}, {"version", "1"}}}}}});
  const std::string session(serve::header_value(init.headers, "mcp-session-id"));
  ASSERT_FALSE(session.empty()) << init.body;
  EXPECT_EQ(mcp_call(endpoint, "bob-token", restore_call(*receipt), session).status, 404);
  EXPECT_EQ(mcp_call(endpoint, "alice-token", restore_call(*receipt), session).status, 200);
}

TEST(RedisStore, ABlobWrittenThroughOneReplicaRestoresThroughAnotherAndNoOtherTenant) {
  RedisServer redis;
  ASSERT_NE(redis.port(), 0);
  const StoreConfig config = redis_config(redis);
  auto a = store::open_store(config, "", ""), b = store::open_store(config, "", ""), alice = store::open_store(config, "", "alice");
  const std::string bytes = "[{\"type\":\"text\",\"text\":\"a result\"}]";
  auto receipt = archive_one(*a, bytes);
  ASSERT_TRUE(receipt) << receipt.error().message;
  EXPECT_EQ(b->restore(*receipt).value(), bytes);
  EXPECT_FALSE(alice->restore(*receipt));
  EXPECT_EQ(redis.cli({"EXISTS", "{compactor}:b:" + receipt->substr(7)}), "1\n");
  EXPECT_EQ(redis.cli({"ZCARD", "{compactor}:blobs"}), "1\n");
  // Written once: a second put of the same blob changes nothing (SET NX), a tampered value is
  // refused on restore.
  ASSERT_TRUE(archive_one(*b, bytes));
  redis.cli({"SET", "{compactor}:b:" + receipt->substr(7), "tampered"});
  auto tampered = a->restore(*receipt);
  ASSERT_FALSE(tampered);
  EXPECT_NE(tampered.error().message.find("does not match its hash"), std::string::npos);
  // What a declined stage put is taken back before anything is shipped.
  auto run = a->open_run(real_file_system());
  const RunArchive::Mark mark = run->mark();
  auto taken_back = run->put(std::string("taken back"));
  run->revert_to(mark);
  ASSERT_TRUE(run->commit());
  EXPECT_FALSE(b->restore(*taken_back));
}

TEST(RedisStore, StateIsTheLongestKnownPrefixExpiresAndComesBackAfterAKill) {
  RedisServer redis;
  ASSERT_NE(redis.port(), 0);
  StoreConfig config = redis_config(redis);
  config.state_ttl_s = 3600;
  config.superseded_ttl_s = 60;
  auto a = store::open_store(config, "", ""), b = store::open_store(config, "", ""), alice = store::open_store(config, "", "alice");
  ASSERT_TRUE(a->put_state(kKeyA, "short"));
  ASSERT_TRUE(a->put_state(kKeyB, "long", kKeyA));  // continues A: A is needed only for a rewind now
  EXPECT_LE(std::stol(redis.cli({"TTL", "{compactor}:s:" + kKeyA})), 60);
  auto found = b->longest_state({kKeyA, kKeyB, std::string(64, 'c')}, 3).value();
  ASSERT_TRUE(found);
  EXPECT_EQ(found->covered, 2u);
  EXPECT_EQ(found->bytes, "long");
  EXPECT_EQ(b->longest_state({kKeyA, kKeyB}, 1).value()->bytes, "short");  // only the first `count` keys
  EXPECT_FALSE(alice->longest_state({kKeyA, kKeyB}, 2).value());
  const long ttl = std::stol(redis.cli({"TTL", "{compactor}:s:" + kKeyB}));
  EXPECT_GT(ttl, 3500);
  EXPECT_LE(ttl, 3600);
  // kill -9, then a restart from the append-only file: the state is there again.
  redis.kill_hard();
  EXPECT_FALSE(b->longest_state({kKeyA, kKeyB}, 2));
  EXPECT_EQ(b->counters().state_get_errors, 1);
  ASSERT_TRUE(redis.restart());
  auto c = store::open_store(config, "", "");  // the one that failed waits a second before trying again
  EXPECT_EQ(c->longest_state({kKeyA, kKeyB}, 2).value()->bytes, "long");
}

TEST(RedisStore, GcRemovesBlobsByAgePerTenant) {
  RedisServer redis;
  ASSERT_NE(redis.port(), 0);
  const StoreConfig config = redis_config(redis);
  auto plain = store::open_store(config, "", ""), alice = store::open_store(config, "", "alice");
  auto old = archive_one(*plain, "old"), hers = archive_one(*alice, "hers");
  ASSERT_TRUE(old && hers);
  redis.cli({"ZADD", "{compactor}:blobs", "1000", old->substr(7)});  // written long ago
  auto kept = plain->collect_garbage(std::chrono::hours(24));
  ASSERT_TRUE(kept);
  EXPECT_EQ(kept->removed, 1u);
  EXPECT_FALSE(plain->restore(*old));
  EXPECT_TRUE(alice->restore(*hers));  // another tenant's retention is its own
  EXPECT_EQ(store::list_tenants(config, "").value(), std::vector<std::string>{"alice"});
  auto all = alice->collect_garbage(std::chrono::hours(0));
  ASSERT_TRUE(all);
  EXPECT_EQ(all->removed, 1u);
  EXPECT_FALSE(alice->restore(*hers));
}

TEST(RedisStore, DownHungOrFullItFailsInBoundedTimeAndNamesNoBlobItDidNotStore) {
  using Clock = std::chrono::steady_clock;
  {
    StoreConfig nowhere;
    nowhere.kind = StoreConfig::Kind::redis;
    nowhere.port = 1;  // nothing listens there
    auto s = store::open_store(nowhere, "", "");
    auto r = archive_one(*s, "blob");
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("redis://127.0.0.1:1/0"), std::string::npos) << r.error().message;
    EXPECT_EQ(s->counters().blob_errors, 1);
    EXPECT_FALSE(s->put_state(kKeyA, "[]"));
    EXPECT_EQ(s->counters().state_put_errors, 1);
  }
  {
    RedisServer redis;
    ASSERT_NE(redis.port(), 0);
    auto s = store::open_store(redis_config(redis, 200), "", "");
    ASSERT_TRUE(s->put_state(kKeyA, "[]"));
    const pid_t pid = std::stoi(redis.cli({"INFO", "server"}).substr(redis.cli({"INFO", "server"}).find("process_id:") + 11));
    ::kill(pid, SIGSTOP);  // hung: connected, never answering
    const auto started = Clock::now();
    EXPECT_FALSE(s->longest_state({kKeyA}, 1));
    EXPECT_FALSE(archive_one(*s, "blob"));  // at once: the client keeps quiet a second after a failure
    EXPECT_LT(Clock::now() - started, std::chrono::seconds(5));
    ::kill(pid, SIGCONT);
  }
  {
    RedisServer full({"--maxmemory", "2mb", "--maxmemory-policy", "noeviction"});
    ASSERT_NE(full.port(), 0);
    auto s = store::open_store(redis_config(full), "", "");
    std::string big(3 << 20, 'x');
    auto r = archive_one(*s, big);
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("OOM"), std::string::npos) << r.error().message;
    EXPECT_FALSE(s->restore(receipt_of(big)));
  }
}

// A tenant's bytes (blobs and live state) are counted where every replica sees them, and what
// would pass serve.tenant_max_bytes is refused whole, as a bound (not a failure).
TEST(RedisStore, ATenantsBytesAreCountedAndBounded) {
  RedisServer redis;
  ASSERT_NE(redis.port(), 0);
  auto s = store::open_store(redis_config(redis), "", "alice");
  s->bound(store::TenantBounds{400});
  auto count = [&] { return std::stol(redis.cli({"GET", "{compactor:alice}:bytes"})); };
  ASSERT_TRUE(archive_one(*s, std::string(100, 'a')));
  EXPECT_EQ(count(), 100);
  ASSERT_TRUE(archive_one(*s, std::string(100, 'a')));  // the same blob again: nothing new
  EXPECT_EQ(count(), 100);
  ASSERT_TRUE(s->put_state(kKeyA, std::string(50, 's')));
  const long state = std::stol(redis.cli({"STRLEN", "{compactor:alice}:s:" + kKeyA}));
  EXPECT_EQ(count(), 100 + state);
  ASSERT_TRUE(s->put_state(kKeyA, std::string(50, 't')));  // replaced: counted once
  EXPECT_EQ(count(), 100 + state);
  auto over = archive_one(*s, std::string(300, 'b'));
  ASSERT_FALSE(over);
  EXPECT_NE(over.error().message.find("serve.tenant_max_bytes (400)"), std::string::npos) << over.error().message;
  EXPECT_EQ(s->counters().over_tenant_bound, 1);
  EXPECT_EQ(s->counters().blob_errors, 0);
  EXPECT_FALSE(s->restore(receipt_of(std::string(300, 'b'))));
  // A state that expired leaves the count at the next write; gc's removals too.
  redis.cli({"ZADD", "{compactor:alice}:states", "0", kKeyA});
  ASSERT_TRUE(s->put_state(kKeyB, "x"));
  EXPECT_EQ(count(), 100 + std::stol(redis.cli({"STRLEN", "{compactor:alice}:s:" + kKeyB})));
  redis.cli({"ZADD", "{compactor:alice}:blobs", "1000", receipt_of(std::string(100, 'a')).substr(7)});
  ASSERT_TRUE(s->collect_garbage(std::chrono::hours(24)));
  EXPECT_EQ(count(), std::stol(redis.cli({"STRLEN", "{compactor:alice}:s:" + kKeyB})));
}

TEST(FolderStoreState, ATenantsBytesAreCountedAndBounded) {
  const fs::path dir = test::scratch_folder_until_exit("store-bounded");
  const std::string archive = (dir / "archive").string();
  auto s = store::open_store(StoreConfig{}, archive, "alice");
  s->bound(store::TenantBounds{2000});
  auto count = [&] { return std::stol(test::read_file(archive + "/tenants/alice/usage")); };
  ASSERT_TRUE(archive_one(*s, std::string(100, 'a')));
  auto on_disk = [&] {
    long total = 0;
    for (const auto& e : fs::recursive_directory_iterator(archive + "/tenants/alice"))
      if (e.is_regular_file() && e.path().filename() != "usage") total += static_cast<long>(e.file_size());
    return total;
  };
  EXPECT_EQ(count(), on_disk());  // the pack with its index
  ASSERT_TRUE(s->put_state(kKeyA, std::string(50, 's')));
  ASSERT_TRUE(s->put_state(kKeyA, std::string(40, 't')));  // replaced by a smaller one
  EXPECT_EQ(count(), on_disk());
  auto over = archive_one(*s, std::string(3000, 'b'));
  ASSERT_FALSE(over);
  EXPECT_NE(over.error().message.find("serve.tenant_max_bytes (2000)"), std::string::npos) << over.error().message;
  EXPECT_EQ(s->counters().over_tenant_bound, 1);
  EXPECT_EQ(count(), on_disk());  // nothing of it stayed
  // gc forgets the count; the next write measures the folder again.
  ASSERT_TRUE(s->collect_garbage(std::chrono::hours(0)));
  ASSERT_TRUE(s->put_state(kKeyB, "x"));
  EXPECT_EQ(count(), on_disk());
}

// Every command Redis ran since the slow log was reset (it logs each one): the name, and for an
// EVAL the number of keys it was given.
std::vector<std::pair<std::string, long>> commands_run(const StoreConfig& config) {
  store::RedisClient admin(config);
  auto replies = admin.run({{"SLOWLOG", "GET", "100000"}});
  std::vector<std::pair<std::string, long>> out;
  if (!replies) return out;
  for (const auto& entry : replies->front().elements) {
    if (entry.elements.size() < 4 || entry.elements[3].elements.empty()) continue;
    const auto& args = entry.elements[3].elements;
    const std::string name = args[0].text;
    out.emplace_back(name, name == "EVAL" && args.size() > 2 ? std::stol(args[2].text) : 0);
  }
  return out;  // the newest first
}

void log_every_command(const StoreConfig& config) {
  store::RedisClient admin(config);
  ASSERT_TRUE(admin.run({{"CONFIG", "SET", "slowlog-log-slower-than", "0"}, {"CONFIG", "SET", "slowlog-max-len", "100000"},
                         {"SLOWLOG", "RESET"}}));
}

// A body of 800k tiny messages must not send Redis one script of 800k keys (it would hold the
// shared server for the script's whole run): a lookup asks at most 512 keys a call, longest
// first, and 8,192 in all; a conversation whose last state is further back is a miss.
TEST(RedisStore, AStateLookupAsksABoundedNumberOfKeys) {
  RedisServer redis;
  ASSERT_NE(redis.port(), 0);
  const StoreConfig config = redis_config(redis);
  auto s = store::open_store(config, "", "");
  std::vector<std::string> keys;
  for (int i = 0; i < 20000; ++i) keys.push_back(fmt::format("{:064x}", i));
  ASSERT_TRUE(s->put_state(keys[18999], "[]"));  // the state of the first 19,000 messages
  ASSERT_TRUE(s->put_state(keys[4999], "[]"));   // and of the first 5,000: past the bound
  log_every_command(config);
  auto found = s->longest_state(keys, keys.size()).value();
  ASSERT_TRUE(found);
  EXPECT_EQ(found->covered, 19000u);
  long asked = 0, largest = 0;
  for (const auto& [name, count] : commands_run(config)) {
    if (name != "EVAL") continue;
    asked += count;
    largest = std::max(largest, count);
  }
  EXPECT_EQ(asked, 1024);  // two calls: 19,488-20,000, then 18,976-19,488
  EXPECT_EQ(largest, 512);
  // Without the newer state, the lookup stops at 8,192 keys: the one 15,000 back is not asked.
  redis.cli({"DEL", "{compactor}:s:" + keys[18999]});
  log_every_command(config);
  EXPECT_FALSE(s->longest_state(keys, keys.size()).value());
  asked = largest = 0;
  for (const auto& [name, count] : commands_run(config))
    if (name == "EVAL") asked += count, largest = std::max(largest, count);
  EXPECT_EQ(asked, 8192);
  EXPECT_EQ(largest, 512);
}

// A run's blobs and their gc index entries go in one script: gc runs before or after it, never
// between a blob and its entry (a blob removed after its entry was refreshed would be a receipt
// that no longer restores).
TEST(RedisStore, ARunsBlobsAndTheirIndexEntriesAreWrittenInOneScript) {
  RedisServer redis;
  ASSERT_NE(redis.port(), 0);
  const StoreConfig config = redis_config(redis);
  auto s = store::open_store(config, "", "");
  log_every_command(config);
  auto run = s->open_run(real_file_system());
  ASSERT_TRUE(run->put(std::string("one blob")));
  ASSERT_TRUE(run->put(std::string("another")));
  ASSERT_TRUE(run->commit());
  // The slow log lists a script's own commands, then the script: the commit was one EVAL, and no
  // command came after it.
  std::vector<std::string> names;
  for (const auto& [name, count] : commands_run(config)) names.push_back(name);
  ASSERT_FALSE(names.empty());
  EXPECT_EQ(std::count(names.begin(), names.end(), "EVAL"), 1) << ::testing::PrintToString(names);
  EXPECT_EQ(names.front(), "EVAL") << ::testing::PrintToString(names);
  EXPECT_EQ(redis.cli({"ZCARD", "{compactor}:blobs"}), "2\n");
}

// State is signed with the server's secret (store.state_secret_*): a history planted by whoever
// can write Redis, or a signed one copied under another key or tenant, is a miss, counted; during
// a rotation the new secret signs and either verifies.
TEST(RedisStore, StateThatDoesNotVerifyIsAMissAndCounted) {
  RedisServer redis;
  ASSERT_NE(redis.port(), 0);
  StoreConfig config = redis_config(redis);
  auto s = store::open_store(config, "", "");
  ASSERT_TRUE(s->put_state(kKeyA, "[\"short\"]"));
  ASSERT_TRUE(s->put_state(kKeyB, "[\"long\"]"));
  const std::string signed_b = redis.cli({"GET", "{compactor}:s:" + kKeyB});
  EXPECT_EQ(signed_b.substr(0, 1), "#");
  // Planted, unsigned, under the longer key: a miss there; the shorter prefix still serves.
  redis.cli({"SET", "{compactor}:s:" + kKeyB, "@1\n[\"planted\"]"});
  auto found = s->longest_state({kKeyA, kKeyB}, 2).value();
  ASSERT_TRUE(found);
  EXPECT_EQ(found->covered, 1u);
  EXPECT_EQ(found->bytes, "[\"short\"]");
  EXPECT_EQ(s->counters().state_rejected, 1);
  EXPECT_EQ(s->counters().state_get_errors, 0);  // a miss, not an error
  // A signed value copied under another key, or into another tenant's namespace, does not verify.
  const std::string signed_a = redis.cli({"GET", "{compactor}:s:" + kKeyA});
  redis.cli({"SET", "{compactor}:s:" + kKeyB, signed_a.substr(0, signed_a.size() - 1)});
  redis.cli({"SET", "{compactor:bob}:s:" + kKeyA, signed_a.substr(0, signed_a.size() - 1)});
  EXPECT_EQ(s->longest_state({kKeyA, kKeyB}, 2).value()->covered, 1u);
  EXPECT_FALSE(store::open_store(config, "", "bob")->longest_state({kKeyA}, 1).value());
  // Rotation: the new secret first, the old one still verifying what it signed.
  const fs::path dir = test::scratch_folder_until_exit("store-rotation");
  std::ofstream(dir / "rotating") << "a-brand-new-secret-value\n" << test::read_file(redis.secret_file());
  std::ofstream(dir / "new-only") << "a-brand-new-secret-value\n";
  StoreConfig rotating = config, renewed = config;
  rotating.state_secret_file = (dir / "rotating").string();
  renewed.state_secret_file = (dir / "new-only").string();
  auto during = store::open_store(rotating, "", "");
  EXPECT_EQ(during->longest_state({kKeyA}, 1).value()->bytes, "[\"short\"]");  // the old secret's
  ASSERT_TRUE(during->put_state(kKeyB, "[\"renewed\"]"));
  EXPECT_EQ(store::open_store(renewed, "", "")->longest_state({kKeyA, kKeyB}, 2).value()->bytes, "[\"renewed\"]");
  auto old_only = store::open_store(config, "", "");
  EXPECT_EQ(old_only->longest_state({kKeyA, kKeyB}, 2).value()->covered, 1u);  // the new secret's is not the old's
  EXPECT_EQ(old_only->counters().state_rejected, 1);
}

// `archive gc --dry-run` names what gc would remove, with the same summary, and removes nothing.
TEST(ArchiveCommands, GcDryRunSaysWhatItWouldRemoveAndRemovesNothing) {
  const fs::path dir = test::scratch_folder_until_exit("gc-dry-run");
  const std::string archive = (dir / "archive").string();
  auto s = store::open_store(StoreConfig{}, archive, "");
  auto receipt = archive_one(*s, "an old tool result");
  ASSERT_TRUE(receipt);
  ASSERT_TRUE(s->put_state(kKeyA, "[]"));
  const auto old = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now() - std::chrono::hours(72));
  std::vector<std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(archive))
    if (e.is_regular_file()) {
      const utimbuf times{old, old};
      ::utime(e.path().c_str(), &times);
      files.push_back(e.path().string());
    }
  ASSERT_EQ(files.size(), 2u);  // the pack and the state file
  auto dry = test::run_cli({"archive", "gc", "--keep-days", "1", "--archive", archive, "--dry-run"});
  EXPECT_EQ(dry.exit_code, 0) << dry.err;
  for (const std::string& f : files) EXPECT_NE(dry.out.find("would remove " + f + "\n"), std::string::npos) << dry.out;
  EXPECT_NE(dry.out.find("archive gc " + archive + ": would remove 2 file(s) older than 1 day(s) (1 of them continuity state), " +
                         std::to_string(fs::file_size(files[0]) + fs::file_size(files[1])) + " bytes, kept 0; nothing removed (--dry-run)\n"),
            std::string::npos)
      << dry.out;
  for (const std::string& f : files) EXPECT_TRUE(fs::exists(f)) << f;
  EXPECT_TRUE(s->restore(*receipt));
  auto real = test::run_cli({"archive", "gc", "--keep-days", "1", "--archive", archive});
  EXPECT_EQ(real.out, "archive gc " + archive + ": removed 2 file(s) older than 1 day(s) (1 of them continuity state), kept 0\n");
  EXPECT_FALSE(s->restore(*receipt));
}

TEST(ArchiveCommands, OnRedisGcDryRunNamesTheReceiptsItWouldRemove) {
  RedisServer redis;
  ASSERT_NE(redis.port(), 0);
  const fs::path dir = test::scratch_folder_until_exit("gc-dry-run-redis");
  std::ofstream(dir / "c.yaml") << "version: 1\nbudget: {unit: chars, limit: 100}\npipeline: []\n" << redis.store_yaml();
  auto s = store::open_store(redis_config(redis), "", "");
  auto old = archive_one(*s, "old bytes"), young = archive_one(*s, "young bytes");
  ASSERT_TRUE(old && young);
  redis.cli({"ZADD", "{compactor}:blobs", "1000", old->substr(7)});
  auto dry = test::run_cli({"archive", "gc", "--keep-days", "1", "--config", (dir / "c.yaml").string(), "--dry-run"});
  EXPECT_EQ(dry.exit_code, 0) << dry.err;
  EXPECT_EQ(dry.out, "would remove " + *old + "\narchive gc " + redis.url() +
                         ": would remove 1 blob(s) older than 1 day(s), 9 bytes, kept 1; nothing removed (--dry-run)\n");
  EXPECT_TRUE(s->restore(*old));
}

// `restore --tenant-key-env NAME`, as `mcp` has it: the tenant of the key in that variable.
TEST(ArchiveCommands, RestoreReadsTheTenantOfTheKeyInAVariable) {
  const fs::path dir = test::scratch_folder_until_exit("restore-key-env");
  const std::string archive = (dir / "archive").string();
  const std::string tenant = "key-" + receipt_of("sk-ant-mine").substr(7, 16);  // as serve derives it
  auto receipt = archive_one(*store::open_store(StoreConfig{}, archive, tenant), "mine");
  ASSERT_TRUE(receipt);
  ::setenv("RESTORE_TEST_KEY", "sk-ant-mine", 1);
  ::setenv("RESTORE_TEST_OTHER_KEY", "sk-ant-theirs", 1);
  auto mine = test::run_cli({"restore", *receipt, "--archive", archive, "--tenant-key-env", "RESTORE_TEST_KEY"});
  EXPECT_EQ(mine.exit_code, 0) << mine.err;
  EXPECT_EQ(mine.out, "mine");
  EXPECT_EQ(test::run_cli({"restore", *receipt, "--archive", archive, "--tenant-key-env", "RESTORE_TEST_OTHER_KEY"}).exit_code, 2);
  auto unset = test::run_cli({"restore", *receipt, "--archive", archive, "--tenant-key-env", "RESTORE_TEST_UNSET"});
  EXPECT_EQ(unset.exit_code, 2);
  EXPECT_NE(unset.err.find("--tenant-key-env: the environment variable RESTORE_TEST_UNSET is not set"), std::string::npos) << unset.err;
  EXPECT_EQ(test::run_cli({"restore", *receipt, "--archive", archive, "--tenant-key-env", "RESTORE_TEST_KEY", "--tenant", tenant}).exit_code, 2);
}

TEST(StoreConfigSection, MistakesAreLocatedAndTlsIsRefusedWithWhatToDo) {
  const fs::path dir = test::scratch_folder_until_exit("store-config");
  auto errors_of = [&](const std::string& store) {
    std::ofstream(dir / "c.yaml") << "version: 1\nbudget: {unit: chars, limit: 100}\npipeline: []\n" << store;
    auto settings = load_serve_settings((dir / "c.yaml").string());
    return settings.errors.empty() ? std::string() : settings.errors.front();
  };
  const std::string file = (dir / "c.yaml").string();
  ::setenv("STORE_TEST_STATE_SECRET", "a-secret-of-twenty-chars other-secret-of-20", 1);
  EXPECT_EQ(errors_of("store: {kind: redis, url: \"redis://10.0.0.5:6379/2\", password_env: REDIS_PASSWORD, state_secret_env: "
                      "STORE_TEST_STATE_SECRET}\n"),
            "");
  // serve signs the state it keeps in Redis: without a secret it does not start, and says what to add.
  EXPECT_EQ(errors_of("store: {kind: redis}\n"),
            file + ":4:8: store: serve signs the continuity state it keeps in Redis, so that whoever can write Redis cannot plant a "
                   "history, and no store.state_secret_file or store.state_secret_env: add `state_secret_file: "
                   "/etc/compactor/state.secret` (a file of one line, `head -c 32 /dev/urandom | base64` makes one) or "
                   "`state_secret_env: NAME` to store:");
  ::setenv("STORE_TEST_STATE_SECRET", "short", 1);
  EXPECT_NE(errors_of("store: {kind: redis, state_secret_env: STORE_TEST_STATE_SECRET}\n")
                .find("store.state_secret_env (STORE_TEST_STATE_SECRET): a secret of 5 characters; at least 16 are needed"),
            std::string::npos);
  EXPECT_EQ(errors_of("store: {kind: redis, state_secret_env: STORE_TEST_STATE_SECRET}\n").find("short"), std::string::npos)
      << "a secret was shown";
  EXPECT_EQ(errors_of("store: {kind: redis, tls: true}\n").substr(0, file.size() + 6), file + ":4:27:");
  EXPECT_NE(errors_of("store: {kind: redis, tls: true}\n").find("hiredis"), std::string::npos);
  EXPECT_NE(errors_of("store: {kind: redis, url: \"redis://:secret@h:6379/0\"}\n").find("store.password_env"), std::string::npos);
  EXPECT_EQ(errors_of("store: {kind: folder, url: \"redis://h:6379/0\"}\n"),
            file + ":4:28: store.url: only a redis store has this key (kind is folder: archive.dir holds everything)");
  EXPECT_NE(errors_of("store: {kind: redis, url: \"http://h\"}\n").find("store.url: expected redis://"), std::string::npos);
  EXPECT_NE(errors_of("store: {kind: redis, colour: blue}\n").find("colour"), std::string::npos);
  auto settings = config_store_settings(file);
  ASSERT_FALSE(settings);  // the last config written: an unknown key
  std::ofstream(dir / "c.yaml") << "version: 1\nbudget: {unit: chars, limit: 100}\npipeline: []\n"
                                   "store: {kind: redis, url: \"redis://[::1]:7000/3\", prefix: team}\n";
  settings = config_store_settings(file);
  ASSERT_TRUE(settings) << settings.error().message;
  EXPECT_EQ(settings->store.host, "::1");
  EXPECT_EQ(settings->store.port, 7000);
  EXPECT_EQ(settings->store.db, 3);
  EXPECT_EQ(settings->store.prefix, "team");
}

}  // namespace
}  // namespace compactor

namespace compactor {
namespace {

// The lease two replicas take before one starts a background summary: one taker wins while it
// lasts, an ended one is taken again, and a released one at once; each tenant's are its own.
void expect_lease_rules(store::Store& a, store::Store& b, store::Store& other_tenant) {
  const std::string key(64, 'a');
  EXPECT_TRUE(a.take_lease(key, 60000).value());
  EXPECT_FALSE(b.take_lease(key, 60000).value());
  EXPECT_TRUE(other_tenant.take_lease(key, 60000).value());
  a.release_lease(key);
  EXPECT_TRUE(b.take_lease(key, 1).value());
  // Held: not taken, however short the taker's own lease would be.
  const std::string other(64, 'b');
  ASSERT_TRUE(a.take_lease(other, 60000).value());
  EXPECT_FALSE(b.take_lease(other, 1).value());
  EXPECT_FALSE(a.take_lease("../x", 1));
}

TEST(StoreLease, OneTakerWinsOnTheFolderStore) {
  const fs::path dir = test::scratch_folder_until_exit("store-lease");
  StoreConfig folder;
  const std::string archive = (dir / "archive").string();
  auto a = store::open_store(folder, archive, "alice"), b = store::open_store(folder, archive, "alice"),
       bob = store::open_store(folder, archive, "bob");
  expect_lease_rules(*a, *b, *bob);
  // An ended lease file is taken over.
  const std::string key(64, 'c');
  ASSERT_TRUE(a->take_lease(key, 1).value());
  bool taken = false;
  for (int i = 0; i < 1000 && !taken; ++i) {  // its end is 1 ms away: waits for that state, bounded
    auto took = b->take_lease(key, 60000);
    taken = took && *took;
    if (!taken) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_TRUE(taken);
  EXPECT_FALSE(a->take_lease(key, 60000).value());
}

TEST(StoreLease, OneTakerWinsOnRedis) {
  RedisServer redis;
  ASSERT_NE(redis.port(), 0);
  const StoreConfig config = redis_config(redis);
  auto a = store::open_store(config, "", "alice"), b = store::open_store(config, "", "alice"), bob = store::open_store(config, "", "bob");
  expect_lease_rules(*a, *b, *bob);
}

}  // namespace
}  // namespace compactor
