#include "serve/dashboard_page.hpp"

#include <fmt/core.h>
#include <nettle/base64.h>
#include <nettle/sha2.h>

#include <algorithm>
#include <ctime>
#include <vector>

namespace compactor::serve {
namespace {

constexpr std::string_view kStyle =
    "body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#1d2330;background:#fafbfc}"
    "h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:24px 0 8px}"
    "table{border-collapse:collapse;background:#fff}th,td{padding:4px 10px;border-bottom:1px solid #dde1e6;text-align:left}"
    "td.n{text-align:right;font-variant-numeric:tabular-nums}.muted{color:#5b6472}.bad{color:#b3261e}.ok{color:#1b7f3b}"
    ".charts{display:flex;gap:32px;flex-wrap:wrap}code{font-size:12px}";

// The policy's hash of the inline sheet: 'sha256-' and the base64 of its SHA-256.
std::string style_hash() {
  sha256_ctx ctx;
  sha256_init(&ctx);
  sha256_update(&ctx, kStyle.size(), reinterpret_cast<const std::uint8_t*>(kStyle.data()));
  std::uint8_t digest[SHA256_DIGEST_SIZE];
  sha256_digest(&ctx, sizeof digest, digest);
  char encoded[BASE64_ENCODE_RAW_LENGTH(SHA256_DIGEST_SIZE) + 1] = {};
  base64_encode_raw(encoded, sizeof digest, digest);
  return "sha256-" + std::string(encoded);
}

std::string utc(std::int64_t unix_ms) {
  const std::time_t t = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char out[32];
  std::strftime(out, sizeof out, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return out;
}

std::string usd(double v) { return fmt::format("${:.6f}", v); }

// A horizontal bar per tenant, scaled to the largest value; each bar's figure written beside it.
struct Bar {
  std::string label, figure;
  double value = 0;
};
std::string bar_chart(std::string_view title, std::string_view id, const std::vector<Bar>& bars) {
  constexpr int kWidth = 460, kLabel = 120, kBar = 240, kRow = 26;
  const int height = 30 + kRow * static_cast<int>(std::max<std::size_t>(bars.size(), 1));
  double most = 0;
  for (const Bar& b : bars) most = std::max(most, b.value);
  std::string out = fmt::format(R"(<svg id="{}" xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" role="img" aria-label="{}">)"
                                R"(<title>{}</title><text x="0" y="16" font-weight="bold" fill="#1d2330">{}</text>)",
                                id, kWidth, height, html_escaped(title), html_escaped(title), html_escaped(title));
  int y = 30;
  for (const Bar& b : bars) {
    const int w = b.value > 0 ? std::max(1, static_cast<int>(kBar * b.value / most)) : 0;
    out += fmt::format(R"(<text x="0" y="{}" fill="#1d2330">{}</text><rect x="{}" y="{}" width="{}" height="18" fill="#2f6fde"/>)"
                       R"(<text x="{}" y="{}" fill="#5b6472">{}</text>)",
                       y + 14, html_escaped(b.label), kLabel, y, w, kLabel + w + 6, y + 14, html_escaped(b.figure));
    y += kRow;
  }
  if (bars.empty()) out += R"(<text x="0" y="44" fill="#5b6472">no tenant yet</text>)";
  return out + "</svg>";
}

std::string tenants_section(const OperatorLedger::Snapshot& s) {
  std::string rows;
  std::vector<Bar> usd_bars, token_bars;
  for (const auto& [name, t] : s.tenants) {
    const std::string n = html_escaped(name);
    rows += fmt::format(R"(<tr data-tenant="{}"><td class="tenant">{}</td><td class="n calls">{}</td><td class="n compactions">{}</td>)"
                        R"(<td class="n saved-tokens">{}</td><td class="n saved-usd">{}</td><td class="n store-bytes">{}</td></tr>)",
                        n, n, t.calls, t.compactions, t.saved_tokens, html_escaped(usd(t.saved_usd)),
                        t.store_bytes >= 0 ? std::to_string(t.store_bytes) : "");
    usd_bars.push_back(Bar{name, usd(t.saved_usd), t.saved_usd});
    token_bars.push_back(Bar{name, std::to_string(t.saved_tokens), static_cast<double>(t.saved_tokens)});
  }
  return "<h2>Tenants</h2><table id=\"tenants\"><tr><th>tenant</th><th>calls</th><th>compactions</th><th>tokens saved</th>"
         "<th>USD saved</th><th>store bytes</th></tr>" + rows + "</table><div class=\"charts\">" +
         bar_chart("USD saved per tenant", "usd-chart", usd_bars) + bar_chart("Tokens saved per tenant", "tokens-chart", token_bars) +
         "</div>";
}

std::string recent_section(const OperatorLedger::Snapshot& s) {
  std::string rows;
  for (const auto& c : s.recent) {
    std::string receipts;
    for (const auto& r : c.receipts) receipts += (receipts.empty() ? "" : "<br>") + ("<code>" + html_escaped(r) + "</code>");
    if (c.receipt_count > c.receipts.size()) receipts += fmt::format("<br>+{}", c.receipt_count - c.receipts.size());
    rows += fmt::format(R"(<tr class="compaction"><td>{}</td><td class="tenant">{}</td><td class="n before">{}</td>)"
                        R"(<td class="n after">{}</td><td>{}</td><td class="receipts">{}</td></tr>)",
                        utc(c.unix_ms), html_escaped(c.tenant), c.before, c.after, html_escaped(c.unit), receipts);
  }
  if (rows.empty()) rows = R"(<tr><td colspan="6" class="muted">none yet</td></tr>)";
  return fmt::format("<h2>Recent compactions (the last {})</h2><table id=\"recent\"><tr><th>time</th><th>tenant</th><th>before</th>"
                     "<th>after</th><th>unit</th><th>receipts</th></tr>{}</table>",
                     OperatorLedger::kRecent, rows);
}

std::string store_section(const DashboardView& v) {
  const OperatorLedger::Store& st = v.ledger.store;
  std::string health = st.kind.empty() ? R"(<span class="muted" id="store-health">not used yet</span>)"
                       : st.failing   ? R"(<span class="bad" id="store-health">failing</span> at the last call ()" +
                                          html_escaped(utc(st.unix_ms)) + "): " + html_escaped(st.error)
                                      : R"(<span class="ok" id="store-health">reachable</span> at the last call ()" +
                                          html_escaped(utc(st.unix_ms)) + ")";
  return "<h2>Store</h2><p>kind <b id=\"store-kind\">" + html_escaped(v.store_kind) + "</b>; " + health +
         ". What each tenant holds is in the tenants' table (after its last write).</p>";
}

}  // namespace

std::string html_escaped(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

Reply dashboard_reply(const DashboardView& v) {
  static const std::string policy = "default-src 'none'; style-src '" + style_hash() +
                                    "'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";
  std::string html = "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta http-equiv=\"refresh\" content=\"10\">"
                     "<title>compactor serve</title><style>" + std::string(kStyle) + "</style></head><body>";
  html += fmt::format("<h1>compactor serve</h1><p class=\"muted\">{} &middot; build {} (<code>{}</code>)</p>", html_escaped(utc(v.now_ms)),
                      html_escaped(v.version), html_escaped(v.fingerprint));
  html += fmt::format("<h2>Config</h2><p>path <code id=\"config-path\">{}</code>, hash <code id=\"config-hash\">{}</code>, generation "
                      "<b id=\"config-generation\">{}</b></p>",
                      html_escaped(v.config_path), html_escaped(v.config_hash), v.generation);
  html += tenants_section(v.ledger) + recent_section(v.ledger) + store_section(v) + "</body></html>\n";
  return Reply{200, std::move(html), "text/html; charset=utf-8",
               {{"content-security-policy", policy}, {"cache-control", "no-store"}, {"x-content-type-options", "nosniff"}}};
}

}  // namespace compactor::serve
