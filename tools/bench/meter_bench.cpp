// Tokens per second of each meter, in MB/s of text: the text of every block of the real sessions
// in tests/data (what a meter counts), and the pre-tokenizer alone against ICU's regex running the
// same published pattern (the speed a regex-based splitter would have). The tokenizers' per-thread
// piece cache is warm after the first pass, as it is when a host counts before every call.
#include "model/conversation_reader.hpp"
#include "meter/meter_kinds.hpp"
#include "meter/tokenizer.hpp"
#include "meter/pretokenizer.hpp"

#include <benchmark/benchmark.h>
#include <boost/json/serialize.hpp>
#include <unicode/regex.h>
#include <unicode/unistr.h>

#include <filesystem>
#include <unistd.h>

namespace {

using namespace compactor;

const std::string& session_text() {
  static const std::string text = [] {
    std::string out;
    for (const auto& e : std::filesystem::directory_iterator(COMPACTOR_TEST_DATA_DIR)) {
      if (e.path().filename().string().rfind("cc-", 0) != 0) continue;
      auto c = read_conversation_file(e.path().string());
      if (!c) continue;
      for (const MessagePtr& m : c->messages())
        for (const Block& b : m->blocks()) {
          if (b.kind() == BlockKind::text) out += b.text();
          else if (b.kind() == BlockKind::thinking) out += b.thinking();
          else if (b.kind() == BlockKind::tool_use && b.input()) out += boost::json::serialize(*b.input());
          else if (b.kind() == BlockKind::tool_result && b.content()) {
            if (b.content()->is_string()) out += b.content()->get_string();
            else out += boost::json::serialize(*b.content());
          }
          out += '\n';
        }
    }
    return out;
  }();
  return text;
}

// A folder holding only the rank file of `kind` (no pack): where a meter parses the text.
std::string text_only_dir(TokenizerKind kind) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("compactor-meter-text-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  fs::copy_file(fs::path(COMPACTOR_METER_DATA_DIR) / rank_file_name(kind), dir / rank_file_name(kind),
                fs::copy_options::overwrite_existing);
  return dir.string();
}

// Counting speed with the packed table (what a meter loads) and with the table parsed from the
// rank file (what it loaded before packs): the same lookups on the same layout.
void BM_Tokenizer(benchmark::State& state, TokenizerKind kind, bool packed) {
  std::string dir = packed ? std::string(COMPACTOR_METER_DATA_DIR) : text_only_dir(kind);
  auto t = Tokenizer::load(kind, dir);
  if (!packed) std::filesystem::remove_all(dir);
  if (!t) {
    state.SkipWithError(t.error().message.c_str());
    return;
  }
  const std::string& text = session_text();
  for (auto _ : state) benchmark::DoNotOptimize((*t)->count(text));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * text.size()));
  state.counters["tokens"] = static_cast<double>((*t)->count(text));
}
BENCHMARK_CAPTURE(BM_Tokenizer, cl100k, TokenizerKind::cl100k_base, true)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Tokenizer, cl100k_from_text, TokenizerKind::cl100k_base, false)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Tokenizer, o200k, TokenizerKind::o200k_base, true)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Tokenizer, o200k_from_text, TokenizerKind::o200k_base, false)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Tokenizer, claude_legacy, TokenizerKind::claude_legacy, true)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Tokenizer, claude_legacy_from_text, TokenizerKind::claude_legacy, false)->Unit(benchmark::kMillisecond);

// Load to first count, as a process that counts once pays it: the packed ranks mapped (what
// Tokenizer::load does beside a .pack), and the rank file parsed (a folder with no pack).
void BM_MeterLoad(benchmark::State& state, TokenizerKind kind, bool packed) {
  namespace fs = std::filesystem;
  std::string dir = packed ? std::string(COMPACTOR_METER_DATA_DIR) : text_only_dir(kind);
  if (packed && !fs::exists(fs::path(dir) / packed_rank_file_name(kind))) {
    state.SkipWithError("no pack beside the rank file");
    return;
  }
  for (auto _ : state) {
    auto t = Tokenizer::load(kind, dir);
    if (!t) {
      state.SkipWithError(t.error().message.c_str());
      break;
    }
    benchmark::DoNotOptimize((*t)->count("hello, world"));
  }
  if (!packed) fs::remove_all(dir);
}
BENCHMARK_CAPTURE(BM_MeterLoad, cl100k_packed, TokenizerKind::cl100k_base, true)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_MeterLoad, cl100k_text, TokenizerKind::cl100k_base, false)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_MeterLoad, o200k_packed, TokenizerKind::o200k_base, true)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_MeterLoad, o200k_text, TokenizerKind::o200k_base, false)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_MeterLoad, claude_legacy_packed, TokenizerKind::claude_legacy, true)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_MeterLoad, claude_legacy_text, TokenizerKind::claude_legacy, false)->Unit(benchmark::kMillisecond);

void BM_Chars4(benchmark::State& state) {
  auto m = make_meter(MeterSpec{"chars4", "", ""});
  const std::string& text = session_text();
  for (auto _ : state) benchmark::DoNotOptimize((*m)->count_text(text));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * text.size()));
}
BENCHMARK(BM_Chars4)->Unit(benchmark::kMillisecond);

void BM_PreTokenizer(benchmark::State& state, detail::SplitPattern pattern) {
  const std::string& text = session_text();
  for (auto _ : state) {
    std::size_t pieces = 0;
    for (std::size_t pos = 0; pos < text.size(); ++pieces) pos = detail::next_piece_end(pattern, text, pos);
    benchmark::DoNotOptimize(pieces);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * text.size()));
}
BENCHMARK_CAPTURE(BM_PreTokenizer, cl100k, detail::SplitPattern::cl100k)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_PreTokenizer, o200k, detail::SplitPattern::o200k)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_PreTokenizer, gpt2, detail::SplitPattern::gpt2)->Unit(benchmark::kMillisecond);

void BM_IcuRegexSplit(benchmark::State& state, detail::SplitPattern pattern) {
  const std::string& text = session_text();
  UErrorCode status = U_ZERO_ERROR;
  UParseError error;
  auto regex = detail::split_pattern_regex(pattern);
  std::unique_ptr<icu::RegexPattern> compiled(icu::RegexPattern::compile(
      icu::UnicodeString::fromUTF8(icu::StringPiece(regex.data(), static_cast<int32_t>(regex.size()))), error, status));
  for (auto _ : state) {
    // UTF-8 → UTF-16 is part of a regex splitter's cost.
    icu::UnicodeString u = icu::UnicodeString::fromUTF8(text);
    std::unique_ptr<icu::RegexMatcher> m(compiled->matcher(u, status));
    std::size_t pieces = 0;
    while (m->find(status)) ++pieces;
    benchmark::DoNotOptimize(pieces);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * text.size()));
}
BENCHMARK_CAPTURE(BM_IcuRegexSplit, cl100k, detail::SplitPattern::cl100k)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_IcuRegexSplit, o200k, detail::SplitPattern::o200k)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_IcuRegexSplit, gpt2, detail::SplitPattern::gpt2)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
