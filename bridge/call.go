package bridge

// The tools/call pipeline, in the order a call takes it; this file reads
// top to bottom along one call:
//
//  0. over stdio, a tools/call reaches step 1 through the fast path in
//     front of mcp-go's dispatcher (fastpath.go: why it exists, and when
//     it hands the call to mcp-go instead), which runs the same hooks,
//     filters and middlewares in the same order;
//  1. the handler: directHandler for a tool listed by its own name,
//     handleCall for tool_call (and routeDeferred, which turns a direct
//     call of a deferred tool into a tool_call first);
//  2. the arguments: argsObject, stringArg, callArguments, rawArguments,
//     and fixArgs for the arguments the config fixes; the name: resolve;
//  3. validation against the tool's input schema, for calls through
//     tool_call (validators.validateArgs, in validate.go: the compiled
//     schema cache);
//  4. dispatch: a server that is down gets a tool error at once;
//  5. observedCall: the TOOL and CLIENT spans and the hooks around it,
//     then policy.destructive (checkDestructive, destructiveWhy);
//  6. forward: the request upstream, with the client's _meta
//     (upstreamMeta) and its progress token relayed;
//  7. decodeResult; and failureResult, which turns every failure the
//     model can act on into an isError result naming the server.
//
// Outside this file, by design: the SERVER span around all of it
// (traceToolCalls, observe.go), the metrics and status-page records made
// when dispatch returns (countCall in metrics.go, recordCall in
// uiview.go), and the tool's hints (hintsOf, screen.go), shared with
// search and the trust review.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolbridge/toolbridge/bridge/access"
	"github.com/toolbridge/toolbridge/bridge/jsonscan"
	"github.com/toolbridge/toolbridge/bridge/policy"
	"github.com/toolbridge/toolbridge/bridge/upstream"
	"github.com/toolbridge/toolbridge/config"
	"github.com/toolbridge/toolbridge/config/toolid"
	"github.com/toolbridge/toolbridge/trace"
)

// call is one tool call on its way to the upstream.
type call struct {
	tool *Tool
	args json.RawMessage
	meta *mcp.Meta
	via  string
}

func (g *Gateway) directHandler(t *Tool) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args, refused := fixArgs(t, rawArguments(req))
		if refused != "" {
			return toolError("%s", refused), nil
		}
		return g.dispatch(ctx, call{tool: t, args: args, meta: req.Params.Meta, via: trace.ViaDirect})
	}
}

// routeDeferred lets a client call a deferred tool by its own name (one
// that cached an older, pass-through tool list): the call is rewritten to
// tool_call before mcp-go looks the name up. mcp-go runs this hook with a
// pointer to the request before dispatch; TestDirectCallOfDeferredTool
// pins that behaviour. A direct call by an alias form ("mcp__h__echo")
// that is not an exposed name is sent to the tool resolve finds for it
// (TestAliasFormsCannotBeCaptured).
func (g *Gateway) routeDeferred(ctx context.Context, id any, req *mcp.CallToolRequest) {
	cat := g.catalogFor(ctx)
	if metaNames[req.Params.Name] {
		return
	}
	t, ok := cat.ByExposed(req.Params.Name)
	if !ok {
		// An alias form ("mcp__h__echo") goes to the server it names, as
		// resolve's rule 3 says, never to a tool of another server that
		// happens to be called that (the catalog exposes such a tool
		// under its qualified name).
		if _, alias := cat.shadowedAlias(req.Params.Name); !alias {
			return
		}
		if t, _ = g.resolve(cat, req.Params.Name); t == nil {
			return
		}
		if !t.Deferred || !cat.Decision.Bridge {
			req.Params.Name = t.Exposed
			return
		}
	}
	if !cat.Decision.Bridge || !t.Deferred {
		return
	}
	wrapped, err := json.Marshal(map[string]any{"tool_name": t.ID, "tool_args": json.RawMessage(orEmptyObject(rawArguments(*req)))})
	if err != nil {
		return
	}
	// The marker carries the name the client used, for the span's name.
	req.Params.Meta = withMetaField(req.Params.Meta, metaViaKey, req.Params.Name)
	req.Params.Name = toolid.MetaCall
	req.Params.RawArguments = wrapped
	req.Params.Arguments = map[string]any{"tool_name": t.ID}
}

