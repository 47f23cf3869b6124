// parse → check → serialize of a ≥ 10 MB generated conversation, against plain Boost.JSON
// parse + serialize of the same bytes, in the same binary. Reports bytes/s.
#include "compactor/active_request.hpp"
#include "compactor/builtin_checkers.hpp"
#include "compactor/conversation_reader.hpp"

#include <benchmark/benchmark.h>
#include <boost/json.hpp>

#include <random>

namespace {

namespace json = boost::json;

// A realistic agent history: tool batches with results of mixed sizes, thinking, text.
std::string generate_conversation(std::size_t min_bytes) {
  std::mt19937_64 rng(42);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  std::string words[] = {"error", "build", "src/main.cpp", "TODO", "return", "0x1f", "héllo", "ok", "{", "}", "\"quoted\""};
  auto text = [&](int n) {
    std::string s;
    while (static_cast<int>(s.size()) < n) s += words[pick(0, 10)] + (pick(0, 9) == 0 ? "\n" : " ");
    return s;
  };
  std::string out = "[";
  out += json::serialize(json::object{{"role", "user"}, {"content", "please fix the failing build"}});
  std::size_t id = 0;
  while (out.size() < min_bytes) {
    json::array content;
    if (pick(0, 2) == 0) content.push_back(json::object{{"type", "thinking"}, {"thinking", text(300)}, {"signature", text(80)}});
    content.push_back(json::object{{"type", "text"}, {"text", text(pick(20, 200))}});
    std::vector<std::string> ids;
    for (int k = pick(1, 3); k > 0; --k) {
      ids.push_back("toolu_" + std::to_string(id++));
      content.push_back(json::object{{"type", "tool_use"}, {"id", ids.back()}, {"name", "Bash"},
                                     {"input", json::object{{"command", text(40)}, {"timeout", 1.0}}}});
    }
    out += "," + json::serialize(json::object{{"role", "assistant"}, {"content", content}});
    json::array results;
    for (const auto& tid : ids)
      results.push_back(json::object{{"type", "tool_result"}, {"tool_use_id", tid}, {"content", text(pick(100, 8000))}});
    out += "," + json::serialize(json::object{{"role", "user"}, {"content", results}});
  }
  return out + "]";
}

const std::string& input() {
  static const std::string bytes = generate_conversation(10u << 20);
  return bytes;
}

void BM_BoostJsonParseSerialize(benchmark::State& state) {
  const std::string& bytes = input();
  for (auto _ : state) {
    json::value v = json::parse(bytes);
    std::string out = json::serialize(v);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes.size()));
}
BENCHMARK(BM_BoostJsonParseSerialize)->Unit(benchmark::kMillisecond);

void BM_ParseCheckSerialize(benchmark::State& state) {
  using namespace compactor;
  const std::string& bytes = input();
  auto checkers = make_builtin_checkers();
  for (auto _ : state) {
    auto c = read_conversation(bytes);
    if (!c) state.SkipWithError(c.error().message.c_str());
    std::string request = find_active_request(*c).text;
    auto violations = run_checkers(checkers, CheckInput{*c, *c, compute_protected_tail(*c, 1), request});
    if (!violations.empty()) state.SkipWithError(violations.front().to_string().c_str());
    std::string out = c->serialize();
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes.size()));
}
BENCHMARK(BM_ParseCheckSerialize)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
