package bridge

// The tools/call fast path, in front of mcp-go's dispatcher.
//
// Why it exists: mcp-go's MCPServer.HandleMessage reads every tools/call
// several times before the gateway's handler runs (the envelope, _meta
// twice, the protocol era, the whole request with its arguments decoded
// into a map nobody reads: the gateway forwards them as raw bytes), and
// its stdio server hands each call to a worker pool through a channel.
// That was most of what the gateway added to a direct call (#25). The
// fast path reads a tools/call once and runs what HandleMessage would run
// for it, in the same order: the hooks (before any, before call), the
// lookup of the registered tool, the tool filters enforced at call time,
// the middlewares (countCalls, traceToolCalls, the in-flight bound, panic
// recovery), the legacy answer to a result that asks for input, the
// success or error hooks, and the JSON-RPC answer. mcp-go stays the MCP
// library: everything else, and every tools/call the fast path is not
// sure about, goes to HandleMessage.
//
// When it falls back to mcp-go (fastCallOf and fastReady decide, before
// anything has run):
//   - mcp-go is not set up as this file was written for: a tracer,
//     logger or propagator, an input or output validator, task tools, or
//     filters and middlewares other than the gateway's own (fastPathFits,
//     checked once in New by reading mcp-go's fields);
//   - the message is anything but a JSON object of exactly jsonrpc "2.0",
//     a string or number id, method "tools/call" (written so) and params,
//     each once, with keys as written here; params of exactly name (a
//     string), arguments and _meta, each at most once: a task, the multi
//     round-trip fields, unknown or duplicate keys all go to mcp-go;
//   - _meta is not an object, or is that of a 2026-07-28 request that
//     mcp-go answers with an error (no client capabilities, a version it
//     does not know);
//   - no session is in the context, or (before 2026-07-28) one not yet
//     initialized, the session has tools of its own, or an
//     OnRequestInitialization hook is installed.
//
// A 2026-07-28 request (protocol version, client info and capabilities
// in _meta) is served as HandleMessage serves it: the session takes the
// client's info and capabilities, and the result gets its resultType and
// the server's identity.
//
// Over streamable HTTP (fastpath_http.go), mcp-go's StreamableHTTPServer
// adds its own cost to every call before HandleMessage's: it decodes the
// body twice more, re-encodes the tool's input schema to look for
// parameters bound to headers, and gives each 2026-07-28 request a
// session of its own with four channels and a goroutine. That held the
// gateway near 0.8 of a plain reverse proxy (BenchmarkHTTPThroughput).
// The HTTP front sits last in httpHandler's chain, after the Host and
// Origin checks, the request count, OAuth and the session guard, and
// answers only a POST of one plain 2026-07-28 tools/call the stdio fast
// path takes, with no progress token or log level in _meta (no upstream
// notification can then reach the request's session; a handler's own
// notification still upgrades the answer to an event stream, as in
// mcp-go), whose Content-Type, Mcp-Protocol-Version, Mcp-Method and
// Mcp-Name headers are the plain case of mcp-go's checks and whose tool
// binds no parameter to a header. Everything else, every request of an
// earlier protocol version among it, goes to mcp-go. The call's context
// is mcp-go's: a session of the request's own (requestSession, with
// mcp-go's session's methods), the supported versions, the HTTP context
// func, the request's headers on request.Header; a 2026-07-28
// notifications/cancelled cancels it by id, as mcp-go's map does.
// TestHTTPFastPathMatchesMCPGo and FuzzHTTPFastPathMatchesMCPGo hold its
// answers (status, headers, body) to mcp-go's.
//
// One difference it cannot remove: server.ServerFromContext is nil in a
// fast call's context (mcp-go's key is private). Nothing in the gateway
// reads it; a handler that needs the server uses g.srv.
//
// TestFastPathMatchesMCPGo and FuzzFastPathMatchesMCPGo hold the fast
// path's answers to mcp-go's, byte for byte; TestFastPathFits fails when
// an mcp-go upgrade changes the fields fastPathFits reads.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/mark3labs/mcp-go/tracing"

	"github.com/toolbridge/toolbridge/bridge/jsonscan"
	"github.com/toolbridge/toolbridge/bridge/upstream"
)

// fastPathFits reports whether srv is set up as the fast path expects:
// nothing in HandleMessage's tools/call path that the fast path does not
// run (see the file's header). It reads mcp-go's unexported fields by
// reflection, once; a field that is missing (another mcp-go version)
// turns the fast path off.
func fastPathFits(srv *server.MCPServer, filters, middlewares int) bool {
	v := reflect.ValueOf(srv).Elem()
	field := func(name string) (reflect.Value, bool) {
		f := v.FieldByName(name)
		return f, f.IsValid()
	}
	for _, name := range []string{"metaPropagator", "requestLogger", "inputValidator", "outputValidator"} {
		f, ok := field(name)
		if !ok || !f.IsNil() {
			return false
		}
	}
	// The tracer and propagator are mcp-go's no-ops unless set.
	for name, noop := range map[string]any{"tracer": tracing.NoopTracer(), "propagator": tracing.NoopPropagator()} {
		f, ok := field(name)
		if !ok || f.IsNil() || f.Elem().Type() != reflect.TypeOf(noop) {
			return false
		}
	}
	// Server-initiated requests stay refused to a 2026-07-28 request, which
	// the HTTP front's session (fastpath_http.go) relies on.
	if f, ok := field("allowServerInitiatedRequests"); !ok || f.Bool() {
		return false
	}
	if f, ok := field("taskTools"); !ok || f.Len() != 0 {
		return false
	}
	if f, ok := field("toolFilters"); !ok || f.Len() != filters {
		return false
	}
	if f, ok := field("toolHandlerMiddlewares"); !ok || f.Len() != middlewares {
		return false
	}
	// The server's identity in a 2026-07-28 result is its name and version
	// only (see serveFastCall).
	if f, ok := field("implementation"); !ok || !f.IsZero() {
		return false
	}
	if f, ok := field("name"); !ok || f.String() != serverName {
		return false
	}
	caps, ok := field("capabilities")
	if !ok {
		return false
	}
	if tools := caps.FieldByName("tools"); !tools.IsValid() || tools.IsNil() {
		return false
	}
	return true
}

// recoverToolPanic is the middleware server.WithRecovery installs: a tool
// handler's panic becomes the call's error. It is the gateway's own so
// that the fast path runs the very same list of middlewares.
func recoverToolPanic(next server.ToolHandlerFunc) server.ToolHandlerFunc {
	return func(ctx context.Context, request mcp.CallToolRequest) (result *mcp.CallToolResult, err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("panic recovered in %s tool handler: %v", request.Params.Name, r)
			}
		}()
		return next(ctx, request)
	}
}