func (g *Gateway) handleCall(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	args, err := argsObject(req)
	if err != nil {
		return toolError("tool_call: %v. Example: {\"tool_name\": \"github::create_issue\", \"tool_args\": {\"title\": \"...\"}}", err), nil
	}
	via := trace.ViaToolCall
	if req.Params.Meta != nil && req.Params.Meta.AdditionalFields[metaViaKey] != nil {
		via = trace.ViaDirect
	}
	name, ok, err := stringArg(args, "tool_name")
	if err != nil {
		return toolError("tool_call: %v", err), nil
	}
	argsKey := "tool_args"
	if !ok {
		// Models trained on other bridges send name/arguments.
		if name, ok, err = stringArg(args, "name"); err != nil || !ok {
			return toolError("tool_call needs tool_name, e.g. {\"tool_name\": \"github::create_issue\", \"tool_args\": {...}}. Find ids with tool_search."), nil
		}
		argsKey = "arguments"
	}
	cat := g.catalogFor(ctx)
	if metaNames[toolid.Clean(name)] {
		return toolError("%s is a toolbridge meta-tool: call it directly, not through tool_call. Usage: tool_search {\"query\": \"...\"}; tool_describe {\"tool_name\": \"<id>\"}; tool_call {\"tool_name\": \"<id>\", \"tool_args\": {...}}.", toolid.Clean(name)), nil
	}
	t, why := g.resolve(cat, name)
	if t == nil {
		return toolError("%s", why), nil
	}
	toolArgs, err := callArguments(args, argsKey)
	if err != nil {
		return toolError("tool_call %s: %v", t.ID, err), nil
	}
	// A fixed argument sent by the model is refused before validation,
	// which would only call it unexpected; the fixed values are injected
	// after it, as the model's schema does not have them.
	if _, refused := fixArgs(t, toolArgs); refused != "" {
		return toolError("%s", refused), nil
	}
	toolArgs, problems := g.validators.validateArgs(t.Tool.RawInputSchema, toolArgs)
	if len(problems) > 0 {
		return toolError("Invalid arguments for %s:\n- %s\n\nIts input schema:\n%s\n\nFix the arguments and call again.",
			t.ID, strings.Join(problems, "\n- "), t.Tool.RawInputSchema), nil
	}
	toolArgs, _ = fixArgs(t, toolArgs)
	return g.dispatch(ctx, call{tool: t, args: toolArgs, meta: req.Params.Meta, via: via})
}

// argsObject decodes a meta-tool's arguments into their members.
func argsObject(req mcp.CallToolRequest) (map[string]json.RawMessage, error) {
	raw := rawArguments(req)
	out := map[string]json.RawMessage{}
	if len(raw) == 0 || string(raw) == "null" {
		return out, nil
	}
	if splitObject(raw, out) {
		return out, nil
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("arguments must be a JSON object: %w", err)
	}
	return out, nil
}

// splitObject puts the members of raw, a JSON object, into out, each
// value as a slice of raw, and reports whether it could. It is
// argsObject's fast path: json.Unmarshal into a map copies every value and
// runs the scanner over each once more, for a document that is then split
// again by callArguments. It declines (and json.Unmarshal decides, with
// its error) when raw is not valid JSON, not an object, or has a key that
// needs unescaping or is not ASCII, where encoding/json's rules for
// invalid UTF-8 apply. Values are left as raw holds them, as
// json.RawMessage's decoder leaves them.
func splitObject(raw []byte, out map[string]json.RawMessage) bool {
	if !json.Valid(raw) {
		return false
	}
	i := jsonscan.SkipSpace(raw, 0)
	if raw[i] != '{' {
		return false
	}
	i = jsonscan.SkipSpace(raw, i+1)
	if raw[i] == '}' {
		return true
	}
	for {
		// raw is valid JSON: a key string, a colon, a value, then a comma
		// or the closing brace.
		end := i + 1
		for raw[end] != '"' {
			if raw[end] == '\\' || raw[end] >= 0x80 {
				clear(out)
				return false
			}
			end++
		}
		key := memberName(raw[i+1 : end])
		i = jsonscan.SkipSpace(raw, end+1) + 1 // the colon
		i = jsonscan.SkipSpace(raw, i)
		vend := jsonscan.SkipValue(raw, i)
		out[key] = raw[i:vend:vend]
		i = jsonscan.SkipSpace(raw, vend)
		if raw[i] == '}' {
			return true
		}
		i = jsonscan.SkipSpace(raw, i+1) // after the comma
	}
}

// memberName is key as a string, without allocating one for the members
// the meta-tools read.
func memberName(key []byte) string {
	switch string(key) {
	case "tool_name":
		return "tool_name"
	case "tool_args":
		return "tool_args"
	case "name":
		return "name"
	case "arguments":
		return "arguments"
	case "query":
		return "query"
	case "limit":
		return "limit"
	}
	return string(key)
}

// stringArg decodes a string member; absent gives "", present but not a
// string is an error.
func stringArg(args map[string]json.RawMessage, key string) (string, bool, error) {
	raw, ok := args[key]
	if !ok || string(raw) == "null" {
		return "", false, nil
	}
	if s, ok := plainString(raw); ok {
		return s, true, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", true, fmt.Errorf("%s must be a string, got %s", key, clip(string(raw), 80))
	}
	return s, true, nil
}

// plainString decodes raw, a JSON value from a valid document, when it is
// a string of printable ASCII without escapes (a tool id always is),
// without json.Unmarshal's reflection.
func plainString(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	for _, c := range raw[1 : len(raw)-1] {
		if c < 0x20 || c >= 0x80 || c == '\\' || c == '"' {
			return "", false
		}
	}
	return string(raw[1 : len(raw)-1]), true
}

