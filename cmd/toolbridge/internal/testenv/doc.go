// Package testenv gives toolbridge's end-to-end tests real MCP servers and the
// official MCP conformance suite.
//
// Everything is installed on demand into a cache directory that is shared by
// every test process on the machine and never committed:
//
//   - [NPM] installs the npm packages pinned in npm/package-lock.json (the
//     reference servers filesystem, memory and everything, and
//     @modelcontextprotocol/conformance) with `npm ci`, once per lockfile.
//   - [ConformanceServer] builds mcp-go's examples/conformance server, once per
//     mcp-go version, and runs it on a free loopback port.
//   - [RunSuite] runs every server scenario of the conformance suite in one
//     CLI process against a URL; [RunConformance] runs one scenario,
//     [RunScenarios] a list, and [RetryFailed] reruns failures. Verdicts come
//     from the per-scenario checks.json files the CLI writes.
//   - [DirectBaseline] is the golden list of scenarios that pass directly
//     against mcp-go's server; [Regressions] compares a run against it.
//   - [ChildProcesses], [DescendantProcesses] and [ProcessAlive] read /proc so
//     tests can assert that no server process outlives them.
//
// When a tool cannot be installed the helpers fail the test with the full
// npm or go output; they never skip, so a green run means the real servers ran.
package testenv
