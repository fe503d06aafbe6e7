package bridge

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// The proxies for what is not a tool: prompts/get, resources/read and
// completion/complete go to the server that owns the prompt, resource or
// template, and its answer comes back as it is.

// promptHandler forwards prompts/get for p to its server, under the
// prompt's original name.
func (g *Gateway) promptHandler(p *Prompt) server.PromptHandlerFunc {
	return func(ctx context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		if g.serverHidden(ctx, p.Server) {
			// The prompt filter keeps it from being found; this holds
			// even if a later change let a stale name through.
			return nil, fmt.Errorf("prompt '%s' not found: %w", req.Params.Name, server.ErrPromptNotFound)
		}
		u, ok := g.pool.Get(p.Server)
		if !ok {
			return nil, fmt.Errorf("server %q is not connected", p.Server)
		}
		params := map[string]any{"name": p.Prompt.Name}
		if req.Params.Arguments != nil {
			params["arguments"] = req.Params.Arguments
		}
		raw, err := u.Request(ctx, string(mcp.MethodPromptsGet), params)
		if err != nil {
			return nil, fmt.Errorf("getting prompt %s from %s: %w", p.Prompt.Name, p.Server, err)
		}
		return mcp.ParseGetPromptResult(&raw)
	}
}

// resourceHandler forwards resources/read to the server that listed the
// resource or template.
func (g *Gateway) resourceHandler(serverName string) server.ResourceHandlerFunc {
	return func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		// mcp-go found the routed key that routeRead gave a URI the
		// caller may see; this check only holds if that ever changes.
		req.Params.URI = unroute(req.Params.URI)
		if g.serverHidden(ctx, serverName) {
			return nil, fmt.Errorf("handler not found for resource URI '%s': %w", req.Params.URI, server.ErrResourceNotFound)
		}
		u, ok := g.pool.Get(serverName)
		if !ok {
			return nil, fmt.Errorf("server %q is not connected", serverName)
		}
		raw, err := u.Request(ctx, string(mcp.MethodResourcesRead), map[string]any{"uri": req.Params.URI})
		if err != nil {
			return nil, fmt.Errorf("reading %s from %s: %w", req.Params.URI, serverName, err)
		}
		res, err := mcp.ParseReadResourceResult(&raw)
		if err != nil {
			return nil, fmt.Errorf("decoding %s from %s: %w", req.Params.URI, serverName, err)
		}
		return res.Contents, nil
	}
}

// completer forwards completion/complete to the server that owns the
// prompt or resource template.
type completer struct{ g *Gateway }

func (c completer) CompletePromptArgument(ctx context.Context, name string, arg mcp.CompleteArgument, cctx mcp.CompleteContext) (*mcp.Completion, error) {
	for _, p := range c.g.catalogFor(ctx).Prompts {
		if p.Exposed == name {
			return c.complete(ctx, p.Server, map[string]any{"type": "ref/prompt", "name": p.Prompt.Name}, arg, cctx)
		}
	}
	return &mcp.Completion{Values: []string{}}, nil
}

func (c completer) CompleteResourceArgument(ctx context.Context, uri string, arg mcp.CompleteArgument, cctx mcp.CompleteContext) (*mcp.Completion, error) {
	for _, t := range c.g.catalogFor(ctx).Templates {
		if t.Template.URITemplate != nil && t.Template.URITemplate.Raw() == uri {
			return c.complete(ctx, t.Server, map[string]any{"type": "ref/resource", "uri": uri}, arg, cctx)
		}
	}
	return &mcp.Completion{Values: []string{}}, nil
}

func (c completer) complete(ctx context.Context, serverName string, ref map[string]any, arg mcp.CompleteArgument, cctx mcp.CompleteContext) (*mcp.Completion, error) {
	u, ok := c.g.pool.Get(serverName)
	if !ok {
		return nil, fmt.Errorf("server %q is not connected", serverName)
	}
	params := map[string]any{"ref": ref, "argument": arg}
	if len(cctx.Arguments) > 0 {
		params["context"] = cctx
	}
	raw, err := u.Request(ctx, string(mcp.MethodCompletionComplete), params)
	if err != nil {
		return nil, fmt.Errorf("completing on %s: %w", serverName, err)
	}
	var res mcp.CompleteResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("decoding completion from %s: %w", serverName, err)
	}
	return &res.Completion, nil
}
