#include "mcp/archive_server.hpp"

namespace compactor::mcp {
namespace {

constexpr const char* kInstructions =
    "Compactor keeps this conversation within the model's context window. What it removes is archived, and the "
    "[compactor …] marker or summary left in its place names a receipt (sha256:…). restore gives back what a receipt "
    "holds; search finds lines in it and in the receipts named there.";

}  // namespace

ArchiveServer::ArchiveServer(std::string dir, std::string version)
    : ArchiveServer(std::make_unique<ArchiveTools>(std::move(dir)), std::move(version)) {}

ArchiveServer::ArchiveServer(std::unique_ptr<ArchiveTools> tools, std::string version)
    : tools_(std::move(tools)), server_(ServerInfo{"compactor", "Compactor archive", std::move(version), kInstructions}, tools_->tools()) {}

}  // namespace compactor::mcp
