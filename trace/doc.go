// Package trace gives toolbridge OpenTelemetry traces and metrics that
// follow the semantic conventions for MCP. They see the real tool: a call
// the client makes through the tool_call meta-tool is recorded as the
// upstream tool it wraps. (The hooks and the audit log that run around
// every tool call are policy, not tracing: they live in bridge/policy.)
//
// # Spans
//
// For one bridged call, tool_call(tool_name="github::create_issue"), the
// gateway makes:
//
//	SERVER   tools/call tool_call          parent: the client's span from params._meta
//	└ INTERNAL tools/call create_issue     the real tool
//	  └ CLIENT   tools/call create_issue   the request to the upstream "github"
//	             └ (upstream's own spans, via the traceparent we inject)
//
// A direct call gives the same shape under "tools/call create_issue".
// Other requests get a SERVER span named by their method ("tools/list",
// "initialize"). Attributes (see the Attr constants): mcp.method.name,
// gen_ai.tool.name (the real tool, never tool_call: StartTool puts it on
// the server span too), gen_ai.operation.name=execute_tool,
// jsonrpc.request.id, mcp.session.id (its hash, SessionRef: the id is a
// credential), mcp.protocol.version,
// network.transport (pipe for stdio, tcp for HTTP), server.address and
// server.port of HTTP upstreams, client.address/port of HTTP clients, and
// the gateway's toolbridge.upstream, toolbridge.bridge.via (tool_call or
// direct) and toolbridge.tool.class. A failure sets status ERROR and
// error.type: the JSON-RPC code as a string (also rpc.response.status_code),
// tool_error for a result with isError, or timeout, cancelled, _OTHER. A
// tool_search span carries toolbridge.search.query_length, .limit and
// .hits. Query text, arguments (gen_ai.tool.call.arguments) and results
// (gen_ai.tool.call.result) are recorded only with
// telemetry.record_content: true, each cut at 8 KiB. Client-supplied
// strings are made valid UTF-8 first: OTLP would otherwise drop the whole
// batch.
//
// # Metrics
//
// mcp.server.operation.duration and mcp.client.operation.duration
// histograms, in seconds, with the buckets the conventions give and the
// low-cardinality attributes of their spans (no session or request ids),
// error.type included.
//
// Apart from those, Metrics (NewMetrics) holds the operator metrics that
// Prometheus scrapes at /metrics: calls, errors and latency by server and
// tool, searches and searches with no hit, sessions, upstream state,
// Redis health and the replica. They have a meter provider of their own
// with OTel's Prometheus exporter as its reader and a private registry,
// so they work with telemetry.exporter none; see metrics.go, and
// docs/platform-teams.md for the list.
//
// # Using it from a request handler
//
//	tel, err := trace.Setup(ctx, cfg.Telemetry, os.Environ(), trace.WithLogger(logger))
//	defer tel.Shutdown(shutdownCtx) // flushes; bounded by shutdownCtx
//
//	// For every request received:
//	ctx, srv := tel.StartServer(ctx, trace.Request{
//		Method: "tools/call", Target: req.Params.Name, ID: req.ID,
//		SessionID: sid, ProtocolVersion: pv, Transport: cfg.Serve.Transport,
//		Meta: req.Params.Meta.AdditionalFields, Header: httpHeader,
//	})
//	defer srv.End() // or srv.EndResult(res.IsError), srv.EndError(code, err)
//
//	// Once the real tool is resolved (bridged or direct):
//	ctx, tool := tel.StartTool(ctx, trace.ToolCall{Server: "github", Tool: "create_issue",
//		Class: class, Via: trace.ViaToolCall, Arguments: args})
//	// A policy hook (bridge/policy) that denied the call:
//	if denied {
//		tool.SetDenied(hookName, reason)
//		tool.EndResult(true)
//		return mcp.NewToolResultError(reason), nil
//	}
//	// For the upstream request:
//	ctx, up := tel.StartClient(ctx, trace.Upstream{Transport: srvCfg.UpstreamTransport(), URL: srvCfg.URL})
//	upReq.Params.Meta.AdditionalFields = tel.Inject(ctx, upReq.Params.Meta.AdditionalFields)
//	res, err := client.CallTool(ctx, upReq)
//	up.SetResult(res); up.EndResult(res.IsError) // or up.EndError(code, err)
//	tool.EndResult(res.IsError)
//
// A disabled Telemetry (exporter none, Disabled, or a nil *Telemetry)
// returns nil spans; every *Span method is a no-op on nil, so the handler
// has no branches. It still forwards the client's trace context: Extract
// and Inject work without a tracer, so the gateway never breaks a trace it
// does not record. Cost with exporter none, per tool call (server, tool
// and client span, extract and inject): about 0.1 µs and no allocation
// when the client sent no trace context, about 0.5 µs when it sent a
// traceparent that is passed on; recording into the SDK costs 15-35 µs
// (BenchmarkToolCallSpans, 2 shared cores).
//
// # Exporters and environment
//
// telemetry.exporter is none (default), otlp or stdout (which writes to
// stderr by default: stdout carries the MCP stream in stdio mode; see
// WithWriter). Spans are exported in batches and metrics periodically,
// both from background goroutines: a tool call never waits on a
// collector. The batch queue drops spans when full; after a failed export
// batches are dropped unsent for 1 s, doubling to 30 s, so a dead
// collector costs no CPU; failures are logged at most once a minute.
// Shutdown flushes and returns when its context ends, cancelling exports
// still in flight.
//
// Setup reads these variables from its environ argument, never from the
// process environment: OTEL_SDK_DISABLED; OTEL_SERVICE_NAME (default
// toolbridge); OTEL_RESOURCE_ATTRIBUTES; OTEL_EXPORTER_OTLP_ENDPOINT,
// _PROTOCOL (grpc or http/protobuf, default http/protobuf as the OTLP spec
// says), _HEADERS, _TIMEOUT, _COMPRESSION, _INSECURE and their _TRACES_ and
// _METRICS_ variants; OTEL_TRACES_EXPORTER and OTEL_METRICS_EXPORTER
// (otlp or none, to turn one signal off); OTEL_TRACES_SAMPLER and
// _SAMPLER_ARG (default parentbased_always_on: the client's sampling
// decision is followed); OTEL_BSP_SCHEDULE_DELAY, _EXPORT_TIMEOUT,
// _MAX_QUEUE_SIZE, _MAX_EXPORT_BATCH_SIZE; OTEL_METRIC_EXPORT_INTERVAL
// and _TIMEOUT. Every value is passed to the SDK explicitly. Two things
// the SDK still reads from the process environment on its own: the
// exporters' TLS certificate variables, and OTEL_RESOURCE_ATTRIBUTES,
// which it merges under ours (ours win on conflicts).
//
// Nothing global is read or written: no otel.SetTracerProvider, no global
// propagator. The W3C trace-context and baggage propagators are used
// directly by Extract and Inject.
package trace
