package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"

	"github.com/mark3labs/mcp-go/mcp"
)

// How `toolbridge call` answers an elicitation request.
const (
	// elicitDecline declines every request: a one-shot command has no
	// user at hand, and accepting on their behalf must be asked for.
	elicitDecline = "decline"
	// elicitDefaults accepts a form request with the defaults its schema
	// gives (SEP-1034), when every required field has one.
	elicitDefaults = "defaults"
)

// elicitor answers elicitation requests for a command with no user at
// hand, and says on stderr what it answered.
type elicitor struct {
	mode string
	log  io.Writer
}

func newElicitor(mode string, log io.Writer) (*elicitor, error) {
	if mode != elicitDecline && mode != elicitDefaults {
		return nil, fmt.Errorf("--elicit must be %s or %s, got %q", elicitDecline, elicitDefaults, mode)
	}
	return &elicitor{mode: mode, log: log}, nil
}

// Elicit answers req by the elicitor's mode.
func (e *elicitor) Elicit(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	p := req.Params
	decline := func(why string) (*mcp.ElicitationResult, error) {
		fmt.Fprintf(e.log, "toolbridge: declined the server's request for input (%s): %s\n", why, p.Message)
		return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionDecline}}, nil
	}
	if e.mode != elicitDefaults {
		return decline("--elicit " + e.mode)
	}
	if p.Mode != "" && p.Mode != "form" {
		return decline("a " + p.Mode + " request has no defaults")
	}
	content, missing, err := schemaDefaults(p.RequestedSchema)
	if err != nil {
		return decline(err.Error())
	}
	if len(missing) > 0 {
		return decline(fmt.Sprintf("no default for required %q", missing))
	}
	fmt.Fprintf(e.log, "toolbridge: accepted the server's request for input with its defaults: %s\n", p.Message)
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept, Content: content}}, nil
}

// schemaDefaults returns the default of each property of a requested
// schema (a flat object schema of primitive properties), and the required
// properties that have none.
func schemaDefaults(schema any) (map[string]any, []string, error) {
	raw, err := json.Marshal(schema)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the requested schema: %w", err)
	}
	var s struct {
		Properties map[string]struct {
			Default json.RawMessage `json:"default"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, nil, fmt.Errorf("reading the requested schema: %w", err)
	}
	content := map[string]any{}
	for name, prop := range s.Properties {
		if len(prop.Default) > 0 {
			content[name] = prop.Default
		}
	}
	var missing []string
	for _, name := range s.Required {
		if _, ok := content[name]; !ok {
			missing = append(missing, name)
		}
	}
	slices.Sort(missing)
	return content, missing, nil
}