// fastCall is a tools/call request read by fastCallOf.
type fastCall struct {
	id    any             // as encoding/json decodes it into an any: string or float64
	rawID json.RawMessage // as the client wrote it
	name  string
	args  json.RawMessage // nil when absent
	meta  *mcp.Meta
	// info is what mcp-go's extractRequestProtocolInfo makes of _meta:
	// the protocol era and, for 2026-07-28, the client's identity,
	// capabilities and log level.
	info *server.RequestProtocolInfo
}

// Bits for the members fastCallOf has seen.
const (
	seenJSONRPC = 1 << iota
	seenID
	seenMethod
	seenParams
	seenName
	seenArgs
	seenMeta
)

// fastCallOf reads msg, one JSON-RPC message, as a tools/call the fast
// path takes; ok is false for anything else (see the file's header), and
// mcp-go decides.
func fastCallOf(msg []byte) (c fastCall, ok bool) {
	_, c, ok = readLine(msg)
	return c, ok
}

// readLine reads msg, one JSON-RPC message, once for both questions the
// stdio front asks of every line: the guard's envelope, what parseMessage
// gives (its id a slice of msg, where parseMessage copies it), and the
// tools/call the fast path takes, if it is one (ok). The stdio front read
// each line twice, once for each, about 5% of the gateway's CPU a call
// (#25). A message whose members the scan cannot read (an array, a key
// with escapes or beyond ASCII) gets parseMessage's envelope and mcp-go.
// FuzzParseMessage holds the envelope to parseMessage's.
func readLine(msg []byte) (env envelope, c fastCall, ok bool) {
	if !json.Valid(msg) {
		return envelope{}, c, false // what parseMessage makes of it
	}
	var params []byte
	seen := 0
	fast := true
	object := jsonscan.Members(msg, func(key, value []byte) bool {
		// parseMessage's decode: keys matched as encoding/json matches
		// them (without regard to case), the last of each kept.
		switch {
		case bytes.EqualFold(key, []byte("id")):
			env.id = value
		case bytes.EqualFold(key, []byte("method")):
			_ = env.method.UnmarshalJSON(value)
		}
		if fast {
			fast = c.readMember(key, value, &seen, &params)
		}
		return true
	})
	if !object {
		return parseMessage(msg), fastCall{}, false
	}
	if !fast || seen != seenJSONRPC|seenID|seenMethod|seenParams {
		return env, fastCall{}, false
	}
	c, ok = readFastParams(c, params)
	return env, c, ok
}

// readMember reads one member of a message for the fast path: false when
// the message is none it takes. seen has the members read so far;
// params is set to the params' value.
func (c *fastCall) readMember(key, value []byte, seen *int, params *[]byte) bool {
	bit := 0
	switch string(key) {
	case "jsonrpc":
		bit = seenJSONRPC
		if string(value) != `"2.0"` {
			return false
		}
	case "id":
		bit = seenID
		if value[0] != '"' && value[0] != '-' && (value[0] < '0' || value[0] > '9') {
			return false // null, true, an object: mcp-go's
		}
		var read bool
		if c.id, read = decodeID(value); !read {
			return false
		}
		c.rawID = append(json.RawMessage(nil), value...)
	case "method":
		bit = seenMethod
		if string(value) != `"tools/call"` {
			return false
		}
	case "params":
		bit = seenParams
		*params = value
	}
	if bit == 0 || *seen&bit != 0 {
		return false
	}
	*seen |= bit
	return true
}

// readFastParams reads the params of a tools/call the fast path may take
// into c; ok is false when it takes none.
func readFastParams(c fastCall, params []byte) (fastCall, bool) {
	seen := 0
	var plain plainMeta // what readPlainMeta read of _meta, if it did
	plainRead := false
	ok := jsonscan.Members(params, func(key, value []byte) bool {
		bit := 0
		switch string(key) {
		case "name":
			bit = seenName
			var s bool
			if value[0] != '"' {
				return false
			}
			if c.name, s = jsonscan.String(value); !s {
				return false
			}
		case "arguments":
			bit = seenArgs
			c.args = append(json.RawMessage(nil), value...)
		case "_meta":
			bit = seenMeta
			if string(value) == "null" {
				break
			}
			if value[0] != '{' {
				return false
			}
			if m, ok := readPlainMeta(value); ok {
				c.meta, plain, plainRead = m.meta, m, true
			} else if json.Unmarshal(value, &c.meta) != nil {
				return false
			}
		}
		if bit == 0 || seen&bit != 0 {
			return false
		}
		seen |= bit
		return true
	})
	if !ok || seen&seenName == 0 {
		return fastCall{}, false
	}
	// extractRequestProtocolInfo, for the requests it accepts: a modern one
	// without client capabilities, or of a version mcp-go does not know,
	// is answered with an error, by mcp-go.
	if !plainRead {
		plain.version = c.meta.ProtocolVersion()
		if mcp.IsModernProtocol(plain.version) {
			plain.clientInfo = c.meta.ClientInfo()
			plain.level = c.meta.LogLevel()
			plain.caps = c.meta.ClientCapabilities()
		}
	}
	c.info = &server.RequestProtocolInfo{ProtocolVersion: plain.version}
	if mcp.IsModernProtocol(c.info.ProtocolVersion) {
		c.info.Modern = true
		c.info.ClientInfo = plain.clientInfo
		c.info.LogLevel = plain.level
		if c.info.ClientCapabilities = plain.caps; c.info.ClientCapabilities == nil || !mcp.IsValidProtocolVersion(c.info.ProtocolVersion) {
			return fastCall{}, false
		}
	}
	return c, true
}

// plainMeta is a request's _meta as json.Unmarshal decodes it into an
// mcp.Meta (meta), with what mcp-go's accessors make of it: the protocol
// version, client info, log level and client capabilities.
type plainMeta struct {
	meta       *mcp.Meta
	version    string
	clientInfo *mcp.Implementation
	level      mcp.LoggingLevel
	caps       *mcp.ClientCapabilities
}

