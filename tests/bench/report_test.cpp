// What a person reads to pick a pipeline: the verdict before the tables, short names, and charts
// checked from their SVG (parsed as XML): one colour per config in every chart, other categories
// in colours no config has, axes over the range of the data, every budget's limit drawn, and the
// baseline drawn under the configs.
#include "support/test_support.hpp"

#include <boost/property_tree/ptree.hpp>
#include <boost/property_tree/xml_parser.hpp>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>
#include <sstream>

namespace compactor::test {
namespace {

namespace fs = std::filesystem;
namespace pt = boost::property_tree;

const std::string kBench = COMPACTOR_BENCH_DIR;  // tests/bench

// An SVG element in document order: its tag, attributes and text.
struct Element {
  std::string tag;
  std::map<std::string, std::string> attrs;
  std::string text;
  std::string attr(const std::string& name) const { return attrs.count(name) ? attrs.at(name) : ""; }
  std::string color() const { return !attr("stroke").empty() && attr("fill") != attr("stroke") && tag != "rect" ? attr("stroke") : attr("fill"); }
};

void flatten(const pt::ptree& tree, std::vector<Element>& out) {
  for (const auto& [tag, child] : tree) {
    if (tag == "<xmlattr>" || tag == "<xmlcomment>") continue;
    Element e{tag, {}, child.data()};
    if (auto attrs = child.get_child_optional("<xmlattr>"))
      for (const auto& [k, v] : *attrs) e.attrs[k] = v.data();
    out.push_back(std::move(e));
    flatten(child, out);
  }
}

std::vector<Element> parse_svg(const std::string& path) {
  std::istringstream in(read_file(path));
  pt::ptree tree;
  pt::read_xml(in, tree);  // throws on malformed XML: the test fails
  std::vector<Element> out;
  flatten(tree, out);
  return out;
}

// The colour each text names, across every chart: a text's own fill, else the shape drawn just
// before it (a legend's line or swatch, a bar's swatch).
std::map<std::string, std::set<std::string>> colours_by_text(const std::vector<std::vector<Element>>& charts) {
  std::map<std::string, std::set<std::string>> out;
  for (const auto& svg : charts)
    for (std::size_t i = 1; i < svg.size(); ++i) {
      if (svg[i].tag != "text") continue;
      const std::string own = svg[i].attr("fill"), before = svg[i - 1].tag == "text" ? "" : svg[i - 1].color();
      if (!own.empty() || !before.empty()) out[svg[i].text].insert(own.empty() ? before : own);
    }
  return out;
}

struct BenchRun {
  CommandResult result;
  std::string out;
};

// The two small sessions of tests/bench/evidence through plain.yaml (which sends everything) and
// micro.yaml (which masks the Read both sessions quote: 1.067x uncompacted's cost with re-fetch,
// none of the 2 probes visible; the figures of sweep_test.cpp), micro.yaml named "tight".
BenchRun bench_evidence(const ScratchFolder& folder) {
  const std::string out = (folder.path() / "out").string();
  return {run_cli({"bench", "--corpus", kBench + "/evidence", "--config", kBench + "/configs/plain.yaml", "--config",
                   "tight=" + kBench + "/configs/micro.yaml", "--prices", kBench + "/prices.yaml", "--meter", "chars4", "--out", out}),
          out};
}

TEST(BenchReport, TheVerdictComesFirstAndSaysWhichIsCheapestKeepsMostAndDominates) {
  ScratchFolder folder("bench-report-verdict");
  const BenchRun run = bench_evidence(folder);
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  const std::string& out = run.result.out;
  EXPECT_EQ(out.rfind("Verdict, over 2 sessions: ", 0), 0u) << out;
  EXPECT_NE(out.find("Configs: plain = " + kBench + "/configs/plain.yaml and tight = " + kBench + "/configs/micro.yaml.\n"), std::string::npos) << out;
  EXPECT_NE(out.find("- Cheapest: plain (1.000x, 100.0%).\n"), std::string::npos) << out;
  EXPECT_NE(out.find("- Most evidence kept (100.0%): plain.\n"), std::string::npos) << out;
  EXPECT_NE(out.find("- Cheapest keeping at least 97% of the evidence: plain (1.000x, 100.0%).\n"), std::string::npos) << out;
  EXPECT_NE(out.find("- Dominated: tight by plain and uncompacted.\n"), std::string::npos) << out;
  EXPECT_NE(out.find("| tight | 1.067x | 0.0% | 2 | no | plain and uncompacted |\n"), std::string::npos) << out;
  // The full table follows, rows by short name.
  EXPECT_LT(out.find("Verdict"), out.find("| config | meter |"));
  EXPECT_NE(out.find("\n| tight | chars4 | 2 |"), std::string::npos) << out;
}

TEST(BenchReport, EveryChartGivesAConfigOneColourAndCategoriesColoursOfTheirOwn) {
  ScratchFolder folder("bench-report-colours");
  const BenchRun run = bench_evidence(folder);
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  std::vector<std::vector<Element>> charts;
  for (const char* name : {"tokens-per-call", "cumulative-cost", "cost-split", "cost-by-session", "retention", "evidence"})
    charts.push_back(parse_svg(run.out + "/" + name + ".svg"));
  const auto colours = colours_by_text(charts);
  std::set<std::string> config_colours;
  for (const char* config : {"plain", "tight", "uncompacted"}) {
    ASSERT_TRUE(colours.count(config)) << config;
    EXPECT_EQ(colours.at(config).size(), 1u) << config << " has " << colours.at(config).size() << " colours";
    config_colours.insert(*colours.at(config).begin());
  }
  EXPECT_EQ(config_colours.size(), 3u) << "two configs share a colour";
  for (const char* category : {"cache read", "cache write", "uncached input", "output", "visible at the median call", "visible at the last call",
                               "paths + errors visible at the last call", "recoverable"}) {
    ASSERT_TRUE(colours.count(category)) << category;
    for (const auto& c : colours.at(category)) EXPECT_FALSE(config_colours.count(c)) << category << " is drawn in a config's colour " << c;
  }
  // Legends and labels say the short names, never a path as typed.
  for (const auto& svg : charts)
    for (const auto& e : svg)
      EXPECT_TRUE(e.tag != "text" || e.text.find("configs/") == std::string::npos) << e.text;
}

// The x ticks' labels of a chart, left to right.
std::vector<std::string> tick_labels(const std::vector<Element>& svg, const std::string& anchor) {
  std::vector<std::string> out;
  for (std::size_t i = 1; i < svg.size(); ++i)
    if (svg[i].tag == "text" && svg[i].attr("text-anchor") == anchor && svg[i - 1].tag == "line" && svg[i].text.find(' ') == std::string::npos)
      out.push_back(svg[i].text);
  return out;
}

TEST(BenchReport, ChartsShowTheRangeOfTheDataAndEveryLimit) {
  ScratchFolder folder("bench-report-ranges");
  const BenchRun run = bench_evidence(folder);
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  // Retention: every figure is 100% (nothing lost, no marker hides a path): the axis runs 95-100%.
  const auto retention = tick_labels(parse_svg(run.out + "/retention.svg"), "middle");
  ASSERT_FALSE(retention.empty());
  EXPECT_EQ(retention.front(), "95%");
  EXPECT_EQ(retention.back(), "100%");
  // The frontier: costs 1x and 1.067x, evidence 0% and 100%: the cost axis starts near 1x, not 0x.
  const auto evidence = parse_svg(run.out + "/evidence.svg");
  const auto x = tick_labels(evidence, "middle");
  ASSERT_FALSE(x.empty());
  EXPECT_NE(x.front(), "0x");
  EXPECT_GE(std::stod(x.front()), 0.9) << x.front();
  // tokens-per-call: each chars budget has its limit line, in its config's colour.
  const auto tokens = parse_svg(run.out + "/tokens-per-call.svg");
  const auto colours = colours_by_text({tokens});
  bool tight = false, plain = false;
  for (const auto& [text, c] : colours) {
    tight |= text.rfind("limit of tight (2,000 chars, ~", 0) == 0 && c == colours.at("tight");
    plain |= text.rfind("limit of plain (1,000,000 chars, ~", 0) == 0 && c == colours.at("plain");
  }
  EXPECT_TRUE(tight && plain);
}

TEST(BenchReport, TheBaselineIsDrawnUnderEveryConfigAndDashed) {
  ScratchFolder folder("bench-report-order");
  const BenchRun run = bench_evidence(folder);
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  for (const char* chart : {"tokens-per-call", "cumulative-cost"}) {
    const auto svg = parse_svg(run.out + "/" + chart + ".svg");
    const auto colours = colours_by_text({svg});
    std::vector<std::string> drawn;  // the lines' colours, first drawn first
    std::string baseline_dash;
    for (const auto& e : svg)
      if (e.tag == "polyline") {
        drawn.push_back(e.attr("stroke"));
        if (e.attr("stroke") == *colours.at("uncompacted").begin()) baseline_dash = e.attr("stroke-dasharray");
      }
    ASSERT_EQ(drawn.size(), 3u) << chart;
    EXPECT_EQ(drawn.front(), *colours.at("uncompacted").begin()) << chart;
    EXPECT_EQ(drawn.back(), *colours.at("plain").begin()) << chart << ": the first config is drawn last, on top";
    EXPECT_FALSE(baseline_dash.empty()) << chart;
  }
}

std::uint32_t big_endian(const std::string& bytes, std::size_t at) {
  std::uint32_t v = 0;
  for (std::size_t i = 0; i < 4; ++i) v = v << 8 | static_cast<unsigned char>(bytes[at + i]);
  return v;
}

// Every chart is a PNG too, drawn at twice the SVG's size (librsvg through its C API).
TEST(BenchReport, EveryChartIsAPngTooAtTwiceItsSize) {
  ScratchFolder folder("bench-report-png");
  const BenchRun run = bench_evidence(folder);
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  EXPECT_EQ(run.result.err.find("no PNG charts"), std::string::npos) << run.result.err;
  for (const char* name : {"tokens-per-call", "cumulative-cost", "cost-split", "cost-by-session", "retention", "evidence"}) {
    const std::string png = read_file(run.out + "/" + name + ".png");
    ASSERT_GT(png.size(), 33u) << name;
    EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8)) << name;
    EXPECT_EQ(png.substr(12, 4), "IHDR") << name;
    const auto svg = parse_svg(run.out + "/" + name + ".svg");
    ASSERT_EQ(svg.front().tag, "svg");
    EXPECT_EQ(big_endian(png, 16), 2 * std::stoul(svg.front().attr("width"))) << name;
    EXPECT_EQ(big_endian(png, 20), 2 * std::stoul(svg.front().attr("height"))) << name;
  }
}