// callArguments finds the real tool's arguments: the object under key; a
// JSON string holding an object (a common slip); or, when key is absent,
// the other members of the call (arguments given flat). Both an object
// under key and flat members is ambiguous and refused.
func callArguments(args map[string]json.RawMessage, key string) (json.RawMessage, error) {
	var flat map[string]json.RawMessage // made for the first flat member: most calls have none
	for k, v := range args {
		if k != key && k != "tool_name" && k != "name" {
			if flat == nil {
				flat = map[string]json.RawMessage{}
			}
			flat[k] = v
		}
	}
	raw, ok := args[key]
	if !ok || string(raw) == "null" {
		if len(flat) == 0 {
			return json.RawMessage(`{}`), nil
		}
		b, err := json.Marshal(flat)
		return b, err
	}
	if len(flat) > 0 {
		keys := make([]string, 0, len(flat))
		for k := range flat {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return nil, fmt.Errorf("got %s and also %s next to it; put every argument inside %s", key, strings.Join(keys, ", "), key)
	}
	switch bytes.TrimSpace(raw)[0] {
	case '{':
		return raw, nil
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err == nil {
			inner := json.RawMessage(strings.TrimSpace(s))
			if len(inner) > 0 && inner[0] == '{' && json.Valid(inner) {
				return inner, nil
			}
		}
	}
	return nil, fmt.Errorf("%s must be a JSON object of the tool's arguments, got %s", key, clip(string(raw), 80))
}

func orEmptyObject(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || string(raw) == "null" {
		return json.RawMessage(`{}`)
	}
	return raw
}

// rawArguments returns the arguments exactly as the client sent them.
func rawArguments(req mcp.CallToolRequest) json.RawMessage {
	if len(req.Params.RawArguments) > 0 {
		return req.Params.RawArguments
	}
	if req.Params.Arguments == nil {
		return nil
	}
	b, err := json.Marshal(req.Params.Arguments)
	if err != nil {
		return nil
	}
	return b
}

// fixArgs refuses a call that sends an argument the config fixes, and
// injects the fixed ones into args (a JSON object, or empty). It returns
// the arguments to send upstream, or a message for the model.
func fixArgs(t *Tool, args json.RawMessage) (json.RawMessage, string) {
	if t.override == nil || len(t.override.fixed) == 0 {
		return args, ""
	}
	m := map[string]json.RawMessage{}
	if len(bytes.TrimSpace(args)) > 0 && !bytes.Equal(bytes.TrimSpace(args), []byte("null")) {
		if err := json.Unmarshal(args, &m); err != nil {
			return nil, fmt.Sprintf("the arguments of %s must be a JSON object", t.Exposed)
		}
	}
	var sent []string
	for k := range m {
		if _, fixed := t.override.fixed[k]; fixed {
			sent = append(sent, k)
		}
	}
	if len(sent) > 0 {
		sort.Strings(sent)
		what, pronoun := "argument "+sent[0]+" is", "it"
		if len(sent) > 1 {
			what, pronoun = "arguments "+strings.Join(sent, ", ")+" are", "them"
		}
		return nil, fmt.Sprintf("%s was not run: the %s fixed by the gateway's configuration and may not be sent; call it again without %s",
			t.Exposed, what, pronoun)
	}
	maps.Copy(m, t.override.fixed)
	out, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Sprintf("encoding the arguments of %s: %v", t.Exposed, err)
	}
	return out, ""
}

// resolve finds the tool a model meant by name. It is the one place a
// name becomes a tool, for tool_call, tool_describe and direct calls of
// alias forms (routeDeferred). The rules, in order; the first that
// matches decides, and no upstream can make an earlier rule miss:
//
//  1. the canonical id "server::tool", exactly as written (after Clean
//     strips quotes, backticks and "()");
//  2. the exposed name, the one the client sees in tools/list. The
//     catalog never exposes a name that rule 3 would give another server
//     (see buildCatalog), so a client's own list cannot be hijacked;
//  3. an alias form, "mcp__server__tool" or "server__tool" (any case), whose
//     server part names a known server (configured or connected): that
//     server's tool, and nothing else. A tool of another server that is
//     literally named "mcp__h__echo" is never reached this way; it is
//     flagged shadows-alias and answers to its own id and exposed name;
//  4. the index's lenient forms: the canonical id in any case, a bare tool
//     name that only one server has, any case.
//
// Renames (#27) slot in between rules 3 and 4: a configured name must beat
// the lenient forms, but never an id or an alias form of another server.
//
// Without a match it returns why: a removed tool's reason, a server that is
// down, an ambiguous bare name, or did-you-mean ids.
func (g *Gateway) resolve(cat *Catalog, name string) (*Tool, string) {
	clean := toolid.Clean(name)
	if t, ok := cat.ByID(clean); ok {
		return t, ""
	}
	if t, ok := cat.ByExposed(clean); ok {
		return t, ""
	}
	if len(clean) > maxNameBytes {
		// No tool has such a name; ranking it against every name would
		// only cost time.
		return nil, fmt.Sprintf("Unknown tool %q (%d bytes; tool ids are at most %d). Find tools with tool_search {\"query\": \"<what you want to do>\"}.", clip(name, maxEcho), len(name), maxNameBytes)
	}
	if a, ok := cat.shadowedAlias(clean); ok {
		return g.resolveAlias(cat, name, a)
	}
	id, candidates := g.index.Resolve(clean)
	if t, ok := cat.ByID(id); ok && id != "" {
		return t, ""
	}
	if r, ok := cat.findRemoved(clean); ok {
		return g.recheck(r)
	}
	if cat.full != nil {
		// A caller's view: the index knows every tool, the caller may
		// not; neither the guesses nor a down server's name may tell
		// them of one they cannot see.
		candidates = slices.DeleteFunc(candidates, func(id string) bool { _, ok := cat.ByID(id); return !ok })
	}
	if server, _, ok := toolid.Split(clean); !ok || cat.full == nil || cat.grant.AllowsServer(server) {
		if why := g.unreachableServer(clean); why != "" {
			return nil, why
		}
	}
	if ambiguous(clean, candidates) {
		return nil, fmt.Sprintf("Tool name %q is ambiguous: %d servers have a tool of that name: %s. Call it by its full id, e.g. %s.", clip(name, maxEcho), len(candidates), strings.Join(candidates, ", "), candidates[0])
	}
	if len(candidates) > 0 {
		return nil, fmt.Sprintf("Unknown tool %q. Did you mean: %s? Or search with tool_search.", clip(name, maxEcho), strings.Join(candidates, ", "))
	}
	return nil, fmt.Sprintf("Unknown tool %q. Find tools with tool_search {\"query\": \"<what you want to do>\"}.", clip(name, maxEcho))
}