// readPlainMeta reads value, a _meta object, without a decoder when it is
// the plain case clients send (#25): members only the well-known ones
// (progressToken, and the 2026-07-28 protocol version, client info,
// client capabilities and log level), each once, with keys as written
// here; a progress token a string, a number or null; the version and log
// level strings; client info an object of its string fields; client
// capabilities an object of empty capability objects (and roots'
// listChanged). Decoding _meta into an mcp.Meta and asking its accessors,
// which encode and decode each value again, was about 8% of the
// gateway's CPU a call. ok is false for anything else, which
// readFastParams decodes as mcp-go does. TestReadPlainMeta and
// FuzzReadPlainMeta hold it to that decode.
func readPlainMeta(value []byte) (m plainMeta, ok bool) {
	fields := make(map[string]any, 4)
	meta := &mcp.Meta{}
	seen := 0
	ok = jsonscan.Members(value, func(key, v []byte) bool {
		bit := 0
		switch string(key) {
		case "progressToken":
			bit = 1
			switch {
			case string(v) == "null":
			case v[0] == '"' || v[0] == '-' || (v[0] >= '0' && v[0] <= '9'):
				var read bool
				if meta.ProgressToken, read = decodeID(v); !read {
					return false
				}
			default:
				return false
			}
		case mcp.MetaKeyProtocolVersion:
			bit = 2
			s, read := metaString(v)
			if !read {
				return false
			}
			fields[mcp.MetaKeyProtocolVersion], m.version = s, s
		case mcp.MetaKeyLogLevel:
			bit = 4
			s, read := metaString(v)
			if !read {
				return false
			}
			fields[mcp.MetaKeyLogLevel], m.level = s, mcp.LoggingLevel(s)
		case mcp.MetaKeyClientInfo:
			bit = 8
			var raw map[string]any
			if m.clientInfo, raw = plainClientInfo(v); m.clientInfo == nil {
				return false
			}
			fields[mcp.MetaKeyClientInfo] = raw
		case mcp.MetaKeyClientCapabilities:
			bit = 16
			var raw map[string]any
			if m.caps, raw = plainCapabilities(v); m.caps == nil {
				return false
			}
			fields[mcp.MetaKeyClientCapabilities] = raw
		}
		if bit == 0 || seen&bit != 0 {
			return false
		}
		seen |= bit
		return true
	})
	if !ok {
		return plainMeta{}, false
	}
	meta.AdditionalFields = fields
	m.meta = meta
	if !mcp.IsModernProtocol(m.version) {
		// What the accessors are not asked for, as in readFastParams.
		m.clientInfo, m.level, m.caps = nil, "", nil
	}
	return m, true
}

// metaString reads v, a JSON value, when it is a string.
func metaString(v []byte) (string, bool) {
	if v[0] != '"' {
		return "", false
	}
	return jsonscan.String(v)
}

// plainClientInfo reads v when it is an object of mcp.Implementation's
// string fields, each once, with keys as written: the Implementation
// (nil for anything else) and the map json.Unmarshal makes of v.
func plainClientInfo(v []byte) (*mcp.Implementation, map[string]any) {
	info := &mcp.Implementation{}
	raw := make(map[string]any, 2)
	ok := jsonscan.Members(v, func(key, v []byte) bool {
		var field *string
		switch string(key) {
		case "name":
			field = &info.Name
		case "version":
			field = &info.Version
		case "title":
			field = &info.Title
		case "description":
			field = &info.Description
		case "websiteUrl":
			field = &info.WebsiteURL
		default:
			return false
		}
		s, read := metaString(v)
		if _, dup := raw[string(key)]; !read || dup {
			return false
		}
		*field, raw[string(key)] = s, s
		return true
	})
	if !ok {
		return nil, nil
	}
	return info, raw
}

// plainCapabilities reads v when it is an object of empty capability
// objects (roots may say listChanged), each once, with keys as written:
// the capabilities (nil for anything else) and the map json.Unmarshal
// makes of v.
func plainCapabilities(v []byte) (*mcp.ClientCapabilities, map[string]any) {
	caps := &mcp.ClientCapabilities{}
	raw := make(map[string]any, 2)
	ok := jsonscan.Members(v, func(key, v []byte) bool {
		if _, dup := raw[string(key)]; dup {
			return false
		}
		if string(key) == "roots" {
			var listChanged, set bool
			if !jsonscan.Members(v, func(key, v []byte) bool {
				if string(key) != "listChanged" || set || (string(v) != "true" && string(v) != "false") {
					return false
				}
				listChanged, set = string(v) == "true", true
				return true
			}) {
				return false
			}
			caps.Roots = &struct {
				ListChanged bool `json:"listChanged,omitempty"`
			}{ListChanged: listChanged}
			roots := map[string]any{}
			if set {
				roots["listChanged"] = listChanged
			}
			raw["roots"] = roots
			return true
		}
		if v[0] != '{' || jsonscan.SkipSpace(v, 1) != len(v)-1 {
			return false // not an empty object
		}
		switch string(key) {
		case "sampling":
			caps.Sampling = &mcp.SamplingCapability{}
		case "elicitation":
			caps.Elicitation = &mcp.ElicitationCapability{}
		case "tasks":
			caps.Tasks = &mcp.TasksCapability{}
		case "experimental":
			caps.Experimental = map[string]any{}
		case "extensions":
			caps.Extensions = map[string]any{}
		default:
			return false
		}
		raw[string(key)] = map[string]any{}
		return true
	})
	if !ok {
		return nil, nil
	}
	return caps, raw
}

// decodeID is json.Unmarshal of value, a string or number of a valid
// document, into an any, without the decoder's set-up for what is one
// string or number: a float64 as strconv reads it (ok is false where the
// decoder fails, out of float64's range), a string as is unless it has
// escapes or bytes that are not UTF-8, which the decoder reads.
// FuzzDecodeID holds it to json.Unmarshal.
func decodeID(value []byte) (id any, ok bool) {
	if value[0] != '"' {
		f, err := strconv.ParseFloat(string(value), 64)
		return f, err == nil
	}
	if s, ok := jsonscan.String(value); ok {
		return s, true
	}
	return id, json.Unmarshal(value, &id) == nil
}

// fastReady reports whether ctx is one the fast path serves c in: it
// holds a session without tools of its own, initialized unless c is of
// 2026-07-28 (which has no handshake), and no hook inspects raw
// requests.
func (g *Gateway) fastReady(ctx context.Context, c fastCall) bool {
	if !g.fast || len(g.srv.GetHooks().OnRequestInitialization) > 0 {
		return false
	}
	s := server.ClientSessionFromContext(ctx)
	if s == nil || (!s.Initialized() && !c.info.Modern) {
		return false
	}
	if st, ok := s.(server.SessionWithTools); ok && len(st.GetSessionTools()) > 0 {
		return false
	}
	return true
}

// handleMessage answers msg as g.srv.HandleMessage does, by the fast path
// when it takes msg (a tools/call), else by HandleMessage itself.
func (g *Gateway) handleMessage(ctx context.Context, msg json.RawMessage) mcp.JSONRPCMessage {
	if c, ok := fastCallOf(msg); ok && g.fastReady(ctx, c) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		return g.serveFastCall(ctx, c, nil)
	}
	return g.srv.HandleMessage(ctx, msg)
}

