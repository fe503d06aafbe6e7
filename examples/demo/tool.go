package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// handlerFunc runs one tool on validated-as-an-object arguments. Any error
// it returns becomes an isError result carrying the error's text, so a
// handler reports bad input simply by returning an error.
type handlerFunc func(ctx context.Context, a args) (*mcp.CallToolResult, error)

// toolDef pairs a tool's declaration with its handler.
type toolDef struct {
	tool mcp.Tool
	run  handlerFunc
}

// newTool declares a tool whose input schema rejects unknown properties:
// a misspelt argument name should fail loudly, not be ignored.
func newTool(name, description string, opts ...mcp.ToolOption) mcp.Tool {
	base := []mcp.ToolOption{
		mcp.WithDescription(description),
		mcp.WithSchemaAdditionalProperties(false),
	}
	return mcp.NewTool(name, append(base, opts...)...)
}

// readOnly marks a tool that only computes: it changes nothing and talks to
// nothing outside the process.
func readOnly() mcp.ToolOption {
	return mcp.WithToolAnnotation(mcp.ToolAnnotation{
		ReadOnlyHint:    mcp.ToBoolPtr(true),
		DestructiveHint: mcp.ToBoolPtr(false),
		IdempotentHint:  mcp.ToBoolPtr(true),
		OpenWorldHint:   mcp.ToBoolPtr(false),
	})
}

// readOnlyVolatile marks a tool that changes nothing but whose answer
// depends on when it is called (the clock).
func readOnlyVolatile() mcp.ToolOption {
	return mcp.WithToolAnnotation(mcp.ToolAnnotation{
		ReadOnlyHint:    mcp.ToBoolPtr(true),
		DestructiveHint: mcp.ToBoolPtr(false),
		IdempotentHint:  mcp.ToBoolPtr(false),
		OpenWorldHint:   mcp.ToBoolPtr(false),
	})
}

// mutating marks a tool that changes the server's in-memory state.
func mutating(destructive, idempotent bool) mcp.ToolOption {
	return mcp.WithToolAnnotation(mcp.ToolAnnotation{
		ReadOnlyHint:    mcp.ToBoolPtr(false),
		DestructiveHint: mcp.ToBoolPtr(destructive),
		IdempotentHint:  mcp.ToBoolPtr(idempotent),
		OpenWorldHint:   mcp.ToBoolPtr(false),
	})
}

// handler adapts the toolDef to mcp-go: it checks the arguments against the
// declared property names, turns handler errors into isError results and
// turns a panic (a bug) into an isError result instead of a crash.
func (td toolDef) handler() server.ToolHandlerFunc {
	name := td.tool.Name
	known := make([]string, 0, len(td.tool.InputSchema.Properties))
	for k := range td.tool.InputSchema.Properties {
		known = append(known, k)
	}
	slices.Sort(known)
	return func(ctx context.Context, req mcp.CallToolRequest) (res *mcp.CallToolResult, err error) {
		defer func() {
			if r := recover(); r != nil {
				res, err = mcp.NewToolResultErrorf("%s: internal error: %v", name, r), nil
			}
		}()
		a, aerr := newArgs(req.GetRawArguments(), known)
		if aerr != nil {
			return mcp.NewToolResultError(aerr.Error()), nil
		}
		res, err = td.run(ctx, a)
		if err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		if res == nil {
			return mcp.NewToolResultErrorf("%s: internal error: no result", name), nil
		}
		return res, nil
	}
}

// structured returns v as structured content. text is the human-readable
// content; when empty, the JSON encoding of v is used, as the MCP spec
// recommends for clients that ignore structuredContent.
func structured(v any, text string) (*mcp.CallToolResult, error) {
	if text == "" {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("encoding result: %w", err)
		}
		text = string(b)
	}
	return mcp.NewToolResultStructured(v, text), nil
}