// resolveAlias is rule 3 of resolve: name is an alias form, first read as
// a's server and tool; every reading whose server is known is tried, and
// only those servers' tools can answer.
func (g *Gateway) resolveAlias(cat *Catalog, name string, first toolid.Alias) (*Tool, string) {
	clean := toolid.Clean(name)
	for _, a := range toolid.SplitAlias(clean) {
		server, ok := cat.knownServer(a.Server)
		if !ok {
			continue
		}
		id := toolid.Join(server, a.Tool)
		if t, ok := cat.ByID(id); ok {
			return t, ""
		}
		if t := cat.byIDFold(id); t != nil {
			return t, ""
		}
		if r, ok := cat.findRemoved(id); ok {
			return g.recheck(r)
		}
	}
	// A named server's own tool of that very name, in another case
	// ("H__SEARCH" for h's tool h__search when h has no search).
	for _, a := range toolid.SplitAlias(clean) {
		if server, ok := cat.knownServer(a.Server); ok {
			for _, t := range cat.Tools {
				if t.Server == server && strings.EqualFold(t.Name, clean) {
					return t, ""
				}
			}
		}
	}
	id := toolid.Join(first.Server, first.Tool)
	if why := g.unreachableServer(id); why != "" {
		return nil, why
	}
	var tools []string
	for _, t := range cat.Tools {
		if t.Server == first.Server {
			tools = append(tools, t.ID)
		}
	}
	msg := fmt.Sprintf("Unknown tool %q: it names server %q, which has no tool %q.", clip(name, maxEcho), first.Server, clip(first.Tool, maxEcho))
	if len(tools) > 0 && len(tools) <= 20 {
		msg += " Its tools: " + strings.Join(tools, ", ") + "."
	} else if len(tools) > 20 {
		msg += fmt.Sprintf(" Find its %d tools with tool_search.", len(tools))
	}
	return nil, msg
}

// byIDFold finds the tool whose id equals id in any case, when only one
// does.
func (c *Catalog) byIDFold(id string) *Tool {
	var found *Tool
	for _, t := range c.Tools {
		if strings.EqualFold(t.ID, id) {
			if found != nil {
				return nil
			}
			found = t
		}
	}
	return found
}

// maxNameBytes is the longest tool id a name can resolve to: a server name
// (64 at most), the separator and a tool name (128 at most, as MCP
// recommends).
const maxNameBytes = 64 + len(toolid.Separator) + 128

// ambiguous reports whether candidates are the several tools a bare name
// names exactly (as opposed to did-you-mean guesses for a name that
// matched nothing).
func ambiguous(name string, candidates []string) bool {
	if len(candidates) < 2 {
		return false
	}
	for _, id := range candidates {
		_, tool, ok := toolid.Split(id)
		if !ok || !strings.EqualFold(tool, name) {
			return false
		}
	}
	return true
}

// dispatch forwards one call to the upstream that owns the tool, under the
// tool's original name, and returns the upstream's result unchanged. Every
// failure the model can act on comes back as an isError result naming the
// server, never as a protocol error that would end the model's turn.
func (g *Gateway) dispatch(ctx context.Context, c call) (res *mcp.CallToolResult, err error) {
	start := time.Now()
	defer func() { g.recordCall(ctx, c, start, res, err) }() // for the status page
	defer func() { g.countCall(c, start, res, err) }()
	u, ok := g.pool.Get(c.tool.Server)
	if why, next := g.pool.Down(c.tool.Server); !ok || why != "" {
		if g.pool.NeedsLogin(c.tool.Server) {
			return needsLoginResult(c), nil
		}
		retry := ""
		if wait := time.Until(next); !next.IsZero() && wait > 0 {
			retry = fmt.Sprintf(" toolbridge is reconnecting it; next attempt in %s.", wait.Round(100*time.Millisecond))
		}
		return toolError("Server %q is down (%s), so %s cannot run now.%s Other servers' tools still work.", c.tool.Server, why, c.tool.ID, retry), nil
	}
	return g.observedCall(ctx, c, u)
}

