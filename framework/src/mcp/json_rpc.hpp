// JSON-RPC 2.0 as MCP uses it: one message is one JSON object, a request (an id, string or
// integer, never null, and a method), a notification (a method and no id) or a response (an id
// and a result or an error). Batches are refused: MCP removed them in its 2025-06-18 revision.
// Reading never throws; whatever is not a valid message comes back as `invalid`, with the error
// the peer is to be answered with.
#pragma once

#include <boost/json.hpp>

#include <string>
#include <string_view>

namespace compactor::mcp {

// The JSON-RPC error codes this server answers with.
enum class RpcErrorCode : int {
  parse_error = -32700,       // not JSON
  invalid_request = -32600,   // JSON, but not a request the protocol allows
  method_not_found = -32601,
  invalid_params = -32602,
  internal_error = -32603,
};

struct RpcError {
  RpcErrorCode code = RpcErrorCode::internal_error;
  std::string message;
  boost::json::value data;  // null: none
};

struct RpcMessage {
  enum class Kind { request, notification, response, invalid };
  Kind kind = Kind::invalid;
  boost::json::value id;        // a request's (string or integer); null when there is none or it is unreadable
  std::string method;
  boost::json::object params;   // {} when absent
  RpcError error;               // what an invalid message is answered with
};

// Messages deeper than this are not a request any MCP method takes.
inline constexpr unsigned kMaxRpcDepth = 64;

// Reads one message: the bytes of one JSON value, whitespace around it allowed.
RpcMessage read_rpc_message(std::string_view bytes);

// A response, serialized on one line (a JSON-RPC response never holds a raw line break).
std::string rpc_result(const boost::json::value& id, boost::json::value result);
std::string rpc_error(const boost::json::value& id, const RpcError& error);

}  // namespace compactor::mcp
