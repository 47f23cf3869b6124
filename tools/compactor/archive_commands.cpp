// compactor restore RECEIPT [--archive DIR | --config F] [--tenant T | --tenant-key-env NAME];
// compactor archive gc --keep-days N [--archive DIR | --config F] [--tenant T | --tenant-key-env NAME | --every-tenant] [--dry-run]
#include "command_line.hpp"
#include "commands.hpp"

#include "serve/tenant.hpp"

#include "archive/archive_gc.hpp"
#include "archive/archive_store.hpp"
#include "host/exit_code.hpp"
#include "host/pipeline_config.hpp"
#include "store/folder_store.hpp"
#include "store/store.hpp"

#include <fmt/core.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <filesystem>

namespace compactor::cli {

namespace {

constexpr const char* kDefaultArchive = ".compactor/archive";

constexpr const char* kRestoreHelp = R"(usage: compactor restore RECEIPT [--archive DIR | --config F] [--tenant T | --tenant-key-env NAME]

Prints the exact bytes archived under RECEIPT (sha256:<64 hex digits>), after verifying that they
still hash to it: a tool_result's content as JSON, a message, or a JSONL snapshot of messages.
DIR defaults to .compactor/archive (the default `archive.dir`, relative to the working folder).
--config reads the store the config names: a Redis store (store: {kind: redis, …}) from any
machine that reaches it, else the config's archive.dir. --tenant T reads tenant T's archive
(serve's client name, or key-<16 hex>), never another's; without it, the default namespace.
--tenant-key-env NAME reads the tenant of the API key in environment variable NAME, as serve
derives it when it has no clients configured (ANTHROPIC_API_KEY, say), as `compactor mcp` does.
Exit 0, or 2 when the receipt is malformed, not in the archive, the blob does not match it, or
the store cannot be reached.
)";

constexpr const char* kArchiveHelp = R"(usage: compactor archive gc --keep-days N [--archive DIR | --config F]
                          [--tenant T | --tenant-key-env NAME | --every-tenant] [--dry-run]

Removes the blobs (and stale temporary files) of the archive whose last modification is more than
N days old (0 to 36500), and at once the temporary files of a run whose process is gone. A run's
blobs are one pack, removed whole by its age. Only the archive's own files are touched:
<2 hex>/<64 hex> blobs, pack/<64 hex>.pack packs and their .tmp.<pid>.<n> temporaries; symbolic
links are not followed. The continuity state `serve` keeps in <DIR>/serve-state (a file per
compacted call) goes by the same age. A removed blob can no longer be restored: run it only for conversations you no longer
need to recover, and keep N above the age of any conversation still in use. --tenant T collects
tenant T's archive only (each tenant's retention is its own gc); --every-tenant the default
namespace and every tenant's, one line each, with the same N; --config F the store F names:
on Redis, the blobs put more than N days ago (continuity state expires there by itself, after
store.state_ttl_s). --tenant-key-env NAME collects the tenant of the API key in variable NAME,
as serve derives it. --dry-run removes nothing: it names each file (or, on Redis, receipt) it
would remove, one a line, then the same summary with their bytes.
)";

// The namespace: --tenant T, or the tenant of the API key --tenant-key-env names (as serve derives
// it), else the default ("").
Expected<std::string> chosen_tenant(const ParsedArgs& args) {
  if (auto env = args.get("tenant-key-env")) {
    if (args.has("tenant") || args.has("every-tenant")) return Error{"give one of --tenant, --tenant-key-env and --every-tenant"};
    const char* key = std::getenv(env->c_str());
    if (key == nullptr || *key == '\0') return Error{"--tenant-key-env: the environment variable " + *env + " is not set"};
    return serve::tenant_of_key(key);
  }
  const std::string tenant = args.get("tenant").value_or("");
  if (args.has("tenant") && !is_tenant_id(tenant))
    return Error{"--tenant \"" + tenant + "\" is not a tenant id ([a-z0-9][a-z0-9_-]{0,63})"};
  return tenant;
}

// The store RECEIPT and gc work on: --config's, else the folder --archive names (the default's).
Expected<StoreSettings> chosen_settings(const ParsedArgs& args) {
  if (args.has("config") && args.has("archive")) return Error{"give --archive DIR or --config F, not both"};
  if (args.has("tenant") && args.has("every-tenant")) return Error{"give --tenant T or --every-tenant, not both"};
  StoreSettings settings;
  if (auto config = args.get("config")) {
    auto read = config_store_settings(*config);
    if (!read) return read.error();
    settings = *read;
  } else {
    settings.archive_dir = args.get("archive").value_or(kDefaultArchive);
  }
  return settings;
}

