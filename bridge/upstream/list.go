package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
)

// refreshAll lists tools, prompts, resources and templates, as the server's
// capabilities allow.
func (u *Conn) refreshAll(ctx context.Context) error {
	if err := u.RefreshTools(ctx); err != nil {
		return err
	}
	u.mu.RLock()
	caps := u.caps
	u.mu.RUnlock()
	if caps.Prompts != nil {
		if err := u.RefreshPrompts(ctx); err != nil {
			return err
		}
	}
	if caps.Resources != nil {
		if err := u.RefreshResources(ctx); err != nil {
			return err
		}
	}
	return nil
}

// RefreshTools follows tools/list pagination and keeps each tool's schemas
// exactly as the server sent them.
//
// It keeps at most u.maxTools tools, the first in the order the server
// sent them: past the bound, tools are not decoded and further pages are
// not fetched, so a server that lists 100000 tools costs the gateway the
// bytes of its answer and the bound's worth of tools, not 100000 tools'
// worth of decoding, counting, indexing and pinning. Skipped says what
// was dropped, once per list.
func (u *Conn) RefreshTools(ctx context.Context) error {
	u.mu.RLock()
	hasTools := u.caps.Tools != nil
	u.mu.RUnlock()
	if !hasTools {
		return nil
	}
	var tools []mcp.Tool
	var skipped []string
	broken, dropped := 0, 0
	unfetched := false // pages past the bound were left unfetched
	full := func() bool { return u.maxTools > 0 && len(tools) >= u.maxTools }
	err := paginate(ctx, u, string(mcp.MethodToolsList), func(page json.RawMessage) (string, error) {
		var res struct {
			Tools      []rawRef `json:"tools"`
			NextCursor string   `json:"nextCursor"`
		}
		if err := json.Unmarshal(page, &res); err != nil {
			return "", fmt.Errorf("decoding tools/list: %w", err)
		}
		if tools == nil {
			// Sized for the first page, the whole list of most servers:
			// the catalog points into this slice (it is the only copy of
			// the definitions), so append's slack would be kept for as
			// long as the list.
			n := len(res.Tools)
			if u.maxTools > 0 {
				n = min(n, u.maxTools)
			}
			tools = make([]mcp.Tool, 0, n)
		}
		for i, raw := range res.Tools {
			if full() {
				dropped += len(res.Tools) - i
				break
			}
			t, err := DecodeTool(raw.b)
			if err != nil {
				// One broken tool must not take the server's others with it.
				if broken < maxSkippedReasons {
					skipped = append(skipped, fmt.Sprintf("skipped tool %d of tools/list: %v", len(tools)+broken, err))
				}
				broken++
				continue
			}
			tools = append(tools, t)
		}
		if full() && res.NextCursor != "" {
			// More pages: at least one more tool. Not fetching them is
			// the point of the bound.
			dropped++
			unfetched = true
			return "", nil
		}
		return res.NextCursor, nil
	})
	if err != nil {
		return fmt.Errorf("listing tools: %w", err)
	}
	if broken > maxSkippedReasons {
		skipped = append(skipped, fmt.Sprintf("skipped %d more broken tools of tools/list", broken-maxSkippedReasons))
	}
	if dropped > 0 {
		count := strconv.Itoa(dropped)
		if unfetched {
			count = "at least " + count + " (later pages were not fetched)"
		}
		skipped = append(skipped, fmt.Sprintf("tools/list offered more than %d tools; kept the first %d and dropped %s: raise max_tools_per_server, or the server's max_tools, to take more",
			u.maxTools, u.maxTools, count))
	}
	u.mu.Lock()
	u.tools, u.skippedTools, u.droppedTools = tools, skipped, dropped
	u.mu.Unlock()
	return nil
}

// rawRef is one element of a JSON array, as a view into the array's own
// bytes. json.RawMessage would copy it: for a tools/list page that is a
// second copy of the whole answer, live while its tools are decoded, and
// with many servers answering at once at start-up those copies add up to
// tens of megabytes of peak memory. A rawRef is valid only while the
// decoded bytes are: RefreshTools decodes each tool (DecodeTool copies
// what it keeps) before its page goes.
type rawRef struct{ b []byte }

// UnmarshalJSON keeps raw without copying it: see rawRef.
func (r *rawRef) UnmarshalJSON(raw []byte) error {
	r.b = raw
	return nil
}

// maxSkippedReasons bounds how many broken tools of one list are named one
// by one: a server that sends thousands gets one line for the rest.
const maxSkippedReasons = 20

// Skipped says which tools of the last tools/list were left out, and why.
func (u *Conn) Skipped() []string {
	u.mu.RLock()
	defer u.mu.RUnlock()
	return u.skippedTools
}

// Dropped is how many tools the last tools/list offered past the server's
// tool bound (at least that many: pages past it are not fetched).
func (u *Conn) Dropped() int {
	u.mu.RLock()
	defer u.mu.RUnlock()
	return u.droppedTools
}

// RefreshPrompts lists the server's prompts again.
func (u *Conn) RefreshPrompts(ctx context.Context) error {
	prompts, err := listAll(ctx, u, string(mcp.MethodPromptsList), func(r mcp.ListPromptsResult) ([]mcp.Prompt, mcp.Cursor) {
		return r.Prompts, r.NextCursor
	})
	if err != nil {
		return fmt.Errorf("listing prompts: %w", err)
	}
	u.mu.Lock()
	u.prompts = prompts
	u.mu.Unlock()
	return nil
}

