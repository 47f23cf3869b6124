#include "meter/meter_kinds.hpp"

#include "model/meter_key.hpp"

#include "meter/tokenizer.hpp"
#include "meter/calibration_fit.hpp"

#include <boost/json/serialize.hpp>
#include <fmt/core.h>

#include <atomic>
#include <map>
#include <mutex>
#include <cmath>

namespace compactor {
namespace {
class CharsMeter final : public Meter {
 public:
  CharsMeter() : Meter(MeterKey{}) {}
  std::string_view kind() const override { return "chars4"; }
  std::uint64_t count_text(std::string_view utf8) const override { return (count_code_points(utf8) + 3) / 4; }

 protected:
  // The message's JSON chars, as Compactor's chars unit counts them (images at 6,400), over 4.
  std::uint64_t count_message(const Message& m) const override { return (m.chars() + 3) / 4; }
};

class TokenizerMeter final : public Meter {
 public:
  TokenizerMeter(std::string kind, std::shared_ptr<const Tokenizer> tokenizer)
      : Meter(MeterKey{}), kind_(std::move(kind)), tokenizer_(std::move(tokenizer)) {}
  std::string_view kind() const override { return kind_; }
  std::uint64_t count_text(std::string_view utf8) const override { return tokenizer_->count(utf8); }

 private:
  std::string kind_;
  std::shared_ptr<const Tokenizer> tokenizer_;
};

class CalibratedMeter final : public Meter {
 public:
  CalibratedMeter(std::shared_ptr<const Meter> base, FamilyFit fit) : Meter(MeterKey{}), base_(std::move(base)), fit_(fit) {}
  std::string_view kind() const override { return "calibrated"; }
  std::uint64_t count_text(std::string_view utf8) const override { return scale(base_->count_text(utf8)); }

 protected:
  std::uint64_t count_message(const Message& m) const override {
    double t = fit_.per_token * static_cast<double>(base_->tokens(m)) + fit_.per_message;
    return t <= 0 ? 0 : static_cast<std::uint64_t>(std::llround(t));
  }

 private:
  std::uint64_t scale(std::uint64_t tokens) const {
    return static_cast<std::uint64_t>(std::llround(fit_.per_token * static_cast<double>(tokens)));
  }
  std::shared_ptr<const Meter> base_;
  FamilyFit fit_;
};

std::optional<TokenizerKind> tokenizer_of(std::string_view kind) {
  if (kind == "cl100k") return TokenizerKind::cl100k_base;
  if (kind == "o200k") return TokenizerKind::o200k_base;
  if (kind == "claude-legacy") return TokenizerKind::claude_legacy;
  return std::nullopt;
}

Expected<std::shared_ptr<const Meter>> exact_meter(std::string_view kind, const std::string& rank_file) {
  auto tokenizer_kind = *tokenizer_of(kind);
  std::string dir = default_meter_data_dir();
  if (!rank_file.empty()) {
    // A rank file named in the config: its folder, with the standard file name checked.
    auto slash = rank_file.rfind('/');
    dir = slash == std::string::npos ? "." : rank_file.substr(0, slash);
    std::string name = slash == std::string::npos ? rank_file : rank_file.substr(slash + 1);
    if (name != rank_file_name(tokenizer_kind))
      return Error{rank_file + ": a " + std::string(kind) + " meter reads a file named " + std::string(rank_file_name(tokenizer_kind))};
  }
  auto tokenizer = Tokenizer::load(tokenizer_kind, dir);
  if (!tokenizer) return tokenizer.error();
  return std::shared_ptr<const Meter>(std::make_shared<TokenizerMeter>(std::string(kind), std::move(*tokenizer)));
}

}  // namespace

std::vector<std::string_view> meter_kinds() { return {"chars4", "cl100k", "o200k", "claude-legacy", "calibrated"}; }

namespace {

// Meters that count alike are one meter: a message caches one count, under one meter's tag, so
// two configs (or a config and the bench) counting with equal meters made apart would each find
// the other's count and count again on every call. Kept for the process's life, keyed by what
// decides a count: the kind and rank file's folder, or a calibrated fit's base and numbers.
std::mutex made_mutex;
std::map<std::string, std::shared_ptr<const Meter>> made_meters;

std::shared_ptr<const Meter> made_meter(const std::string& key) {
  std::lock_guard<std::mutex> lock(made_mutex);
  auto it = made_meters.find(key);
  return it == made_meters.end() ? nullptr : it->second;
}

std::shared_ptr<const Meter> keep_meter(const std::string& key, std::shared_ptr<const Meter> meter) {
  std::lock_guard<std::mutex> lock(made_mutex);
  return made_meters.emplace(key, std::move(meter)).first->second;  // the first one made, if two raced
}

}  // namespace

Expected<std::shared_ptr<const Meter>> make_meter(const MeterSpec& spec) {
  if (spec.kind == "chars4") {
    if (auto m = made_meter("chars4")) return m;
    return keep_meter("chars4", std::make_shared<CharsMeter>());
  }
  if (tokenizer_of(spec.kind)) {
    const std::string key = spec.kind + "\n" + (spec.file.empty() ? std::string() : spec.file.substr(0, spec.file.rfind('/') + 1));
    if (auto m = made_meter(key); m != nullptr && (spec.file.empty() || spec.file.ends_with(rank_file_name(*tokenizer_of(spec.kind)))))
      return m;
    auto made = exact_meter(spec.kind, spec.file);
    if (!made) return made;
    return keep_meter(key, std::move(*made));
  }
  if (spec.kind == "calibrated") {
    if (spec.file.empty())
      return Error{"a calibrated meter needs the fit `compactor calibrate --out` wrote (meter.file in a config, --fit for count)"};
    auto fit = read_calibration_fit(spec.file);
    if (!fit) return fit.error();
    auto family = fit->family(spec.family);
    if (!family) return family.error();
    auto base = make_meter(MeterSpec{fit->base, "", ""});
    if (!base) return base.error();
    const std::string key = fmt::format("calibrated\n{}\n{:a}\n{:a}", fit->base, family->per_token, family->per_message);
    if (auto m = made_meter(key)) return m;
    return keep_meter(key, std::make_shared<CalibratedMeter>(std::move(*base), *family));
  }
  std::string kinds;
  for (auto k : meter_kinds()) kinds += (kinds.empty() ? "" : ", ") + std::string(k);
  return Error{"unknown meter \"" + spec.kind + "\"; known: " + kinds};
}

}  // namespace compactor
