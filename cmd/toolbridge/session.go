package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolbridge/toolbridge/bridge"
	"github.com/toolbridge/toolbridge/bridge/upstream"
	"github.com/toolbridge/toolbridge/config"
)

// session is a gateway with one in-process MCP client attached: the CLI's
// one-shot commands (tools, search, describe, call, demo --script) go
// through the same MCP path a real client does.
type session struct {
	g *bridge.Gateway
	c *client.Client
}

// openSession starts a gateway for specs and attaches an in-process
// client to it, on the gateway's own transport (the front a real client
// goes through); h are that client's handlers (how it answers
// elicitation, for one).
func openSession(ctx context.Context, cfg *config.Config, specs []upstream.Spec, progress io.Writer, environ []string, h bridge.ClientHandlers) (*session, error) {
	g, err := bridge.New(cfg, bridge.Options{Environ: environ, Progress: progress})
	if err != nil {
		return nil, err
	}
	if err := g.Connect(ctx, specs); err != nil {
		fmt.Fprintln(progress, "toolbridge: continuing without the servers that failed")
	}
	c := g.InProcessClient(h)
	if err := c.Start(ctx); err != nil {
		_ = g.Close()
		return nil, fmt.Errorf("starting in-process client: %w", err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "toolbridge-cli", Version: version()}
	if _, err := c.Initialize(ctx, init); err != nil {
		_ = c.Close()
		_ = g.Close()
		return nil, fmt.Errorf("initializing in-process client: %w", err)
	}
	return &session{g: g, c: c}, nil
}

func (s *session) Close() error {
	_ = s.c.Close()
	return s.g.Close()
}

// call calls a tool by the name the client sees, with raw JSON arguments.
func (s *session) call(ctx context.Context, name string, args json.RawMessage) (*mcp.CallToolResult, error) {
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	if len(args) > 0 {
		req.Params.Arguments = args
	}
	return s.c.CallTool(ctx, req)
}

// resultText renders a tool result for a terminal: text blocks as they
// are, other content as a one-line summary, structured content as JSON.
func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		switch v := c.(type) {
		case mcp.TextContent:
			b.WriteString(v.Text)
		case mcp.ImageContent:
			fmt.Fprintf(&b, "[image %s, %d base64 bytes]", v.MIMEType, len(v.Data))
		case mcp.AudioContent:
			fmt.Fprintf(&b, "[audio %s, %d base64 bytes]", v.MIMEType, len(v.Data))
		case mcp.EmbeddedResource:
			fmt.Fprintf(&b, "[resource %v]", resourceURI(v.Resource))
		case mcp.ResourceLink:
			fmt.Fprintf(&b, "[link %s]", v.URI)
		default:
			fmt.Fprintf(&b, "[%T]", c)
		}
		b.WriteByte('\n')
	}
	if res.StructuredContent != nil && len(res.Content) == 0 {
		out, _ := json.MarshalIndent(res.StructuredContent, "", "  ")
		b.Write(out)
		b.WriteByte('\n')
	}
	return strings.TrimRight(b.String(), "\n")
}

func resourceURI(r mcp.ResourceContents) string {
	switch v := r.(type) {
	case mcp.TextResourceContents:
		return v.URI
	case mcp.BlobResourceContents:
		return v.URI
	}
	return "?"
}
