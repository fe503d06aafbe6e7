// Package classify sorts upstream tools into core, deferrable and unknown,
// counts the tokens their schemas cost the client, and decides whether the
// gateway runs in bridge mode.
//
// The gateway calls New once per config, Classify and Counter.Count (or
// CountAll) once per tool, then Decide whenever the catalog changes; Decide
// is pure and does no tokenizing, so re-deciding is cheap. NewReport and its
// writers render `toolbridge tools`.
//
// # Classes
//
// Core tools are always visible with their full schema; deferrable tools are
// loaded on demand in bridge mode; unknown tools matched no rule and stay
// visible. Classify documents the rules and their order. In short: config
// tool rule > core set > explicit server defer (never, always, unmarked) >
// the tool's own marker (_meta "io.toolbridge/deferrable", defer_loading) >
// the implicit MCP-origin marker of a server with defer auto > the
// deferrable name prefix > unknown. ClassifyAll adds two rules across a
// catalog: a deprecated core tool gives its place to the replacement it
// names, and a core_tools name that several servers have is core on one
// of them only (the server named like the tool, else the first in the
// config file), so the listed set does not grow with them.
//
// # Tokens
//
// A tool costs the o200k_base BPE tokens of its JSON as the client receives
// it (ToolJSON). Counting is offline and exact; counts are cached per chunk
// of JSON, so recounting an unchanged catalog does not re-tokenize it. The
// chars/4 estimate exists only as the named fallback "estimate".
//
// # Activation
//
// Decide implements mode on, off and auto; see its doc for the threshold,
// min_tokens and `defer: always` readings.
package classify