// serveFastCall answers c as HandleMessage's tools/call case does, hooks
// included. ctx is the request's: its cancellation is the caller's.
// header is the HTTP request's headers, which the handler gets on
// request.Header as mcp-go gives them; nil (stdio) stands for none, and
// the handler and hooks get it as is, where mcp-go makes an empty map: the
// gateway's own hooks and handlers only read it (trace.Extract), and a
// nil http.Header reads as an empty one, for an allocation less a call.
func (g *Gateway) serveFastCall(ctx context.Context, c fastCall, header http.Header) mcp.JSONRPCMessage {
	g.fastServed.Add(1)
	ctx = server.WithRequestProtocolInfo(ctx, c.info)
	if c.info.Modern {
		// What mcp-go's applyRequestProtocolInfoToSession does: the
		// session state the handshake used to establish.
		s := server.ClientSessionFromContext(ctx)
		if withInfo, ok := s.(server.SessionWithClientInfo); ok {
			if c.info.ClientInfo != nil {
				withInfo.SetClientInfo(*c.info.ClientInfo)
			}
			withInfo.SetClientCapabilities(*c.info.ClientCapabilities)
		}
		if !s.Initialized() {
			s.Initialize()
		}
	}
	req := mcp.CallToolRequest{Header: header}
	req.Method = string(mcp.MethodToolsCall)
	req.Params.Name = c.name
	req.Params.RawArguments = c.args
	req.Params.Meta = c.meta
	hooks := g.srv.GetHooks()
	for _, h := range hooks.OnBeforeAny {
		h(ctx, c.id, mcp.MethodToolsCall, &req)
	}
	for _, h := range hooks.OnBeforeCallTool {
		h(ctx, c.id, &req)
	}
	result, rerr := g.fastToolCall(ctx, c.id, req)
	if rerr != nil {
		for _, h := range hooks.OnError {
			h(ctx, c.id, mcp.MethodToolsCall, &req, rerr)
		}
		return rerr.ToJSONRPCError()
	}
	var res any = result
	for _, h := range hooks.OnSuccess {
		h(ctx, c.id, mcp.MethodToolsCall, &req, res)
	}
	for _, h := range hooks.OnAfterCallTool {
		h(ctx, c.id, &req, res)
	}
	if c.info.Modern {
		// mcp-go's decorateResponse for a 2026-07-28 result: resultType,
		// unless the handler set it, and the server's identity.
		if result.ResultType == "" {
			result.ResultType = mcp.ResultTypeComplete
		}
		if meta := result.EnsureResultMeta(); meta != nil && meta.ServerInfo() == nil {
			meta.SetServerInfo(mcp.Implementation{Name: serverName, Version: Version})
		}
	}
	return mcp.NewJSONRPCResultResponse(mcp.NewRequestId(c.id), res)
}

// fastToolCall is mcp-go's handleToolCall for what the fast path takes
// (no task, no session tools, no validators): the registered tool, the
// filters at call time, the middlewares, the legacy answer to a request
// for input, and a nil result refused.
func (g *Gateway) fastToolCall(ctx context.Context, id any, req mcp.CallToolRequest) (*mcp.CallToolResult, *fastError) {
	name := req.Params.Name
	tool := g.fastTool(name)
	if tool == nil || !g.passesToolFilters(ctx, &tool.tool) {
		// A tool a filter hides answers as an unknown one.
		return nil, &fastError{id: id, code: mcp.INVALID_PARAMS, err: fmt.Errorf("tool '%s' not found: %w", name, server.ErrToolNotFound)}
	}
	if tool.tool.Execution != nil && tool.tool.Execution.TaskSupport == mcp.TaskSupportRequired {
		return nil, &fastError{id: id, code: mcp.METHOD_NOT_FOUND, err: fmt.Errorf("tool '%s' requires task augmentation", name)}
	}
	result, err := tool.handler(ctx, req)
	if err != nil {
		return nil, handlerFailure(ctx, id, err)
	}
	if result, err = g.answerInputRequests(ctx, result, req, tool.handler); err != nil {
		return nil, handlerFailure(ctx, id, err)
	}
	if result == nil {
		return nil, &fastError{id: id, code: mcp.INTERNAL_ERROR, err: fmt.Errorf("tool '%s' handler returned no result", name)}
	}
	return result, nil
}

// fastTool is a tool registered with mcp-go as the fast path calls it:
// the tool as mcp-go holds it, and its handler with the middlewares
// around it, in the order mcp-go puts them. mcp-go composes the
// middlewares anew on every call, and so did the fast path: four
// closures and a copy of the tool a call (#25). The middlewares read
// what a reload changes (the settings, the catalog) when a call runs,
// so composing them once per registration is the same handler.
type fastTool struct {
	tool    mcp.Tool
	handler server.ToolHandlerFunc
	// bindsHeaders says whether the input schema binds parameters to
	// headers (x-mcp-header), which the HTTP front leaves to mcp-go.
	bindsHeaders bool
}

// fastTools holds the fastTool of each registered tool that was called
// since the tools were last registered: filled on a tool's first call,
// from what mcp-go holds, so that it costs nothing for the tools never
// called, however many are registered.
type fastTools struct {
	byName sync.Map // string (the registered name) -> *fastTool
}

// setTools registers tools with mcp-go, replacing the ones registered,
// and starts the fast path's view of them afresh. The gateway registers
// tools only here: a tool registered with g.srv in any other way is not
// seen by the fast path until resetFastTools.
func (g *Gateway) setTools(tools ...server.ServerTool) {
	g.srv.SetTools(tools...)
	g.resetFastTools()
}

// resetFastTools drops the fast path's view of the registered tools. It
// comes after the registration: a call that finds the new, empty view
// finds the new tools in mcp-go.
func (g *Gateway) resetFastTools() { g.fastTools.Store(&fastTools{}) }

// fastTool returns the registered tool name as the fast path calls it,
// or nil when mcp-go has no tool of that name.
func (g *Gateway) fastTool(name string) *fastTool {
	view := g.fastTools.Load()
	if t, ok := view.byName.Load(name); ok {
		return t.(*fastTool)
	}
	registered := g.srv.GetTool(name)
	if registered == nil {
		return nil // not remembered: names that are not tools are unbounded
	}
	t := &fastTool{tool: registered.Tool, handler: registered.Handler,
		bindsHeaders: len(mcp.ExtractParamHeaderBindings(&registered.Tool)) > 0}
	for i := len(g.toolMiddlewares) - 1; i >= 0; i-- {
		t.handler = g.toolMiddlewares[i](t.handler)
	}
	actual, _ := view.byName.LoadOrStore(name, t)
	return actual.(*fastTool)
}

