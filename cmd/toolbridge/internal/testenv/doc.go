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
//   - [RunConformance] and [RunScenarios] drive the conformance suite's CLI
//     against a URL and parse its per-scenario checks.json files.
//
// When a tool cannot be installed the helpers fail the test with the full
// npm or go output; they never skip, so a green run means the real servers ran.
package testenv
