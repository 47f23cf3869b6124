#include "serve/remembered_meter.hpp"

#include "compactor/archive.hpp"
#include "compactor/message.hpp"
#include "model/meter_key.hpp"

namespace compactor::serve {
namespace {

// Texts shorter than this are counted again: hashing them would cost about what counting does.
constexpr std::size_t kRememberedBytes = 1024;
// What one meter remembers at most (about 100 bytes each); past it, it starts over.
constexpr std::size_t kRememberedCounts = 1 << 17;

class RememberingMeter final : public Meter {
 public:
  explicit RememberingMeter(std::shared_ptr<const Meter> inner) : Meter(MeterKey{}), inner_(std::move(inner)) {}

  std::string_view kind() const override { return inner_->kind(); }

  std::uint64_t count_text(std::string_view utf8) const override {
    if (utf8.size() < kRememberedBytes) return inner_->count_text(utf8);
    return remembered("t", utf8, [&] { return inner_->count_text(utf8); });
  }

 protected:
  std::uint64_t count_message(const Message& message) const override {
    return remembered("m", message.raw(), [&] { return inner_->tokens(message); });
  }

 private:
  template <typename Count>
  std::uint64_t remembered(const char* kind, std::string_view bytes, Count count) const {
    const std::string key = kind + receipt_of(bytes);
    {
      std::lock_guard lock(mutex_);
      if (auto it = counts_.find(key); it != counts_.end()) return it->second;
    }
    const std::uint64_t n = count();
    std::lock_guard lock(mutex_);
    if (counts_.size() >= kRememberedCounts) counts_.clear();
    counts_.emplace(key, n);
    return n;
  }

  std::shared_ptr<const Meter> inner_;
  mutable std::mutex mutex_;
  mutable std::unordered_map<std::string, std::uint64_t> counts_;
};

}  // namespace

std::shared_ptr<const Meter> RememberedMeters::of(const std::shared_ptr<const Meter>& meter) {
  if (meter == nullptr) return nullptr;
  std::lock_guard lock(mutex_);
  auto& remembering = meters_[meter.get()];
  if (remembering == nullptr) remembering = std::make_shared<RememberingMeter>(meter);
  return remembering;
}

}  // namespace compactor::serve
