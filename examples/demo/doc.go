// Package demo holds the built-in example upstream MCP servers that
// `toolbridge demo` starts in process, so the gateway can be tried with no
// configuration at all.
//
// Every server does real, small, bounded work: an in-memory note store,
// arithmetic with a safe expression parser, text utilities, time and
// timezone arithmetic, and JSON helpers. Each tool declares a typed input
// schema (required parameters, enums, a description for every parameter)
// and, where the result has a natural shape, an output schema with matching
// structured content. Handlers validate their arguments themselves and
// report bad input as a tool error result (isError) naming the problem;
// they never panic and never return a protocol error for bad arguments.
//
// The same servers are reachable as a standalone binary through
// examples/servers/demo-server, over stdio or streamable HTTP.
package demo