// One namespace's gc, said in one line (a dry run's after what it would remove); false when it
// failed (said on stderr).
bool collect_one(const StoreSettings& settings, const std::string& tenant, long days, bool dry_run) {
  // A tenant that has archived nothing yet has no folder: nothing to collect (a timer per tenant
  // runs for developers who have not used serve yet too).
  if (!tenant.empty() && settings.store.kind == StoreConfig::Kind::folder) {
    std::error_code ec;
    const std::string dir = store::tenant_folder(settings.archive_dir, tenant);
    if (!std::filesystem::exists(dir, ec)) {
      fmt::print("archive gc {}: nothing archived for tenant {} yet, removed 0\n", dir, tenant);
      return true;
    }
  }
  auto chosen = store::open_store(settings.store, settings.archive_dir, tenant);
  auto r = chosen->collect_garbage(std::chrono::hours(24 * days), dry_run);
  if (!r) {
    fmt::print(stderr, "compactor archive gc: {}\n", r.error().message);
    return false;
  }
  for (const std::string& item : r->would_remove) fmt::print("would remove {}\n", item);
  const auto* folder = dynamic_cast<const store::FolderStore*>(chosen.get());
  fmt::print("archive gc {}: {} {} {} older than {} day(s){}{}{}, kept {}{}\n", folder ? folder->dir() : chosen->where(),
             dry_run ? "would remove" : "removed", r->removed, folder ? "file(s)" : "blob(s)", days,
             r->orphans ? fmt::format(" or left by a process that is gone ({})", r->orphans) : "",
             r->state ? fmt::format(" ({} of them continuity state)", r->state) : "", dry_run ? fmt::format(", {} bytes", r->bytes) : "",
             r->kept, dry_run ? "; nothing removed (--dry-run)" : "");
  return true;
}

}  // namespace

int restore_command(int argc, char** argv) {
  std::string error;
  auto args = parse_args(argc, argv, 2, {{"archive"}, {"config"}, {"tenant"}, {"tenant-key-env"}}, error);
  if (args && args->help) {
    fmt::print("{}", kRestoreHelp);
    return kExitOk;
  }
  if (args && args->positional.size() != 1) error = args->positional.empty() ? "a RECEIPT is required" : "only one RECEIPT";
  if (!args || !error.empty()) {
    fmt::print(stderr, "compactor restore: {}\n{}", error, kRestoreHelp);
    return kExitBadInput;
  }
  auto settings = chosen_settings(*args);
  auto chosen = chosen_tenant(*args);
  if (!settings || !chosen) {
    fmt::print(stderr, "compactor restore: {}\n", !settings ? settings.error().message : chosen.error().message);
    return kExitBadInput;
  }
  const std::string tenant = *chosen;
  auto bytes = store::open_store(settings->store, settings->archive_dir, tenant)->restore(args->positional.front());
  if (!bytes) {
    // A receipt serve wrote for a tenant is in that tenant's namespace only.
    std::error_code ec;
    const bool tenants = tenant.empty() && settings->store.kind == StoreConfig::Kind::folder &&
                         std::filesystem::is_directory(std::filesystem::path(settings->archive_dir) / "tenants", ec);
    fmt::print(stderr, "compactor restore: {}{}\n", bytes.error().message,
               tenants ? " (this archive has tenants: a receipt serve wrote for one is in its namespace, --tenant T)" : "");
    return kExitBadInput;
  }
  std::fwrite(bytes->data(), 1, bytes->size(), stdout);
  return kExitOk;
}

int archive_command(int argc, char** argv) {
  if (argc >= 3 && (std::string_view(argv[2]) == "--help" || std::string_view(argv[2]) == "-h")) {
    fmt::print("{}", kArchiveHelp);
    return kExitOk;
  }
  if (argc < 3 || std::string_view(argv[2]) != "gc") {
    fmt::print(stderr, "compactor archive: expected the subcommand gc\n{}", kArchiveHelp);
    return kExitBadInput;
  }
  std::string error;
  auto args = parse_args(argc, argv, 3,
                         {{"archive"}, {"keep-days"}, {"config"}, {"tenant"}, {"tenant-key-env"}, {"every-tenant", false}, {"dry-run", false}},
                         error);
  if (args && args->help) {
    fmt::print("{}", kArchiveHelp);
    return kExitOk;
  }
  // Whole days, bounded so that the cut-off cannot overflow (60,000 days wrapped to "all").
  constexpr long kMaxDays = 36500;
  long days = -1;
  if (args && args->get("keep-days")) {
    std::string text = *args->get("keep-days");
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), days);
    if (ec != std::errc() || end != text.data() + text.size() || days > kMaxDays) days = -1;
  }
  if (args && days < 0) error = "--keep-days takes a whole number of days from 0 to " + std::to_string(kMaxDays);
  if (!args || !error.empty()) {
    fmt::print(stderr, "compactor archive gc: {}\n{}", error, kArchiveHelp);
    return kExitBadInput;
  }
  auto settings = chosen_settings(*args);
  auto chosen = chosen_tenant(*args);
  if (!settings || !chosen) {
    fmt::print(stderr, "compactor archive gc: {}\n", !settings ? settings.error().message : chosen.error().message);
    return kExitBadInput;
  }
  std::vector<std::string> tenants{*chosen};
  if (args->has("every-tenant")) {
    auto listed = store::list_tenants(settings->store, settings->archive_dir);
    if (!listed) {
      fmt::print(stderr, "compactor archive gc: {}\n", listed.error().message);
      return kExitBadInput;
    }
    tenants.insert(tenants.end(), listed->begin(), listed->end());
  }
  bool ok = true;
  for (const std::string& tenant : tenants) ok = collect_one(*settings, tenant, days, args->has("dry-run")) && ok;
  return ok ? kExitOk : kExitBadInput;
}

}  // namespace compactor::cli
