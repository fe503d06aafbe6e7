package trace

import (
	"fmt"
	"net"
	"net/url"
	"strconv"

	"go.opentelemetry.io/otel/attribute"

	"github.com/toolbridge/toolbridge/config"
	"github.com/toolbridge/toolbridge/config/toolid"
)

// Attribute keys from the OpenTelemetry semantic conventions for MCP
// (https://opentelemetry.io/docs/specs/semconv/gen-ai/mcp/), spelled out
// here because the semconv Go packages of the SDK in our module graph no
// longer ship the mcp namespace.
const (
	AttrMCPMethodName = "mcp.method.name"
	AttrMCPSessionID  = "mcp.session.id"
	// AttrEndUserID is the authenticated caller (the OAuth token's
	// subject), never the token (OTel semantic conventions: enduser.id).
	AttrEndUserID           = "enduser.id"
	AttrMCPProtocolVersion  = "mcp.protocol.version"
	AttrJSONRPCRequestID    = "jsonrpc.request.id"
	AttrRPCStatusCode       = "rpc.response.status_code"
	AttrGenAIToolName       = "gen_ai.tool.name"
	AttrGenAIOperationName  = "gen_ai.operation.name"
	AttrGenAIToolArguments  = "gen_ai.tool.call.arguments"
	AttrGenAIToolResult     = "gen_ai.tool.call.result"
	AttrNetworkTransport    = "network.transport"
	AttrNetworkProtocolName = "network.protocol.name"
	AttrServerAddress       = "server.address"
	AttrServerPort          = "server.port"
	AttrClientAddress       = "client.address"
	AttrClientPort          = "client.port"
	AttrErrorType           = "error.type"
)

// Gateway attributes: what only toolbridge knows about a call.
const (
	// AttrUpstream is the name of the upstream server (the config key).
	AttrUpstream = "toolbridge.upstream"
	// AttrBridgeVia says how the client reached the tool: ViaToolCall or
	// ViaDirect.
	AttrBridgeVia = "toolbridge.bridge.via"
	// AttrToolClass is the tool's class: core, deferrable or unknown.
	AttrToolClass = "toolbridge.tool.class"
	// AttrToolExposed is the name the client knows the tool by, when it is
	// not the tool's own (a tools: rule renamed it).
	AttrToolExposed = "toolbridge.tool.exposed_name"
	// AttrSearchQueryLength is the length in bytes of a tool_search query.
	AttrSearchQueryLength = "toolbridge.search.query_length"
	// AttrSearchLimit is the number of hits tool_search was asked for.
	AttrSearchLimit = "toolbridge.search.limit"
	// AttrSearchHits is the number of hits tool_search returned.
	AttrSearchHits = "toolbridge.search.hits"
	// AttrSearchQuery is the query text; only with record_content.
	AttrSearchQuery = "toolbridge.search.query"
	// AttrSearchSemantic says how the semantic rerank (search.embeddings)
	// ranked a tool_search: reranked, lexical (nothing to rerank with yet)
	// or fallback (the embeddings endpoint failed); absent when it is off.
	AttrSearchSemantic = "toolbridge.search.semantic"
	// AttrSearchSemanticReason says why the rerank did not rerank: a
	// failure's kind, such as timeout or "http status 401".
	AttrSearchSemanticReason = "toolbridge.search.semantic.reason"
	// AttrSearchSemanticMillis is how long the query's embedding took.
	AttrSearchSemanticMillis = "toolbridge.search.semantic.embed_ms"
	// AttrHookDeniedBy names the hook that denied a call.
	AttrHookDeniedBy = "toolbridge.hook.denied_by"
)

// Well-known attribute values.
const (
	// MethodToolsCall is the MCP method of a tool call.
	MethodToolsCall = "tools/call"
	// OperationExecuteTool is gen_ai.operation.name on tool calls.
	OperationExecuteTool = "execute_tool"
	// ViaToolCall marks a call the client made through the tool_call
	// meta-tool.
	ViaToolCall = toolid.MetaCall
	// ViaDirect marks a call the client made by the tool's own name.
	ViaDirect = "direct"
	// ErrorTypeTool is error.type when a tool result has isError set.
	ErrorTypeTool = "tool_error"
	// ErrorTypeOther is error.type for failures without a JSON-RPC code
	// that are not a timeout or a cancellation.
	ErrorTypeOther = "_OTHER"
	// ErrorTypeTimeout is error.type when the call's deadline passed.
	ErrorTypeTimeout = "timeout"
	// ErrorTypeCanceled is error.type when the call was cancelled.
	ErrorTypeCanceled = "cancelled"
)

// networkTransport maps a toolbridge transport name (downstream serve
// transport or upstream transport) to network.transport: stdio runs over
// pipes, every HTTP flavour over TCP. Unknown names give "".
func networkTransport(transport string) string {
	switch transport {
	case config.ServeStdio:
		return "pipe"
	case config.ServeHTTP, config.TransportStreamableHTTP, config.TransportSSE:
		return "tcp"
	}
	return ""
}

// isHTTPTransport reports whether transport carries MCP over HTTP.
func isHTTPTransport(transport string) bool {
	return networkTransport(transport) == "tcp"
}

// requestIDString renders a JSON-RPC id for jsonrpc.request.id. It accepts
// the raw value or anything with a Value() method (mcp-go's RequestId),
// and gives "" for a null or missing id, which the convention says not to
// record.
func requestIDString(id any) string {
	if v, ok := id.(interface{ Value() any }); ok {
		id = v.Value()
	}
	switch v := id.(type) {
	case nil:
		return ""
	case string:
		return v
	case int:
		return strconv.Itoa(v)
	case int64:
		return strconv.FormatInt(v, 10)
	case int32:
		return strconv.FormatInt(int64(v), 10)
	case uint64:
		return strconv.FormatUint(v, 10)
	case float64:
		if v == float64(int64(v)) {
			return strconv.FormatInt(int64(v), 10)
		}
		return strconv.FormatFloat(v, 'f', -1, 64)
	case fmt.Stringer:
		return v.String()
	}
	return fmt.Sprint(id)
}

// hostPort splits an upstream URL into server.address and server.port,
// using the scheme's default port when the URL names none. ok is false
// when the URL has no host.
func hostPort(rawURL string) (host string, port int, ok bool) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" {
		return "", 0, false
	}
	host = u.Hostname()
	if p := u.Port(); p != "" {
		port, err = strconv.Atoi(p)
		if err != nil {
			return host, 0, true
		}
		return host, port, true
	}
	switch u.Scheme {
	case "https":
		return host, 443, true
	case "http":
		return host, 80, true
	}
	return host, 0, true
}

// clientAddr splits a remote address "ip:port" for client.address and
// client.port.
func clientAddr(remote string) []attribute.KeyValue {
	if remote == "" {
		return nil
	}
	host, p, err := net.SplitHostPort(remote)
	if err != nil {
		return []attribute.KeyValue{str(AttrClientAddress, remote)}
	}
	kv := []attribute.KeyValue{str(AttrClientAddress, host)}
	if port, err := strconv.Atoi(p); err == nil {
		kv = append(kv, attribute.Int(AttrClientPort, port))
	}
	return kv
}

// str is attribute.String for values that may come from a client or an
// upstream: it makes them valid UTF-8 first (see clean).
func str(key, v string) attribute.KeyValue { return attribute.String(key, clean(v)) }
