// Package ui is the gateway's status page: a read-only web page, served by
// the gateway itself, that shows the servers, the bridge decision, the
// tools and the held ones, and the calls and searches as they happen.
//
// The page is plain HTML, CSS and JavaScript embedded with go:embed: it
// needs no network and no build step. Everything it shows that came from an
// upstream (names, descriptions, error texts) is attacker-controlled, so
// the script builds the DOM with textContent only, and every response
// carries a Content-Security-Policy that allows no inline script or style.
//
// The package knows nothing of MCP or of the gateway: the gateway hands it
// a Snapshot function and records activity into an Activity.
package ui