// passesToolFilters is mcp-go's check at call time: only tool is passed
// through the filters, and it must come out. The one-tool list it passes
// is reused: the filters keep no list they are given.
func (g *Gateway) passesToolFilters(ctx context.Context, tool *mcp.Tool) bool {
	one, _ := g.oneTool.Get().(*[1]mcp.Tool)
	if one == nil {
		one = new([1]mcp.Tool)
	}
	defer func() {
		one[0] = mcp.Tool{}
		g.oneTool.Put(one)
	}()
	one[0] = *tool
	tools := one[:]
	for _, filter := range g.toolFilters {
		if tools = filter(ctx, tools); len(tools) == 0 {
			return false
		}
	}
	for _, t := range tools {
		if t.Name == tool.Name {
			return true
		}
	}
	return false
}

// fastError is mcp-go's requestError: what the error hooks get and the
// JSON-RPC error the client gets.
type fastError struct {
	id   any
	code int
	err  error
	data any
}

func (e *fastError) Error() string { return fmt.Sprintf("request error: %s", e.err) }

func (e *fastError) Unwrap() error { return e.err }

// ToJSONRPCError is the error as the client gets it.
func (e *fastError) ToJSONRPCError() mcp.JSONRPCError {
	return mcp.JSONRPCError{
		JSONRPC: mcp.JSONRPC_VERSION,
		ID:      mcp.NewRequestId(e.id),
		Error:   mcp.NewJSONRPCErrorDetails(e.code, e.err.Error(), e.data),
	}
}

// handlerFailure is mcp-go's handlerError for a legacy request: a
// URL elicitation the handler requires keeps its own code and data;
// anything else is an internal error.
func handlerFailure(ctx context.Context, id any, err error) *fastError {
	var required mcp.URLElicitationRequiredError
	var pointer *mcp.URLElicitationRequiredError
	found := errors.As(err, &required)
	if !found && errors.As(err, &pointer) && pointer != nil {
		required, found = *pointer, true
	}
	if found && !mcp.IsModernProtocol(server.RequestProtocolVersion(ctx)) {
		details := required.JSONRPCError().Error
		return &fastError{id: id, code: details.Code, err: err, data: details.Data}
	}
	return &fastError{id: id, code: mcp.INTERNAL_ERROR, err: err}
}

// maxInputRoundTrips is mcp-go's bound on a handler asking for input
// again and again (maxLegacyInputRoundTrips).
const maxInputRoundTrips = 10

// answerInputRequests is mcp-go's resolveMultiRoundTrip for a legacy
// client: a result that asks for input (an upstream's input_required)
// has its requests answered with the server-initiated requests the client
// understands, and the handler is called again with the answers, until it
// gives a final result. A client of 2026-07-28 never reaches the fast
// path, so the result is never passed through as it is.
func (g *Gateway) answerInputRequests(ctx context.Context, result *mcp.CallToolResult, req mcp.CallToolRequest, handler server.ToolHandlerFunc) (*mcp.CallToolResult, error) {
	if mcp.IsModernProtocol(server.RequestProtocolVersion(ctx)) {
		return result, nil
	}
	for attempt := 0; ; attempt++ {
		if !result.NeedsInput() {
			return result, nil
		}
		if len(result.InputRequests) == 0 {
			return nil, fmt.Errorf("multi round-trip: %w", server.ErrLoadShedding)
		}
		if attempt >= maxInputRoundTrips {
			return nil, fmt.Errorf("multi round-trip: handler asked for input more than %d times", maxInputRoundTrips)
		}
		responses, err := g.fulfilInputRequests(ctx, result.InputRequests)
		if err != nil {
			return nil, err
		}
		retried := req
		retried.Params.MultiRoundTripParams = mcp.MultiRoundTripParams{InputResponses: responses, RequestState: result.RequestState}
		if result, err = handler(ctx, retried); err != nil {
			return nil, err
		}
	}
}

// fulfilInputRequests is mcp-go's fulfillInputRequests: every request at
// once, the first failure cancelling the others.
func (g *Gateway) fulfilInputRequests(ctx context.Context, requests mcp.InputRequests) (mcp.InputResponses, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu        sync.Mutex
		wg        sync.WaitGroup
		responses = make(mcp.InputResponses, len(requests))
		firstErr  error
	)
	for id, request := range requests {
		wg.Go(func() {
			response, err := g.fulfilInputRequest(ctx, request)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if firstErr == nil {
					firstErr = fmt.Errorf("fulfilling input request %q: %w", id, err)
					cancel()
				}
				return
			}
			responses[id] = response
		})
	}
	wg.Wait()
	if firstErr != nil {
		return nil, fmt.Errorf("multi round-trip: %w", firstErr)
	}
	return responses, nil
}

// fulfilInputRequest is mcp-go's fulfillInputRequest: one
// server-initiated request.
func (g *Gateway) fulfilInputRequest(ctx context.Context, request mcp.InputRequest) (mcp.InputResponse, error) {
	switch request.Method {
	case mcp.MethodElicitationCreate:
		if request.Elicitation == nil {
			return mcp.InputResponse{}, fmt.Errorf("elicitation input request has no params")
		}
		result, err := g.srv.RequestElicitation(ctx, mcp.ElicitationRequest{
			Request: mcp.Request{Method: string(mcp.MethodElicitationCreate)},
			Params:  *request.Elicitation,
		})
		if err != nil {
			return mcp.InputResponse{}, err
		}
		if result == nil {
			return mcp.InputResponse{}, fmt.Errorf("session returned no elicitation result")
		}
		return mcp.NewElicitationInputResponse(*result), nil
	case mcp.MethodSamplingCreateMessage:
		if request.Sampling == nil {
			return mcp.InputResponse{}, fmt.Errorf("sampling input request has no params")
		}
		result, err := g.srv.RequestSampling(ctx, mcp.CreateMessageRequest{
			Request:             mcp.Request{Method: string(mcp.MethodSamplingCreateMessage)},
			CreateMessageParams: *request.Sampling,
		})
		if err != nil {
			return mcp.InputResponse{}, err
		}
		if result == nil {
			return mcp.InputResponse{}, fmt.Errorf("session returned no sampling result")
		}
		return mcp.NewSamplingInputResponse(*result), nil
	case mcp.MethodListRoots:
		result, err := g.srv.RequestRoots(ctx, mcp.ListRootsRequest{
			Request: mcp.Request{Method: string(mcp.MethodListRoots)},
		})
		if err != nil {
			return mcp.InputResponse{}, err
		}
		if result == nil {
			return mcp.InputResponse{}, fmt.Errorf("session returned no roots result")
		}
		return mcp.NewRootsInputResponse(*result), nil
	default:
		return mcp.InputResponse{}, fmt.Errorf("unsupported input request method %q", request.Method)
	}
}

