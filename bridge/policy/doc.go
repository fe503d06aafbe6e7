// Package policy runs the gateway's policy around every tool call: the
// hooks that may deny a call before it runs and see its outcome after, the
// command hooks the config names, and the audit log. They see the real
// tool: a call the client makes through tool_call is hooked and audited as
// the upstream tool it wraps.
//
// # Why this is not in trace
//
// Hooks decide (a deny stops the call) and the audit log is a record the
// operator keeps: that is policy, not observability. In trace, the span
// API had to know the hooks' Decision type, so tracing depended on policy.
// Here, under bridge, they sit next to the call pipeline that runs them
// (bridge/call.go) and import only config and toolid of ours (and
// OpenTelemetry's API, to put the trace id on the audit line). trace now
// knows only spans: a denial reaches it as the hook's name and reason
// (Span.SetDenied). trace/hooks was the other choice; it would have kept
// trace importing policy, the arrow this move removes.
//
// A Hook sees every tool call before (BeforeCall, may deny) and after
// (AfterCall) it runs, with the real server, tool, class, arguments and
// session. Hooks runs a list in order: the first deny wins and the rest
// are not asked; a hook that errors is logged and counts as allow (a
// broken hook must not stop every tool; deny explicitly to block).
// AfterCall goes to every hook, for denied calls too. NewHooks builds the
// configured ones: CommandHook for each config.Hook, then the Audit log.
//
// A CommandHook gets the call as one JSON object on stdin
// ({"event","server","tool","arguments","session","class","via",
// "annotations" when the tool has any, and "exposed_name", the name the
// model called it by, when a tools: rule renamed it}; after
// events add "outcome", "is_error", "duration_ms", "error", "result").
// Exit 0 allows, exit 2 denies with stderr (first 4 KiB) as the reason the
// model sees, any other exit, a crash or a timeout is logged and allows.
// The command runs in its own process group, killed as a whole when the
// timeout (default 5 s) passes. Match is a glob: with "::" it matches
// "server::tool", without it the tool name alone.
//
// The Audit log appends one JSON line per call (AuditRecord: time,
// session (its hash, trace.SessionRef, as hooks get it too), server, tool, via, class, duration_ms, outcome, error,
// trace_id, span_id) with one write per line, safe for concurrent calls.
// Call AfterCall with the tool span's context so the line carries its
// trace id.
package policy
