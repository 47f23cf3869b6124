// GET /dashboard: the gateway's page for its operators, behind the credentials /metrics takes.
// Per tenant its calls, compactions and what they saved (tokens, USD) with a bar chart of each;
// the config in use (path, hash, generation) and the build; the last compactions with their sizes
// and receipts; the store's kind, whether the last call that used it saw an error, and what each
// tenant holds. Written on the server as one HTML document: its charts are inline SVG, its only
// style an inline sheet the Content-Security-Policy names by hash; no script, no other resource
// (nothing to build, nothing fetched: it renders where the server is reachable and nothing else
// is). It reloads itself every 10 s (a meta refresh). Every name and value is HTML-escaped.
#pragma once

#include "serve/operator_ledger.hpp"
#include "serve/reply.hpp"

#include <cstdint>
#include <string>
#include <string_view>

namespace compactor::serve {

struct DashboardView {
  OperatorLedger::Snapshot ledger;
  std::string config_path, config_hash;
  int generation = 1;
  std::string version, fingerprint;
  std::string store_kind;  // the config's: folder or redis
  std::int64_t now_ms = 0;
};

// The page, with its Content-Security-Policy.
Reply dashboard_reply(const DashboardView& view);

// `text` with & < > " ' as character references.
std::string html_escaped(std::string_view text);

}  // namespace compactor::serve
