package demo

import (
	"time"

	"github.com/mark3labs/mcp-go/server"

	// The time server resolves IANA zones; embedding the database keeps it
	// working on machines (and containers) without /usr/share/zoneinfo.
	_ "time/tzdata"
)

// Version is reported by every demo server in its initialize result.
const Version = "1.0.0"

// Server is one named example upstream.
type Server struct {
	// Name is the server's short name, e.g. "notes"; it is also the MCP
	// server name reported on initialize.
	Name string
	// Description is a one-line purpose, suitable for a catalog hint.
	Description string
	// MCP is the ready-to-serve server with all its tools registered.
	MCP *server.MCPServer
}

// Servers returns fresh instances of every demo server, in a stable order.
// Nothing is shared between calls: each call gets its own note store and
// JSON scratch space, so two gateways (or two tests) never see each other's
// data.
func Servers() []Server {
	return newServers(time.Now)
}

// Names lists the demo servers' names in the order Servers returns them.
func Names() []string {
	specs := serverSpecs()
	names := make([]string, len(specs))
	for i, s := range specs {
		names[i] = s.name
	}
	return names
}

// Lookup returns a fresh instance of the named demo server and whether the
// name is known.
func Lookup(name string) (Server, bool) {
	for _, s := range serverSpecs() {
		if s.name == name {
			return s.build(time.Now), true
		}
	}
	return Server{}, false
}

// clock returns the current time; tests pass a fixed one.
type clock func() time.Time

// serverSpec describes how to build one demo server.
type serverSpec struct {
	name        string
	description string
	tools       func(now clock) []toolDef
}

// serverSpecs is the list of demo servers. It is a function, not a
// package-level variable, so no mutable state is shared between instances.
func serverSpecs() []serverSpec {
	return []serverSpec{
		{
			name:        "notes",
			description: "In-memory note store: create, read, update, delete, tag, search and export notes as Markdown.",
			tools:       notesTools,
		},
		{
			name:        "math",
			description: "Arithmetic, a safe expression evaluator, statistics, number theory and unit conversion.",
			tools:       func(clock) []toolDef { return mathTools() },
		},
		{
			name:        "text",
			description: "Text utilities: counting, case changes, slugs, find/replace, regex, base64, SHA-256, edit distance, wrapping, e-mail extraction.",
			tools:       func(clock) []toolDef { return textTools() },
		},
		{
			name:        "time",
			description: "Dates and times: current time in any IANA timezone, conversion, parsing, formatting, durations and business days.",
			tools:       timeTools,
		},
		{
			name:        "json",
			description: "JSON helpers: validate, pretty-print, minify, query by dotted path, list keys and apply merge patches.",
			tools:       func(clock) []toolDef { return jsonTools() },
		},
	}
}

// newServers builds every demo server with the given clock.
func newServers(now clock) []Server {
	specs := serverSpecs()
	out := make([]Server, len(specs))
	for i, s := range specs {
		out[i] = s.build(now)
	}
	return out
}

// build creates the MCP server and registers the spec's tools on it.
func (s serverSpec) build(now clock) Server {
	srv := server.NewMCPServer(s.name, Version,
		server.WithToolCapabilities(false),
		server.WithInstructions(s.description),
		// The output schemas are generated from the very structs the
		// handlers return; validating them keeps that promise checked.
		server.WithOutputSchemaValidation(),
	)
	for _, td := range s.tools(now) {
		srv.AddTool(td.tool, td.handler())
	}
	return Server{Name: s.name, Description: s.description, MCP: srv}
}