// trimJSONSpace cuts the white space JSON allows (and only that) from
// both ends of line.
func trimJSONSpace(line []byte) []byte {
	return bytes.TrimFunc(line, func(r rune) bool { return r == ' ' || r == '\t' || r == '\n' || r == '\r' })
}

// stdioFront is the stdio line loop in front of mcp-go's StdioServer: it
// answers the tools/call lines the fast path takes, each on a goroutine
// other than the one reading the next lines (a call may be long) that
// writes its answer itself, and hands every other line, unchanged and in
// order, to the StdioServer through a pipe. mcp-go keeps its stdio
// session private; the context it serves requests in (the session in it)
// comes from its context func (see contextFunc).
//
// The lines are read by one goroutine at a time, the reader, in turn: the
// reader that reads a call answers it itself, and the reading passes to
// another goroutine only when the call is not alone or takes long (see
// follow). The goroutines are kept: a goroutine started for each call
// began with a small stack and grew it on every call, copying it once or
// twice, which was about 6% of the gateway's CPU a call over stdio (#25).
type stdioFront struct {
	g      *Gateway
	out    *lockedWriter
	logger *log.Logger
	// read, if set, sees every line that goes on past the guard, as
	// readLine read it (pendingCalls.readParsed).
	read func(line []byte, msg envelope)
	// base is the context mcp-go serves requests in, and end cancels the
	// fast calls, as mcp-go cancels its own when its input ends.
	base atomic.Pointer[context.Context]
	end  context.CancelFunc
	// inflight cancels a fast call by its id, for notifications/cancelled,
	// as mcp-go's own map does for the requests it serves.
	mu       sync.Mutex
	inflight map[string]context.CancelFunc
	stopped  bool // by stop: no new fast call starts
	calls    sync.WaitGroup
	// What run reads and writes, for the reader of the moment: the
	// client's lines, the end held back, and mcp-go's input.
	lines func() ([]byte, error)
	held  *heldEOF
	pw    *io.PipeWriter
	// buffered, if set, reports whether more input is read already.
	buffered func() bool
	// turn hands the reading to a goroutine waiting for it (see follow);
	// idle counts those, and quit, closed by stop, ends them.
	turn chan struct{}
	idle atomic.Int32
	quit chan struct{}
}

// fastJob is one fast call: the call, its context and the key it is
// cancelled by.
type fastJob struct {
	ctx    context.Context
	cancel context.CancelFunc
	key    string
	c      fastCall
	// alone: no other fast call was in flight when this one was read.
	alone bool
}

// maxIdleWorkers bounds the goroutines kept waiting for their turn to
// read: more calls at once than that start goroutines that end after
// their call.
const maxIdleWorkers = 4

func newStdioFront(g *Gateway, out *lockedWriter, logger *log.Logger) *stdioFront {
	return &stdioFront{g: g, out: out, logger: logger, inflight: map[string]context.CancelFunc{},
		turn: make(chan struct{}), quit: make(chan struct{})}
}

// contextFunc is the StdioServer's context func: it keeps the context
// mcp-go serves requests in, the stdio session in it, for the fast calls.
func (f *stdioFront) contextFunc(ctx context.Context) context.Context {
	base, end := context.WithCancel(ctx)
	f.mu.Lock()
	f.end = end
	f.mu.Unlock()
	f.base.Store(&base)
	return ctx
}

// endCalls cancels the fast calls still running: the input has ended.
func (f *stdioFront) endCalls() {
	f.mu.Lock()
	end := f.end
	f.mu.Unlock()
	if end != nil {
		end()
	}
}

// run reads the client's lines until they end (see lead), on this
// goroutine first, then on each in turn (see follow).
func (f *stdioFront) run(lines func() ([]byte, error), held *heldEOF, pw *io.PipeWriter) {
	f.lines, f.held, f.pw = lines, held, pw
	f.follow()
}

// follow reads lines while it is the reader. Given a call to answer, it
// answers it itself, then goes on reading, unless it handed the reading
// on meanwhile (see handOver): at once when another call is in flight or
// more input is read already, else once the call has run for
// handOverAfter. Having handed it on, it waits for its turn to read again
// while fewer than maxIdleWorkers others wait, until stop. A hand-over is
// a channel send, which orders one reader's reads and writes to pw before
// the next one's.
//
// Why the reader answers the call it read: handing every call to a worker
// put a goroutine hand-off between reading the call and starting it, and
// readied a goroutine a call, with the other core idle a thread looking
// for work too. A call alone, as from a client that waits for each
// answer, now goes from the line read to the answer written on one
// goroutine: the latency the gateway adds to a tool_call over stdio fell
// by a tenth (#25). Handing the reading on at once instead (leader and
// followers) readies a goroutine a call all the same, and measured no
// gain. The price is bounded: a line that comes while a lone call runs
// (a cancellation, a second call, an answer to the server's request)
// waits handOverAfter at most, and of calls sent at once only the second
// may wait.
//
// The timer is armed and stopped once a call. Arming it wakes an idle P
// when no thread waits in the poller (runtime wakeNetPoller, then wakep):
// with StdioTransport's handBack timer, most of the futex wake-ups a call
// left after 663f532. Measured and not kept (#25): removing both timers
// outright (no hand-over, no hand-back: unsafe, an upper bound) did not
// change the gateway's CPU a call (toolcall 198.9 → 197.4 µs, p=0.82, n=6)
// or its added latency (p=0.24); the gateway at GOMAXPROCS=1 neither
// (198.9 → 186.6 µs, p=0.20). What a call costs now is its four pipe
// syscalls, the poller's two waits and the handler itself.
func (f *stdioFront) follow() {
	t := time.AfterFunc(time.Hour, f.handOver)
	t.Stop()
	for {
		j, ok := f.lead()
		if !ok {
			return // the input has ended
		}
		if !j.alone || f.buffered != nil && f.buffered() {
			// Calls at once, or another line there already: no waiting.
			f.handOver()
			f.do(j)
		} else {
			t.Reset(handOverAfter)
			f.do(j)
			if t.Stop() {
				continue // still the reader
			}
			// t's handOver has passed the reading on, or is doing it.
		}
		if f.idle.Add(1) > maxIdleWorkers {
			f.idle.Add(-1)
			return
		}
		select {
		case <-f.turn:
			f.idle.Add(-1)
		case <-f.quit:
			f.idle.Add(-1)
			return
		}
	}
}

// handOver passes the reading to a goroutine waiting for its turn, else
// to a new one.
func (f *stdioFront) handOver() {
	select {
	case f.turn <- struct{}{}:
	default:
		go f.follow()
	}
}

// handOverAfter is how long a reader answering a call holds the next
// lines back (a cancellation, another call) before it hands the reading
// on: longer than nearly every call's round trip to a local upstream, and
// short next to what a client waits for an answer.
const handOverAfter = 2 * time.Millisecond

