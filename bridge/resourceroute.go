package bridge

import (
	"context"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/yosida95/uritemplate/v3"
)

// Reading a resource the caller may not see must be answered exactly like
// reading one that does not exist. mcp-go answers an unknown URI itself
// (resource not found, -32002, or invalid params on 2026-07-28), but any
// error from a handler becomes an internal error (-32603): a handler that
// refused a hidden resource would tell the caller that it exists. So the
// gateway registers the upstreams' resources and templates with mcp-go
// under routed keys (routePrefix + URI) that no client sends, and the
// before-read hook (routeRead) rewrites a URI to its key only when the
// caller may see it. A URI the caller may not see then misses mcp-go's
// lookup as an unknown one does, and mcp-go gives the unknown answer, the
// URI echoed as sent.

// routePrefix starts the key of every registered resource and template.
// It is a literal a URI template accepts.
const routePrefix = "toolbridge-route:"

// unroutable is put in front of a client's URI that already starts with
// routePrefix, so that a client cannot name a key and skip the check.
// Invalid UTF-8 matches no key and no template, and no JSON-decoded URI
// can hold it (the decoder turns it into U+FFFD), so it never collides.
const unroutable = "\xff"

func routeKey(uri string) string { return routePrefix + uri }

// unroute is the URI a routed key stands for.
func unroute(key string) string { return strings.TrimPrefix(key, routePrefix) }

// routedTemplate returns t registered under its routed key; ok is false
// when the routed form does not parse (the template is then left out, as
// mcp-go could not match it either).
func routedTemplate(t mcp.ResourceTemplate) (mcp.ResourceTemplate, bool) {
	if t.URITemplate == nil || t.URITemplate.Template == nil {
		return t, false
	}
	routed, err := uritemplate.New(routeKey(t.URITemplate.Raw()))
	if err != nil {
		return t, false
	}
	t.URITemplate = &mcp.URITemplate{Template: routed}
	return t, true
}

// routeRead rewrites a resources/read URI to its routed key when the
// caller may see the resource, or a template of a server they may reach
// matches it; otherwise it leaves the URI as sent, for mcp-go's unknown
// answer.
func (g *Gateway) routeRead(ctx context.Context, _ any, req *mcp.ReadResourceRequest) {
	if req == nil {
		return
	}
	uri := req.Params.URI
	if strings.HasPrefix(uri, routePrefix) {
		req.Params.URI = unroutable + uri
		return
	}
	view := g.catalogFor(ctx)
	for _, r := range view.Resources {
		if r.Resource.URI == uri {
			req.Params.URI = routeKey(uri)
			return
		}
	}
	for _, t := range view.Templates {
		if t.Template.URITemplate != nil && t.Template.URITemplate.Template != nil && t.Template.URITemplate.Regexp().MatchString(uri) {
			req.Params.URI = routeKey(uri)
			return
		}
	}
}