// observedCall runs one tool call with its TOOL and CLIENT spans and the
// configured hooks around it: all of them see the real server and tool,
// whether the client called it directly or through tool_call.
func (g *Gateway) observedCall(ctx context.Context, c call, u *upstream.Conn) (*mcp.CallToolResult, error) {
	start := time.Now()
	subject := access.FromContext(ctx).String()
	renamed := c.tool.renamedAs()
	ctx, toolSpan := g.tel.StartTool(ctx, trace.ToolCall{
		Server: c.tool.Server, Tool: c.tool.Name, Class: c.tool.Verdict.Class, Via: c.via, Exposed: renamed,
		Arguments: recordable(g.tel, c.tool.maskFixed(c.args)), EndUser: subject,
	})
	// One call, one set of hooks: a reload closes the old ones only after
	// the calls that started with them are done.
	live := g.settings()
	live.calls.Begin()
	defer live.calls.End()
	hooks := live.hooks
	hc := policy.Call{
		Server: c.tool.Server, Tool: c.tool.Name, Class: c.tool.Verdict.Class, Via: c.via, Exposed: renamed,
		Arguments: c.args, SessionID: sessionID(ctx), Subject: subject,
	}
	if hooks.Len() > 0 {
		// Encoded for the hooks only: without any, nobody reads them, and
		// encoding them was about 3% of a tool_call's CPU (#25).
		hc.Annotations = annotationsOf(*c.tool.Tool)
	}
	d, _ := hooks.BeforeCall(ctx, hc)
	if !d.Deny {
		// The policy asks last: the user is not asked about a call a hook
		// refuses anyway.
		if reason := g.checkDestructive(ctx, c, live.cfg); reason != "" {
			d = policy.Decision{Deny: true, Reason: reason, Hook: "policy.destructive"}
		}
	}
	if d.Deny {
		reason := d.Reason
		if reason == "" {
			reason = "a hook denied it"
		}
		res := toolError("%s was not run: %s", c.tool.ID, reason)
		hooks.AfterCall(ctx, hc, policy.Result{Value: res, IsError: true, Denied: true, Reason: reason, Duration: time.Since(start)})
		toolSpan.SetDenied(d.Hook, d.Reason)
		toolSpan.EndResult(true)
		return res, nil
	}
	host, port := u.Address()
	url := ""
	if host != "" {
		url = fmt.Sprintf("http://%s:%d", host, port)
	}
	cctx, clientSpan := g.tel.StartClient(ctx, trace.Upstream{Transport: u.Spec().Transport(), URL: url})
	res, err := g.forward(cctx, c, u, g.upstreamMeta(cctx, c.meta))
	err = upstream.ScrubError(err, u.Spec().Config)
	result := policy.Result{Value: res, Err: err, Duration: time.Since(start)}
	if err != nil {
		code := mcp.INTERNAL_ERROR
		var rpcErr *upstream.RPCError
		if errors.As(err, &rpcErr) {
			code = rpcErr.Code
		}
		result.Code = code
		clientSpan.EndError(code, err)
		toolSpan.EndError(code, err)
		hooks.AfterCall(ctx, hc, result)
		res, err := g.failureResult(ctx, c, err)
		if res != nil {
			// The upstream's own error message may quote a secret too.
			for i, content := range res.Content {
				if text, ok := content.(mcp.TextContent); ok {
					text.Text = u.Spec().Config.ScrubResult(text.Text)
					res.Content[i] = text
				}
			}
		}
		return res, err
	}
	result.IsError = res.IsError
	if g.tel.RecordContent() {
		toolSpan.SetResult(res)
	}
	clientSpan.EndResult(res.IsError)
	toolSpan.EndResult(res.IsError)
	hooks.AfterCall(ctx, hc, result)
	return res, nil
}

// checkDestructive applies policy.destructive to a call: "" lets it run,
// anything else is the reason it may not. confirm asks the user through
// MCP elicitation, and refuses when the client cannot ask.
func (g *Gateway) checkDestructive(ctx context.Context, c call, cfg *config.Config) string {
	policy := cfg.Policy.Destructive
	if policy == "" || policy == config.DestructiveAllow {
		return ""
	}
	why := destructiveWhy(*c.tool.Tool)
	if why == "" {
		return ""
	}
	if policy == config.DestructiveDeny {
		return fmt.Sprintf("policy.destructive is deny and %s may be destructive (%s)", c.tool.ID, why)
	}
	if !canElicit(ctx) {
		return fmt.Sprintf("policy.destructive is confirm, but this client cannot ask the user (it does not support MCP elicitation), and %s may be destructive (%s). "+
			"Use a client that supports elicitation, or set policy.destructive: allow", c.tool.ID, why)
	}
	res, err := g.srv.RequestElicitation(ctx, mcp.ElicitationRequest{
		Request: mcp.Request{Method: string(mcp.MethodElicitationCreate)},
		Params: mcp.ElicitationParams{
			Message: fmt.Sprintf("Run %s? It may make destructive changes: %s.", c.tool.ID, why),
			RequestedSchema: map[string]any{
				"type": "object",
				"properties": map[string]any{
					"confirm": map[string]any{"type": "boolean", "title": "Run " + c.tool.ID, "description": "Allow this one call."},
				},
				"required": []string{"confirm"},
			},
		},
	})
	switch {
	case err != nil:
		return fmt.Sprintf("policy.destructive is confirm and asking the user failed: %v", err)
	case res.Action != mcp.ElicitationResponseActionAccept:
		return fmt.Sprintf("the user did not confirm the call (%s)", res.Action)
	}
	if m, ok := res.Content.(map[string]any); !ok || m["confirm"] != true {
		return "the user did not confirm the call"
	}
	return ""
}

