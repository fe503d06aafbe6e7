// Package upstream is toolbridge's client side: the connections to the
// upstream MCP servers the config names, and the pool that keeps them up.
//
// One role per file:
//
//   - spec.go: how to reach a server (Spec), and the errors a request
//     returns (RPCError, ErrUnavailable);
//   - conn.go: one connection (Conn): the handshake, requests, loss and
//     closing;
//   - list.go: listing what a server offers, paginated, keeping tool
//     schemas as the raw JSON the server sent (DecodeTool);
//   - child.go: a stdio server's process: started in its own process
//     group, stopped in the MCP spec's order, reaped to say how it ended
//     (or that it is still starting at the connect timeout);
//   - linelimit.go and httplimit.go: the bound on one message from a
//     stdio or an HTTP server (max_result_bytes);
//   - relay.go: what flows from a server to the client that caused it
//     (progress, log messages, sampling, elicitation, roots);
//   - pool.go: connecting every server in parallel (each joins as it comes
//     up) and reloading; supervise.go: the supervisor that reconnects a
//     lost server with backoff;
//   - activity.go: counting work in flight so closing can wait for it;
//   - tail.go: the tail of a child's stderr, for error messages.
//
// It imports only config (and toolid) of toolbridge's own packages: the
// gateway in bridge builds on it, never the other way round.
package upstream
