// report.html: the bench's verdict, tables and charts in one self-contained page (every chart
// inline SVG, the style in the page, no script, nothing fetched), tables beside the charts that
// draw them, for a reader who opens one file.
#pragma once

#include "bench/results.hpp"

#include <string>
#include <utility>
#include <vector>

namespace compactor::bench {

// The page, from the results and the charts (file name, SVG) written beside it.
std::string html_report(const BenchResults& results, const std::vector<std::pair<std::string, std::string>>& charts);

// The Markdown the bench prints (pipe tables, "- " lists, lines of text), as HTML: tables with
// their columns' alignment, lists, paragraphs; every text escaped. Only that subset: it is ours.
std::string markdown_to_html(const std::string& markdown);

}  // namespace compactor::bench