// report.html: the verdict, the tables and every chart inline, and nothing it would fetch.
TEST(BenchReport, TheHtmlReportIsSelfContainedAndHoldsTheVerdict) {
  ScratchFolder folder("bench-report-html");
  const BenchRun run = bench_evidence(folder);
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  const std::string html = read_file(run.out + "/report.html");
  EXPECT_EQ(html.rfind("<!DOCTYPE html>\n", 0), 0u);
  EXPECT_NE(html.find("<li>Cheapest: plain (1.000x, 100.0%).</li>"), std::string::npos);
  EXPECT_NE(html.find("<li>Dominated: tight by plain and uncompacted.</li>"), std::string::npos);
  EXPECT_NE(html.find("<td>tight</td><td class=\"num\">1.067x</td><td class=\"num\">0.0%</td>"), std::string::npos);
  EXPECT_NE(html.find("<th>cache read USD</th>"), std::string::npos);
  std::size_t svgs = 0;
  for (std::size_t at = 0; (at = html.find("<svg ", at)) != std::string::npos; ++at) ++svgs;
  EXPECT_EQ(svgs, 6u);
  for (const char* outside : {"<script", "<link", "<img", "<iframe", " src=", " href=", "url(", "@import", "http://", "https://"})
    EXPECT_EQ(html.find(outside), std::string::npos) << outside;
  // Well-formed: it parses as XML once its doctype line is left out.
  std::istringstream in(html.substr(html.find('\n') + 1));
  pt::ptree tree;
  EXPECT_NO_THROW(pt::read_xml(in, tree));
}

TEST(BenchReport, ConfigNamesAreCheckedBeforeAnythingRuns) {
  const std::string plain = kBench + "/configs/plain.yaml";
  for (const auto& [args, message] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--config", "a=" + plain, "--config", "a=" + plain}, "--config a=…: two configs named \"a\""},
           {{"--config", "uncompacted=" + plain}, "--config uncompacted=…: \"uncompacted\" is the baseline's name"},
           {{"--config", "a|b=" + plain}, "--config a|b=…: a name holds no '|', ':', '#' or line break"}}) {
    std::vector<std::string> all{"bench", "--corpus", kBench + "/evidence", "--prices", kBench + "/prices.yaml"};
    all.insert(all.end(), args.begin(), args.end());
    auto r = run_cli(all);
    EXPECT_EQ(r.exit_code, 2) << message;
    EXPECT_NE(r.err.find("compactor bench: " + message + "\n"), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "");
  }
}

}  // namespace
}  // namespace compactor::test
