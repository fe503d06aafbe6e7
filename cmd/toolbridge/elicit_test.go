package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

func TestElicitor(t *testing.T) {
	withDefaults := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"name":     map[string]any{"type": "string", "default": "John Doe"},
			"age":      map[string]any{"type": "integer", "default": 30},
			"verified": map[string]any{"type": "boolean", "default": true},
			"note":     map[string]any{"type": "string"},
		},
		"required": []string{"name"},
	}
	tests := []struct {
		name    string
		mode    string
		params  mcp.ElicitationParams
		action  mcp.ElicitationResponseAction
		content string // the accepted content as JSON
		logged  string
	}{
		{"decline by default", elicitDecline, mcp.ElicitationParams{Message: "who?", RequestedSchema: withDefaults}, mcp.ElicitationResponseActionDecline, "", "declined"},
		{"defaults accepted", elicitDefaults, mcp.ElicitationParams{Message: "who?", RequestedSchema: withDefaults}, mcp.ElicitationResponseActionAccept, `{"age":30,"name":"John Doe","verified":true}`, "accepted"},
		{"required without default", elicitDefaults, mcp.ElicitationParams{Message: "who?", RequestedSchema: map[string]any{
			"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}, "required": []string{"name"}}}, mcp.ElicitationResponseActionDecline, "", `no default for required ["name"]`},
		{"url mode", elicitDefaults, mcp.ElicitationParams{Mode: "url", Message: "log in"}, mcp.ElicitationResponseActionDecline, "", "url request"},
		{"no schema", elicitDefaults, mcp.ElicitationParams{Message: "ok?"}, mcp.ElicitationResponseActionAccept, `{}`, "accepted"},
		{"schema not an object", elicitDefaults, mcp.ElicitationParams{Message: "ok?", RequestedSchema: "nonsense"}, mcp.ElicitationResponseActionDecline, "", "reading the requested schema"},
		{"properties not an object", elicitDefaults, mcp.ElicitationParams{Message: "ok?", RequestedSchema: map[string]any{"properties": []int{1}}}, mcp.ElicitationResponseActionDecline, "", "reading the requested schema"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var log bytes.Buffer
			e, err := newElicitor(tt.mode, &log)
			if err != nil {
				t.Fatal(err)
			}
			res, err := e.Elicit(context.Background(), mcp.ElicitationRequest{Params: tt.params})
			if err != nil {
				t.Fatal(err)
			}
			if res.Action != tt.action {
				t.Fatalf("action %q, want %q", res.Action, tt.action)
			}
			if tt.content != "" {
				got, _ := json.Marshal(res.Content)
				if string(got) != tt.content {
					t.Errorf("content %s, want %s", got, tt.content)
				}
			}
			if !strings.Contains(log.String(), tt.logged) || !strings.Contains(log.String(), tt.params.Message) {
				t.Errorf("stderr %q, want %q and the server's message", log.String(), tt.logged)
			}
		})
	}
	if _, err := newElicitor("yes", &bytes.Buffer{}); err == nil {
		t.Error("newElicitor accepted an unknown mode")
	}
}