// destructiveWhy says why a tool counts as destructive under the MCP
// defaults, or "" when it does not.
func destructiveWhy(t mcp.Tool) string {
	a := hintsOf(t)
	switch {
	case !a.Destructive():
		return ""
	case a.DestructiveHint != nil:
		return "it is marked destructiveHint"
	case a.Annotated():
		return "it is not marked readOnlyHint and not marked destructiveHint false, which MCP counts as destructive"
	}
	return "it has no annotations, which MCP counts as destructive"
}

// canElicit reports whether the calling client declared elicitation.
func canElicit(ctx context.Context) bool {
	s, ok := server.ClientSessionFromContext(ctx).(server.SessionWithClientInfo)
	if !ok {
		return false
	}
	if _, ok := s.(server.SessionWithElicitation); !ok {
		return false
	}
	return s.GetClientCapabilities().Elicitation != nil
}

// annotationsOf is t's annotations as hooks and the audit log get them:
// nil when the tool has none.
func annotationsOf(t mcp.Tool) json.RawMessage {
	if t.Annotations == (mcp.ToolAnnotation{}) {
		return nil
	}
	b, err := json.Marshal(t.Annotations)
	if err != nil {
		return nil
	}
	return b
}

// maskFixed is args with the values of the fixed arguments masked, for
// spans: a fixed argument comes from the config and may be a secret
// (api_key: ${KEY}); the model never sent it, so a trace needs only its
// name.
func (t *Tool) maskFixed(args json.RawMessage) json.RawMessage {
	if t.override == nil || len(t.override.fixed) == 0 || len(args) == 0 {
		return args
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(args, &m) != nil {
		return args
	}
	for k := range t.override.fixed {
		if _, ok := m[k]; ok {
			m[k] = json.RawMessage(`"` + config.Mask + `"`)
		}
	}
	out, err := json.Marshal(m)
	if err != nil {
		return args
	}
	return out
}

// upstreamMeta is the _meta sent with a call upstream: the client's own
// fields, plus the trace context of ctx (so one trace spans client ->
// gateway -> upstream). Left out: the gateway's private keys, and the
// protocol's own io.modelcontextprotocol/* keys (protocol version, client
// capabilities and info), which describe the client's hop to the gateway,
// not the gateway's session with the upstream; an upstream that checks
// them against its session rejects the call.
func (g *Gateway) upstreamMeta(ctx context.Context, m *mcp.Meta) map[string]any {
	// nil until there is something to send: most calls carry no _meta of
	// their own, and no map is made for them.
	var meta map[string]any
	if m != nil {
		for k, v := range m.AdditionalFields {
			if k == metaRPCIDKey || k == metaViaKey || strings.HasPrefix(k, protocolMetaPrefix) {
				continue
			}
			if meta == nil {
				meta = make(map[string]any, len(m.AdditionalFields))
			}
			meta[k] = v
		}
	}
	return trace.Inject(ctx, meta)
}

// protocolMetaPrefix marks _meta keys the MCP protocol reserves for itself.
const protocolMetaPrefix = "io.modelcontextprotocol/"

// recordable returns the arguments for a span only when content recording
// is on; otherwise nothing is kept.
func recordable(tel *trace.Telemetry, args json.RawMessage) any {
	if !tel.RecordContent() || args == nil {
		return nil
	}
	return args
}

// callFailure is an upstream call that produced no result.
type callFailure struct {
	err      error
	timedOut bool          // the gateway's call timeout ran out
	timeout  time.Duration // that timeout
}

func (f *callFailure) Error() string { return f.err.Error() }

func (f *callFailure) Unwrap() error { return f.err }

// forward sends the call upstream with meta as its _meta and decodes the
// result. A *callFailure says why there is none.
func (g *Gateway) forward(ctx context.Context, c call, u *upstream.Conn, meta map[string]any) (*mcp.CallToolResult, error) {
	timeout := g.settings().cfg.EffectiveCallTimeout(u.Spec().Config)
	callCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	var clientToken mcp.ProgressToken
	if c.meta != nil {
		clientToken = c.meta.ProgressToken
	}
	// callCtx, for its deadline: a request the upstream sends the client
	// during the call may be answered until then (see upstream.Relay).
	active := g.relay.Begin(callCtx, u, clientToken)
	defer active.End()
	if upToken := active.UpstreamToken(); upToken != "" {
		if meta == nil {
			meta = map[string]any{}
		}
		meta["progressToken"] = upToken
	}
	params, err := callParams(c.tool.Name, c.args, meta)
	if err != nil {
		return nil, &callFailure{err: fmt.Errorf("encoding the call: %w", err)}
	}
	raw, err := u.Request(callCtx, string(mcp.MethodToolsCall), params)
	if err != nil {
		// The timeout is judged by callCtx: an upstream may give up on the
		// deadline itself and answer with an error of its own.
		return nil, &callFailure{err: err, timedOut: ctx.Err() == nil && callCtx.Err() != nil, timeout: timeout}
	}
	res, err := decodeResult(raw)
	if err != nil {
		return nil, &callFailure{err: fmt.Errorf("decoding the result: %w", err)}
	}
	return res, nil
}

// callParams encodes the params of a tools/call request: the arguments
// go upstream as the raw bytes they arrived in (validated, with the fixed
// arguments in), never decoded into a map and encoded again. The
// transport's encoder compacts them, as it did the map this replaces.
func callParams(name string, args json.RawMessage, meta map[string]any) (json.RawMessage, error) {
	buf := make([]byte, 0, len(name)+len(args)+64)
	buf = append(buf, `{"name":`...)
	buf = jsonscan.AppendString(buf, name)
	if len(args) > 0 {
		buf = append(buf, `,"arguments":`...)
		buf = append(buf, args...)
	}
	if len(meta) > 0 {
		m, err := json.Marshal(meta)
		if err != nil {
			return nil, err
		}
		buf = append(buf, `,"_meta":`...)
		buf = append(buf, m...)
	}
	return append(buf, '}'), nil
}

// textResult is the common shape of a tools/call result: text blocks and
// maybe structured content. Every other member mcp.CallToolResult decodes
// is caught too, so that its presence sends the result down the general
// path.
type textResult struct {
	Content []struct {
		Type        string          `json:"type"`
		Text        string          `json:"text"`
		Annotations json.RawMessage `json:"annotations"`
		Meta        json.RawMessage `json:"_meta"`
	} `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	IsError           bool            `json:"isError"`
	Meta              json.RawMessage `json:"_meta"`
	ResultType        json.RawMessage `json:"resultType"`
	InputRequests     json.RawMessage `json:"inputRequests"`
	RequestState      json.RawMessage `json:"requestState"`
}

// decodeResult decodes an upstream's tools/call result into what
// json.Unmarshal into an mcp.CallToolResult gives. mcp-go's decoder reads
// the result three times over (the envelope, each block's type, each
// block); a result of plain text blocks, the common case, is read once
// here instead. Anything else takes mcp-go's path.
func decodeResult(raw json.RawMessage) (*mcp.CallToolResult, error) {
	if res, ok := decodePlainText(raw); ok {
		return res, nil
	}
	var t textResult
	if json.Unmarshal(raw, &t) == nil && t.Meta == nil && t.ResultType == nil && t.InputRequests == nil && t.RequestState == nil {
		res := &mcp.CallToolResult{IsError: t.IsError}
		plain := true
		if len(t.Content) > 0 {
			res.Content = make([]mcp.Content, len(t.Content))
			for i, c := range t.Content {
				if c.Type != mcp.ContentTypeText || c.Annotations != nil || c.Meta != nil {
					plain = false
					break
				}
				res.Content[i] = mcp.TextContent{Type: c.Type, Text: c.Text}
			}
		}
		if plain {
			if len(t.StructuredContent) > 0 {
				res.RawStructuredContent = t.StructuredContent
				if err := json.Unmarshal(t.StructuredContent, &res.StructuredContent); err != nil {
					return nil, err
				}
			}
			return res, nil
		}
	}
	var res mcp.CallToolResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// decodePlainText is decodeResult's fastest path, for the result nearly
// every tool returns: an object of exactly "content" (text blocks of
// exactly "type": "text" and "text"), "isError" and "structuredContent",
// each at most once, keys as written here. It walks raw once after one
// validity check, where json.Unmarshal into textResult scans it twice and
// allocates per member. It declines (ok false) anything else, and
// decodeResult's other paths decide; FuzzDecodeResult holds all of them
// to mcp-go's own decoding.
func decodePlainText(raw []byte) (res *mcp.CallToolResult, ok bool) {
	if !json.Valid(raw) {
		return nil, false
	}
	i := jsonscan.SkipSpace(raw, 0)
	if raw[i] != '{' {
		return nil, false
	}
	res = &mcp.CallToolResult{}
	var seenContent, seenError, seenStructured bool
	i = jsonscan.SkipSpace(raw, i+1)
	if raw[i] == '}' {
		return res, true
	}
	for {
		key, next, ok := jsonscan.PlainKey(raw, i)
		if !ok {
			return nil, false
		}
		i = jsonscan.SkipSpace(raw, next)
		end := jsonscan.SkipValue(raw, i)
		value := raw[i:end]
		switch {
		case string(key) == "content" && !seenContent:
			seenContent = true
			if res.Content, ok = plainTextBlocks(value); !ok {
				return nil, false
			}
		case string(key) == "isError" && !seenError:
			seenError = true
			switch string(value) {
			case "true":
				res.IsError = true
			case "false":
			default:
				return nil, false
			}
		case string(key) == "structuredContent" && !seenStructured && string(value) != "null":
			seenStructured = true
			res.RawStructuredContent = append(json.RawMessage(nil), value...)
			if err := json.Unmarshal(value, &res.StructuredContent); err != nil {
				return nil, false
			}
		default:
			return nil, false
		}
		i = jsonscan.SkipSpace(raw, end)
		if raw[i] == '}' {
			return res, true
		}
		i = jsonscan.SkipSpace(raw, i+1)
	}
}

// plainTextBlocks decodes a content array of text blocks that have
// exactly the members type ("text") and text; ok is false for anything
// else. An empty array is nil, as mcp-go decodes it.
func plainTextBlocks(value []byte) (blocks []mcp.Content, ok bool) {
	if value[0] != '[' {
		return nil, false
	}
	i := jsonscan.SkipSpace(value, 1)
	if value[i] == ']' {
		return nil, true
	}
	for {
		if value[i] != '{' {
			return nil, false
		}
		var text string
		var seenType, seenText bool
		i = jsonscan.SkipSpace(value, i+1)
		for value[i] != '}' {
			key, next, ok := jsonscan.PlainKey(value, i)
			if !ok {
				return nil, false
			}
			i = jsonscan.SkipSpace(value, next)
			end := jsonscan.SkipValue(value, i)
			switch {
			case string(key) == "type" && !seenType && string(value[i:end]) == `"text"`:
				seenType = true
			case string(key) == "text" && !seenText && value[i] == '"':
				seenText = true
				if text, ok = jsonscan.String(value[i:end]); !ok {
					return nil, false
				}
			default:
				return nil, false
			}
			i = jsonscan.SkipSpace(value, end)
			if value[i] == ',' {
				i = jsonscan.SkipSpace(value, i+1)
			}
		}
		if !seenType || !seenText {
			return nil, false
		}
		blocks = append(blocks, mcp.TextContent{Type: mcp.ContentTypeText, Text: text})
		i = jsonscan.SkipSpace(value, i+1)
		if value[i] == ']' {
			return blocks, true
		}
		i = jsonscan.SkipSpace(value, i+1) // after the comma
	}
}

// failureResult turns a failed upstream call into what the client gets.
func (g *Gateway) failureResult(ctx context.Context, c call, err error) (*mcp.CallToolResult, error) {
	var f *callFailure
	if !errors.As(err, &f) {
		return nil, err
	}
	var rpcErr *upstream.RPCError
	var tooLarge *upstream.TooLargeError
	switch {
	case ctx.Err() != nil:
		// The client cancelled or went away: nobody reads a result.
		return nil, ctx.Err()
	case f.timedOut:
		return toolError("%s did not answer within %s (server %q call timeout). The server may be busy or hung; try again, or raise timeouts.call.", c.tool.ID, f.timeout, c.tool.Server), nil
	case errors.As(err, &tooLarge):
		return toolError("Server %q answered %s with more than max_result_bytes (%d bytes), so the result was dropped. Ask for less (a narrower query, a smaller page), or raise max_result_bytes.", c.tool.Server, c.tool.ID, tooLarge.Limit), nil
	case upstream.IsNeedsLogin(err):
		return needsLoginResult(c), nil
	case errors.As(err, &rpcErr):
		return toolError("Server %q rejected the call to %s: %s (JSON-RPC code %d).", c.tool.Server, c.tool.ID, rpcErr.Message, rpcErr.Code), nil
	default:
		return toolError("Server %q is unavailable, so %s failed: %v", c.tool.Server, c.tool.ID, err), nil
	}
}

// unreachableServer explains an id whose server is configured but whose
// tools are not known, because it needs a login or is down (it never
// listed them): that, not "unknown tool", is what the model and the user
// need to hear. It is "" when the id names no such server.
func (g *Gateway) unreachableServer(id string) string {
	server, tool, ok := toolid.Split(id)
	if !ok {
		return ""
	}
	if _, configured := g.settings().cfg.Servers[server]; !configured {
		return ""
	}
	if g.pool.NeedsLogin(server) {
		return needsLogin(server, id)
	}
	if why, _ := g.pool.Down(server); why != "" {
		return fmt.Sprintf("Server %q is down (%s), so its tools, %s among them if it has it, are not known yet. toolbridge keeps reconnecting it; other servers' tools still work.", server, why, clip(tool, maxEcho))
	}
	return ""
}

// needsLoginResult tells the model the server needs a person to log in.
func needsLoginResult(c call) *mcp.CallToolResult {
	return mcp.NewToolResultError(needsLogin(c.tool.Server, c.tool.ID))
}

// needsLogin says that server needs a person to log in before id can run.
func needsLogin(server, id string) string {
	return fmt.Sprintf("Server %q needs login, so %s cannot run now: ask the user to run `toolbridge auth login %s` in a terminal; the running gateway picks the token up without a restart. Other servers' tools still work.",
		server, clip(id, maxEcho), server)
}

// toolError is an isError result with one text block.
func toolError(format string, args ...any) *mcp.CallToolResult {
	return mcp.NewToolResultError(fmt.Sprintf(format, args...))
}

// clip cuts s to max runes, marking the cut. A byte that is not UTF-8
// counts as a rune, and in a cut string becomes U+FFFD, as converting s
// to []rune and back makes it; that conversion is left to strings that
// have such bytes, as it allocates the runes of all of s.
func clip(s string, max int) string {
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	end := 0
	for range max - 1 {
		_, size := utf8.DecodeRuneInString(s[end:])
		end += size
	}
	if !utf8.ValidString(s[:end]) {
		return string([]rune(s)[:max-1]) + "…"
	}
	return s[:end] + "…"
}
