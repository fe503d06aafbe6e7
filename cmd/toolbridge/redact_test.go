package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/toolbridge/toolbridge/config"
)

// TestStderrShowsURLsAsConfigured checks the stderr writer: upstream URLs
// show as scheme://host:port with the path and values masked until a
// config with show_full_urls is loaded; the login URL is printed whole.
func TestStderrShowsURLsAsConfigured(t *testing.T) {
	var buf strings.Builder
	w := &redactingWriter{w: &buf}
	a := &app{io: stdio{err: w}}
	line := `Post "https://actions.example.com/sk-PATHSECRET/mcp?hmac=HMACSECRET&api_key=KEYSECRET": 404` + "\n"

	fmt.Fprint(a.io.err, line)
	a.configLoaded(&config.Config{ShowFullURLs: true})
	fmt.Fprint(a.io.err, line)
	a.configLoaded(&config.Config{})
	fmt.Fprint(a.io.err, line)
	fmt.Fprint(a.unredactedErr(), "https://as.example.com/authorize?client_id=c&state=s\n")

	want := `Post "https://actions.example.com:443/****/mcp?hmac=****&api_key=****": 404
Post "https://actions.example.com/sk-PATHSECRET/mcp?hmac=HMACSECRET&api_key=****": 404
Post "https://actions.example.com:443/****/mcp?hmac=****&api_key=****": 404
https://as.example.com/authorize?client_id=c&state=s
`
	if got := buf.String(); got != want {
		t.Errorf("stderr:\n%s\nwant:\n%s", got, want)
	}
}