// RefreshResources lists the server's resources and resource templates
// again.
func (u *Conn) RefreshResources(ctx context.Context) error {
	resources, err := listAll(ctx, u, string(mcp.MethodResourcesList), func(r mcp.ListResourcesResult) ([]mcp.Resource, mcp.Cursor) {
		return r.Resources, r.NextCursor
	})
	if err != nil {
		return fmt.Errorf("listing resources: %w", err)
	}
	templates, err := listAll(ctx, u, string(mcp.MethodResourcesTemplatesList), func(r mcp.ListResourceTemplatesResult) ([]mcp.ResourceTemplate, mcp.Cursor) {
		return r.ResourceTemplates, r.NextCursor
	})
	if err != nil {
		// Templates are optional in practice: some servers answer
		// method-not-found although they list resources.
		var rpcErr *RPCError
		if !errors.As(err, &rpcErr) || rpcErr.Code != mcp.METHOD_NOT_FOUND {
			return fmt.Errorf("listing resource templates: %w", err)
		}
	}
	u.mu.Lock()
	u.resources, u.templates = resources, templates
	u.mu.Unlock()
	return nil
}

// listAll follows method's pagination and collects the items of every
// page, which decodes into P.
func listAll[P, T any](ctx context.Context, u *Conn, method string, items func(P) ([]T, mcp.Cursor)) ([]T, error) {
	var all []T
	err := paginate(ctx, u, method, func(page json.RawMessage) (string, error) {
		var res P
		if err := json.Unmarshal(page, &res); err != nil {
			return "", fmt.Errorf("decoding %s: %w", method, err)
		}
		got, next := items(res)
		all = append(all, got...)
		return string(next), nil
	})
	return all, err
}

// maxPages bounds pagination: a server that hands out cursors forever must
// not hang the gateway.
const maxPages = 1000

// paginate calls method until the server stops returning a cursor. A cursor
// seen twice is an error rather than an endless loop.
func paginate(ctx context.Context, u *Conn, method string, page func(json.RawMessage) (string, error)) error {
	seen := map[string]bool{}
	cursor := ""
	for i := 0; i < maxPages; i++ {
		var params any
		if cursor != "" {
			params = map[string]any{"cursor": cursor}
		}
		raw, err := u.Request(ctx, method, params)
		if err != nil {
			return err
		}
		next, err := page(raw)
		if err != nil {
			return err
		}
		if next == "" {
			return nil
		}
		if seen[next] {
			return fmt.Errorf("%s returned cursor %q twice", method, next)
		}
		seen[next] = true
		cursor = next
	}
	return fmt.Errorf("%s: more than %d pages", method, maxPages)
}

// maxToolName is the longest tool name accepted: MCP recommends at most
// 128 characters.
const maxToolName = 128

// checkToolName refuses a name no client could call or read: empty, too
// long, not UTF-8, or with control characters.
func checkToolName(name string) error {
	switch {
	case name == "":
		return errors.New("tool has no name")
	case len(name) > maxToolName:
		return fmt.Errorf("tool name %q… is %d bytes, more than %d", name[:32], len(name), maxToolName)
	case !utf8.ValidString(name):
		return fmt.Errorf("tool name %q is not UTF-8", name)
	case strings.IndexFunc(name, unicode.IsControl) >= 0:
		return fmt.Errorf("tool name %q has control characters", name)
	}
	return nil
}

// decodeTool decodes one tool and keeps its input and output schemas as
// the raw JSON the server sent: mcp-go's typed schema drops keywords it does
// not model ($schema, titles, ...), and clients must see them unchanged.
// The schemas are not decoded into mcp-go's typed maps at all: nothing
// reads those, and for a catalog of thousands of tools decoding them was
// most of the CPU and garbage of listing it.
func DecodeTool(raw json.RawMessage) (mcp.Tool, error) {
	var wire struct {
		mcp.Tool
		// At a shallower depth than mcp.Tool's fields of the same JSON
		// names, these take the schemas instead of them.
		InputSchema  json.RawMessage `json:"inputSchema"`
		OutputSchema json.RawMessage `json:"outputSchema"`
	}
	if err := json.Unmarshal(raw, &wire); err != nil {
		return mcp.Tool{}, err
	}
	t := wire.Tool
	if err := checkToolName(t.Name); err != nil {
		return t, err
	}
	t.RawInputSchema = wire.InputSchema
	switch {
	case isNull(t.RawInputSchema):
		// A tool must have an input schema; an empty object schema is what
		// the server meant.
		t.RawInputSchema = json.RawMessage(`{"type":"object"}`)
	case !isObject(t.RawInputSchema):
		return t, fmt.Errorf("tool %q: inputSchema is not a JSON object", t.Name)
	}
	if !isNull(wire.OutputSchema) {
		if !isObject(wire.OutputSchema) {
			return t, fmt.Errorf("tool %q: outputSchema is not a JSON object", t.Name)
		}
		t.RawOutputSchema = wire.OutputSchema
	}
	return t, nil
}

// isNull reports whether a raw JSON value is absent or null.
func isNull(v json.RawMessage) bool {
	v = bytes.TrimSpace(v)
	return len(v) == 0 || string(v) == "null"
}

// isObject reports whether a raw JSON value (already known to be valid
// JSON) is an object.
func isObject(v json.RawMessage) bool {
	v = bytes.TrimSpace(v)
	return len(v) > 0 && v[0] == '{'
}
