// Which of a fixed set of lines occur in a text, each text read once: a Rabin-Karp search over a
// window of kWindow bytes, the length every line has at least, so a line can only start where
// the window's hash is that of one line's first kWindow bytes. The bench's evidence probes are
// thousands of lines per session searched in every message; one pass per text keeps that linear.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace compactor::bench {

class LineSearch {
 public:
  static constexpr std::size_t kWindow = 30;

  // Every line at least kWindow bytes; a line's id is its index.
  explicit LineSearch(std::vector<std::string> lines);

  std::size_t size() const { return lines_.size(); }
  const std::string& line(std::uint32_t id) const { return lines_[id]; }

  // Appends the id of every line occurring in `text` (an id once per occurrence).
  void find(std::string_view text, std::vector<std::uint32_t>& found) const;

 private:
  std::vector<std::string> lines_;
  std::vector<std::uint64_t> filter_;  // one bit per bucket of window hashes
  std::unordered_map<std::uint64_t, std::vector<std::uint32_t>> by_hash_;
  std::uint64_t drop_ = 1;  // the base to the power kWindow - 1: what the byte leaving the window weighs
};

}  // namespace compactor::bench
