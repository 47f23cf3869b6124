// What a stage sees of the archive that makes every removal recoverable: put the exact bytes you
// remove or shorten, get a receipt (`sha256:<hex>`) to name in your marker. Committing, rolling
// back and the files belong to the host (a stage's puts are taken back when its candidate is not
// committed). `compactor restore <receipt>` gives the bytes back.
#pragma once

#include "compactor/error.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace compactor {

// "sha256:" + 64 lowercase hex digits.
std::string receipt_of(std::string_view bytes);
// The receipt of the pieces joined, without joining them.
std::string receipt_of(const std::vector<std::string_view>& pieces);
bool is_receipt(std::string_view text);
// Every receipt in a text, in order.
std::vector<std::string> find_receipts(std::string_view text);

// Bytes and their receipt, hashed once: a stage that needs the receipt before it decides to
// archive (to build and size its marker) hands the same hash to put(). Only receipt_of makes one.
class HashedBlob {
 public:
  explicit HashedBlob(std::string bytes) : bytes_(std::move(bytes)), receipt_(receipt_of(bytes_)) {}
  // The pieces joined (a snapshot of many messages, from their bytes), never joined in memory:
  // they are not copied, so what they view must live until put() returns.
  explicit HashedBlob(std::vector<std::string_view> pieces) : pieces_(std::move(pieces)), receipt_(receipt_of(pieces_)) {}
  const std::string& receipt() const { return receipt_; }

 private:
  friend class ArchiveStore;
  std::string bytes_;
  std::vector<std::string_view> pieces_;  // when built from pieces (then bytes_ is empty)
  std::string receipt_;
};

class Archive {
 public:
  virtual ~Archive() = default;

  // Archives `bytes` and returns the receipt; an error names the path and the errno text. The
  // bytes are written before put() returns and not kept: no copy is made, and none is held.
  virtual Expected<std::string> put(std::string_view bytes) = 0;
  // The same, taking `bytes` (freed once written).
  virtual Expected<std::string> put(std::string&& bytes) = 0;
  // The same without hashing again.
  virtual Expected<std::string> put(HashedBlob&& blob) = 0;
  Expected<std::string> put(const char* bytes) { return put(std::string_view(bytes)); }

  // The bytes this run archived under `receipt`, or null. They are read back from disk (the run
  // keeps no blob in memory), so prefer holds() and size_of(), which read only what they compare;
  // the pointer stays valid until the next put().
  virtual const std::string* find(std::string_view receipt) const = 0;
  // Whether this run archived, under `receipt`, a blob holding `bytes` at `offset` (what the
  // `archived` checker compares a removed message with), and that blob's size.
  virtual bool holds(std::string_view receipt, std::uint64_t offset, std::string_view bytes) const = 0;
  virtual std::optional<std::uint64_t> size_of(std::string_view receipt) const = 0;
};

}  // namespace compactor
