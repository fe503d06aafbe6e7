package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolbridge/toolbridge/bridge/access"
)

// TestHiddenResourceReadsLikeUnknown: for each identity of the team
// gateway, resources/read of the other team's resource (a listed one, and
// a URI that only the other team's template matches) is answered exactly
// like a URI nobody serves: the same JSON-RPC code and message, the URI
// echoed as sent. It was an internal error (-32603) before, which told the
// caller that the resource exists. A routed key sent as a URI reads
// nothing, and the caller's own resources still read, listed under their
// real URIs.
func TestHiddenResourceReadsLikeUnknown(t *testing.T) {
	tg := startTeamGateway(t, nil)
	ctx := context.Background()
	for _, tm := range []struct{ group, own, other string }{{"dev", "github", "k8s"}, {"ops", "k8s", "github"}} {
		t.Run(tm.group, func(t *testing.T) {
			c := tg.client(t, tg.iss.Mint(t, tm.group+"-user@example.com", tg.url, []string{tm.group}, "mcp:tools"))
			read := func(uri string) (string, error) {
				rr := mcp.ReadResourceRequest{}
				rr.Params.URI = uri
				res, err := c.ReadResource(ctx, rr)
				if err != nil {
					return "", err
				}
				b, _ := json.Marshal(res)
				return string(b), nil
			}
			for _, hidden := range []string{
				"mem://" + tm.other + "/readme", // a listed resource
				"mem://" + tm.other + "/42",     // matches the other team's template only
				routeKey("mem://" + tm.other + "/readme"),
				routeKey("mem://" + tm.own + "/readme"),
			} {
				unknown := "mem://nosuch-" + strings.ReplaceAll(hidden, ":", "-")
				out, errHidden := read(hidden)
				_, errUnknown := read(unknown)
				if errHidden == nil {
					t.Errorf("resources/read %s answered: %s", hidden, out)
					continue
				}
				// The client speaks 2026-07-28, where mcp-go answers an
				// unknown URI with invalid params (-32602).
				if errors.Is(errHidden, mcp.ErrInternalError) || !errors.Is(errHidden, mcp.ErrInvalidParams) || !strings.Contains(errHidden.Error(), "resource not found") {
					t.Errorf("resources/read %s: %v, want mcp-go's resource not found", hidden, errHidden)
				}
				if strings.HasPrefix(hidden, routePrefix) {
					// A routed key is refused before the lookup; its echo
					// is mangled, the same for every such URI.
					continue
				}
				if h, u := strings.ReplaceAll(errHidden.Error(), hidden, "URI"), strings.ReplaceAll(errUnknown.Error(), unknown, "URI"); h != u {
					t.Errorf("hidden %s is not answered like an unknown URI:\n hidden: %s\nunknown: %s", hidden, h, u)
				}
			}
			for _, own := range []string{"mem://" + tm.own + "/readme", "mem://" + tm.own + "/7"} {
				if out, err := read(own); err != nil || !strings.Contains(out, `"text":"`+tm.own+`"`) {
					t.Errorf("resources/read of the caller's own %s: %s %v", own, out, err)
				}
			}
			list, err := c.ListResources(ctx, mcp.ListResourcesRequest{})
			if err != nil || len(list.Resources) != 1 || list.Resources[0].URI != "mem://"+tm.own+"/readme" {
				t.Errorf("resources/list = %+v %v, want the caller's mem://%s/readme under its own URI", list, err, tm.own)
			}
			tpls, err := c.ListResourceTemplates(ctx, mcp.ListResourceTemplatesRequest{})
			if err != nil || len(tpls.ResourceTemplates) != 1 || tpls.ResourceTemplates[0].URITemplate.Raw() != "mem://"+tm.own+"/{id}" {
				t.Errorf("resources/templates/list = %+v %v, want the caller's template under its own pattern", tpls, err)
			}
		})
	}
}

// TestHiddenResourceReadRaw compares the raw JSON-RPC answers: the hidden
// resource's and an unknown URI's are the same bytes, less the URI.
func TestHiddenResourceReadRaw(t *testing.T) {
	tg := startTeamGateway(t, nil)
	ctx := access.NewContext(context.Background(), &access.Identity{Subject: "dev-user", Groups: []string{"dev"}})
	raw := func(uri string) string {
		msg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": "resources/read", "params": map[string]any{"uri": uri}})
		b, _ := json.Marshal(tg.g.srv.HandleMessage(ctx, msg))
		return string(b)
	}
	hidden, unknown := raw("mem://k8s/readme"), raw("mem://nosuch/readme")
	if strings.ReplaceAll(hidden, "mem://k8s/readme", "URI") != strings.ReplaceAll(unknown, "mem://nosuch/readme", "URI") {
		t.Errorf("raw answers differ:\n hidden: %s\nunknown: %s", hidden, unknown)
	}
	if !strings.Contains(hidden, `"code":-32002`) {
		t.Errorf("hidden: %s, want code -32002 (resource not found)", hidden)
	}
	if own := raw("mem://github/readme"); !strings.Contains(own, `"text":"github"`) {
		t.Errorf("own resource: %s", own)
	}
}
