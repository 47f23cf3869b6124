// The tools the MCP server gives the model over an archive folder: `restore` (what a receipt
// holds, as the model saw it, a page at a time) and `search` (the lines holding a plain-text
// pattern in a blob and in the blobs whose receipts appear in it). Only blobs of this folder are
// read, by receipts that are checked before they become a file name; each blob is verified
// against its hash; pages, hits and the blobs one search reads are bounded. A folder another user
// could write is refused at every call, and every failure is a tool error the model reads.
#pragma once

#include "compactor/error.hpp"
#include "mcp/blob_view.hpp"
#include "mcp/tool.hpp"
#include "store/store.hpp"

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace compactor::mcp {

class ArchiveTools {
 public:
  static constexpr std::uint64_t kDefaultPageChars = 20000;  // about 5,000 tokens: a page the model can afford
  static constexpr std::uint64_t kMaxPageChars = 100000;
  static constexpr std::size_t kMaxImagesPerPage = 4;
  static constexpr std::size_t kMaxHits = 50;
  static constexpr std::size_t kMaxBlobsSearched = 64;
  static constexpr std::uint64_t kMaxPatternChars = 1000;

  // `dir`: the archive folder, absolute.
  explicit ArchiveTools(std::string dir);
  // Over any store (one tenant's namespace of it): a Redis store, a tenant's folder. `folder`:
  // the store's folder when it has one (checked at every call as above), else empty. `hidden`:
  // a path the errors must not show (serve's archive folder, to a remote client), shown as
  // `<archive>`; empty for a local user, who needs the path.
  ArchiveTools(std::unique_ptr<store::Store> store, std::string folder, std::string hidden = {});

  ToolResult restore(const boost::json::object& arguments) const;
  ToolResult search(const boost::json::object& arguments) const;

  // Both tools, calling this object (which must outlive them).
  std::vector<Tool> tools() const;

  const std::string& dir() const { return dir_; }

 private:
  // The view of a receipt's blob: from the cache, or read, verified and rendered.
  Expected<std::shared_ptr<const BlobView>> load(const std::string& receipt) const;

  // An error as the client may read it.
  std::string shown(std::string message) const;

  std::string dir_;
  std::string hidden_;
  std::unique_ptr<store::Store> store_;
  mutable std::mutex store_mutex_;  // a store's connection serves one call at a time
  // A model reads a long blob page after page: its view is kept rather than read and hashed
  // again for every page. The few newest, within a memory bound.
  mutable std::mutex mutex_;
  mutable std::list<std::pair<std::string, std::shared_ptr<const BlobView>>> cache_;
};

}  // namespace compactor::mcp