// lead reads the client's lines until one is a call the fast path takes,
// which it returns, or until they end (ok false), reading each once
// (readLine) for all it is checked for: a message the guard refuses is
// answered at once with -32600 (see refusedMessage) and goes no further;
// every other is noted by read, if set, then answered on the fast path or
// written, unchanged and in order, to mcp-go's input, pw. At the end, the
// calls read before it get their grace (held), then pw is closed with the
// end.
func (f *stdioFront) lead() (j fastJob, ok bool) {
	for {
		line, err := f.lines()
		if len(line) > 0 {
			msg := trimJSONSpace(line)
			env, c, fast := readLine(msg)
			if why := env.refused(); why != "" {
				_, _ = f.out.Write(upstream.ErrorLine(nil, mcp.INVALID_REQUEST, why))
				line = nil
			} else if f.read != nil {
				f.read(line, env)
			}
			if err != nil {
				f.held.hold()
			}
			// A last line without its newline is mcp-go's: it drops it.
			if len(line) > 0 && err == nil {
				if j, ok := f.serve(msg, c, fast); ok {
					return j, true
				}
			}
			if len(line) > 0 {
				if _, werr := f.pw.Write(line); werr != nil {
					f.endCalls()
					return fastJob{}, false // mcp-go has stopped reading
				}
			}
		}
		if err != nil {
			f.held.hold()
			f.endCalls()
			_ = f.pw.CloseWithError(err)
			return fastJob{}, false
		}
	}
}

// serve takes msg, read by readLine as c (fast: a call the fast path may
// take), for the fast path and returns the call to answer (ok false: it
// is not the fast path's); a notifications/cancelled for a fast call
// cancels it (and still goes on to mcp-go, as every line the fast path
// does not answer).
func (f *stdioFront) serve(msg []byte, c fastCall, fast bool) (j fastJob, ok bool) {
	if bytes.Contains(msg, []byte(`"notifications/cancelled"`)) {
		f.cancelled(msg)
		return fastJob{}, false
	}
	if !fast {
		return fastJob{}, false
	}
	base := f.base.Load()
	if base == nil || !f.g.fastReady(*base, c) {
		return fastJob{}, false
	}
	ctx, cancel := context.WithCancel(*base)
	key := fmt.Sprintf("%v", c.id)
	f.mu.Lock()
	if f.stopped {
		f.mu.Unlock()
		cancel()
		return fastJob{}, false
	}
	f.inflight[key] = cancel
	alone := len(f.inflight) == 1
	f.calls.Add(1)
	f.mu.Unlock()
	return fastJob{ctx: ctx, cancel: cancel, key: key, c: c, alone: alone}, true
}

// do answers one fast call and forgets it.
func (f *stdioFront) do(j fastJob) {
	defer f.calls.Done()
	defer func() {
		f.mu.Lock()
		delete(f.inflight, j.key)
		f.mu.Unlock()
		j.cancel()
	}()
	f.write(f.answer(j.ctx, j.c), j.c.rawID)
}

// stop ends the fast path: the calls still running are cancelled, no new
// one starts, and it returns once every answer is written and the
// workers have ended.
func (f *stdioFront) stop() {
	f.mu.Lock()
	already := f.stopped
	f.stopped = true
	f.mu.Unlock()
	f.endCalls()
	f.calls.Wait()
	if !already {
		close(f.quit)
	}
}

// answer is the fast call's answer; a panic outside the tool handler
// (which recoverToolPanic covers) is answered as mcp-go's stdio worker
// answers it.
func (f *stdioFront) answer(ctx context.Context, c fastCall) (resp mcp.JSONRPCMessage) {
	defer func() {
		if r := recover(); r != nil {
			f.logger.Printf("panic recovered in stdio tool call worker: %v", r)
			resp = mcp.JSONRPCError{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(c.id),
				Error: mcp.NewJSONRPCErrorDetails(mcp.INTERNAL_ERROR, fmt.Sprintf("internal panic: %v", r), nil)}
		}
	}()
	return f.g.serveFastCall(ctx, c, nil)
}

// write writes resp, the answer to the request with id rawID, as one
// line, as mcp-go's stdio server does.
func (f *stdioFront) write(resp mcp.JSONRPCMessage, rawID json.RawMessage) {
	b, err := encodeAnswer(resp)
	if err == nil {
		_, err = f.out.writeAnswer(b, rawID)
	}
	recycleAnswer(b)
	if err != nil {
		f.logger.Printf("Error writing tool response: %v", err)
	}
}

