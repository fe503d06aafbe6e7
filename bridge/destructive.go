package bridge

import (
	"context"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolbridge/toolbridge/config"
)

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

// checkDestructive applies policy.destructive to a call: "" lets it run,
// anything else is the reason it may not. confirm asks the user through
// MCP elicitation, and refuses when the client cannot ask.
func (g *Gateway) checkDestructive(ctx context.Context, c call, cfg *config.Config) string {
	policy := cfg.Policy.Destructive
	if policy == "" || policy == config.DestructiveAllow {
		return ""
	}
	why := destructiveWhy(c.tool.Tool)
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
