package access_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/toolbridge/toolbridge/bridge/access"
	"github.com/toolbridge/toolbridge/bridge/access/accesstest"
	"github.com/toolbridge/toolbridge/config"
)

// BenchmarkValidateWarm is what validation adds to a request once the
// JWKS is cached and the client reuses its token (every MCP client does):
// the bar is < 20 µs.
func BenchmarkValidateWarm(b *testing.B) {
	iss := accesstest.New(b)
	v := newValidator(b, iss, "mcp:tools")
	tok := iss.Mint(b, "alice", audience, []string{"dev"}, "mcp:tools")
	ctx := context.Background()
	if _, err := v.Validate(ctx, tok); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := v.Validate(ctx, tok); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkValidateNewToken is a token seen for the first time (warm
// JWKS): the signature check itself.
func BenchmarkValidateNewToken(b *testing.B) {
	iss := accesstest.New(b)
	v := newValidator(b, iss)
	ctx := context.Background()
	if _, err := v.Validate(ctx, iss.Mint(b, "warm", audience, nil, "")); err != nil {
		b.Fatal(err)
	}
	toks := make([]string, 256)
	for i := range toks {
		toks[i] = iss.Mint(b, fmt.Sprintf("user-%d", i), audience, []string{"dev"}, "")
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		// Distinct tokens, each validated once per pass: the cache is
		// bypassed by making a fresh validator every len(toks) tokens.
		if i%len(toks) == 0 {
			b.StopTimer()
			v = newValidator(b, iss)
			_, _ = v.Validate(ctx, toks[0])
			i++
			b.StartTimer()
		}
		if _, err := v.Validate(ctx, toks[i%len(toks)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkAccessCheck is one tool checked against the issue's rules in a
// catalog of 10,000 tools: the bar is < 5 µs per check.
func BenchmarkAccessCheck(b *testing.B) {
	p := access.NewPolicy(append([]config.AccessRule{
		{Groups: []string{"g1"}, Allow: []string{"s1::*"}},
		{Groups: []string{"g2"}, Allow: []string{"s2::*", "s3::read_*"}},
		{Groups: []string{"g3"}, Allow: []string{"s4::*"}, Deny: []string{"*::delete_*"}},
	}, issueRules...))
	ids := make([]string, 10000)
	for i := range ids {
		ids[i] = fmt.Sprintf("server%d::tool_%d_delete_or_read", i%100, i)
	}
	who := &access.Identity{Subject: "alice@example.com", Groups: []string{"sales", "eng"}}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		_ = p.For(who).Allows(ids[i%len(ids)])
		i++
	}
}