// cancelled cancels the fast call a notifications/cancelled names.
func (f *stdioFront) cancelled(msg []byte) {
	var n struct {
		JSONRPC string `json:"jsonrpc"`
		Method  string `json:"method"`
		ID      any    `json:"id"`
		Params  struct {
			RequestID any `json:"requestId"`
		} `json:"params"`
	}
	if json.Unmarshal(msg, &n) != nil || n.JSONRPC != mcp.JSONRPC_VERSION || n.ID != nil ||
		n.Method != string(mcp.MethodNotificationCancelled) || n.Params.RequestID == nil {
		return
	}
	key := fmt.Sprintf("%v", n.Params.RequestID)
	f.mu.Lock()
	cancel := f.inflight[key]
	delete(f.inflight, key)
	f.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// encodeAnswer is json.Marshal(resp) plus the newline that ends a stdio
// message. The answer of nearly every call (text blocks, maybe
// structured content already in raw bytes, no _meta) is written here
// directly: mcp-go's CallToolResult.MarshalJSON builds a map of it and
// encodes that by reflection, about 25 allocations a call. Anything else
// goes through json.Marshal. FuzzEncodeAnswer holds the two to the same
// bytes. A caller done with the bytes once it has written them may hand
// them back with recycleAnswer.
func encodeAnswer(resp mcp.JSONRPCMessage) ([]byte, error) {
	if r, ok := resp.(mcp.JSONRPCResponse); ok {
		if res, ok := r.Result.(*mcp.CallToolResult); ok && plainResult(res) {
			var buf []byte
			if p, _ := answerBufs.Get().(*[]byte); p != nil {
				buf = *p
			}
			return appendPlainAnswer(buf, r.ID, res)
		}
	}
	b, err := json.Marshal(resp)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// answerBufs keeps the buffers answers were written in, for the next
// answers: an answer is garbage once written (a tool_search answer over
// stdio is 2 to 5 KB, a tenth of what a search allocated in all, and what
// a search allocates decides how often the collector runs, #25).
var answerBufs sync.Pool

// maxRecycledAnswer bounds the buffers answerBufs keeps: a rare large
// answer's buffer is left to the collector rather than held.
const maxRecycledAnswer = 64 << 10

// recycleAnswer hands back b, encodeAnswer's bytes, once written: the
// caller must not use it after.
func recycleAnswer(b []byte) {
	if cap(b) == 0 || cap(b) > maxRecycledAnswer {
		return
	}
	b = b[:0]
	answerBufs.Put(&b)
}

// plainResult reports whether res is one appendPlainAnswer writes as
// mcp-go would: text blocks without annotations or _meta, structured
// content as raw bytes, a structuredAppender (tool_search's) or none, and
// no input requests.
func plainResult(res *mcp.CallToolResult) bool {
	if len(res.InputRequests) > 0 || res.RequestState != "" {
		return false
	}
	if len(res.RawStructuredContent) == 0 && res.StructuredContent != nil {
		if _, ok := res.StructuredContent.(structuredAppender); !ok {
			return false
		}
	}
	for _, c := range res.Content {
		t, ok := c.(mcp.TextContent)
		if !ok || t.Annotations != nil || t.Meta != nil {
			return false
		}
	}
	return true
}

// appendPlainAnswer writes the answer with id and res, a plainResult, in
// buf's room (buf's bytes are overwritten; nil for a new buffer), as
// json.Marshal writes it: the map CallToolResult.MarshalJSON builds has
// its keys in sorted order (_meta, content, isError, resultType,
// structuredContent), and strings and raw JSON are escaped as
// encoding/json escapes them. A 2026-07-28 answer's _meta (the server's
// identity) is still encoded by json.Marshal.
func appendPlainAnswer(buf []byte, id mcp.RequestId, res *mcp.CallToolResult) ([]byte, error) {
	var err error
	var meta []byte
	if res.Meta != nil {
		if meta, err = encodeResultMeta(res.Meta); err != nil {
			return nil, err
		}
	}
	var structured []byte
	appender, _ := res.StructuredContent.(structuredAppender)
	if raw := res.RawStructuredContent; len(raw) > 0 {
		appender = nil // mcp-go writes the raw bytes first
		if compactAsIs(raw) {
			structured = raw
		} else if structured, err = json.Marshal(raw); err != nil {
			return nil, err
		}
	}
	size := 128 + len(meta) + len(structured)
	for _, c := range res.Content {
		size += 32 + len(c.(mcp.TextContent).Type) + len(c.(mcp.TextContent).Text)*11/10
	}
	if appender != nil {
		size += appender.sizeHint()
	}
	buf = slices.Grow(buf[:0], size)
	buf = append(buf, `{"jsonrpc":"2.0","id":`...)
	if buf, err = appendID(buf, id); err != nil {
		return nil, err
	}
	buf = append(buf, `,"result":{`...)
	if meta != nil {
		buf = append(buf, `"_meta":`...)
		buf = append(buf, meta...)
		buf = append(buf, ',')
	}
	buf = append(buf, `"content":[`...)
	for i, c := range res.Content {
		t := c.(mcp.TextContent)
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, `{"type":`...)
		buf = jsonscan.AppendString(buf, t.Type)
		buf = append(buf, `,"text":`...)
		buf = jsonscan.AppendString(buf, t.Text)
		buf = append(buf, '}')
	}
	buf = append(buf, ']')
	if res.IsError {
		buf = append(buf, `,"isError":true`...)
	}
	if res.ResultType != "" {
		buf = append(buf, `,"resultType":`...)
		buf = jsonscan.AppendString(buf, string(res.ResultType))
	}
	if structured != nil {
		buf = append(buf, `,"structuredContent":`...)
		buf = append(buf, structured...)
	} else if appender != nil {
		buf = append(buf, `,"structuredContent":`...)
		if buf, err = appender.appendJSON(buf); err != nil {
			return nil, err
		}
	}
	return append(buf, "}}\n"...), nil
}

// appendID appends json.Marshal(id): the string or float64 the fast path
// reads an id as (decodeID), or the int64 mcp-go's own ids are, written
// directly; anything else through json.Marshal.
func appendID(buf []byte, id mcp.RequestId) ([]byte, error) {
	switch v := id.Value().(type) {
	case string:
		return jsonscan.AppendString(buf, v), nil
	case float64:
		return appendFloat(buf, v)
	case int64:
		return strconv.AppendInt(buf, v, 10), nil
	}
	raw, err := json.Marshal(id)
	if err != nil {
		return nil, err
	}
	return append(buf, raw...), nil
}

// compactAsIs reports whether raw is valid JSON that json.Marshal of a
// json.RawMessage writes unchanged: no space between tokens, and no
// character its HTML escaping replaces (<, >, &, U+2028, U+2029). An
// upstream's structured content nearly always is, and json.Marshal's
// compacting copy of it cost a scan and an allocation a call (#25).
func compactAsIs(raw []byte) bool {
	inString, escaped := false, false
	for i, c := range raw {
		switch {
		case c == '<' || c == '>' || c == '&':
			return false
		case c == 0xE2 && i+2 < len(raw) && raw[i+1] == 0x80 && raw[i+2]&^1 == 0xA8:
			return false
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			return false
		}
	}
	return json.Valid(raw)
}

// encodeResultMeta is json.Marshal(meta), written directly when meta is
// exactly what serveFastCall sets on a 2026-07-28 answer: the server's
// identity alone, a name and a version. json.Marshal of it (mcp-go's
// Meta.MarshalJSON copies it into a map and encodes that by reflection)
// was about 4% of the gateway's CPU a call over stdio (#25).
//
// "A name and a version" is judged by reflection, not field by field, so
// that a field a later mcp-go adds to Implementation takes json.Marshal's
// path instead of being dropped.
func encodeResultMeta(meta *mcp.Meta) ([]byte, error) {
	info, ok := meta.AdditionalFields[mcp.MetaKeyServerInfo].(mcp.Implementation)
	if !ok || meta.ProgressToken != nil || len(meta.AdditionalFields) != 1 || !nameAndVersionOnly(info) {
		return json.Marshal(meta)
	}
	buf := make([]byte, 0, 64+len(mcp.MetaKeyServerInfo)+len(info.Name)+len(info.Version))
	buf = append(buf, '{')
	buf = jsonscan.AppendString(buf, mcp.MetaKeyServerInfo)
	buf = append(buf, `:{"name":`...)
	buf = jsonscan.AppendString(buf, info.Name)
	buf = append(buf, `,"version":`...)
	buf = jsonscan.AppendString(buf, info.Version)
	return append(buf, "}}"...), nil
}

// nameAndVersionOnly reports whether info has no field set but its name
// and version.
func nameAndVersionOnly(info mcp.Implementation) bool {
	info.Name, info.Version = "", ""
	return reflect.ValueOf(info).IsZero()
}
