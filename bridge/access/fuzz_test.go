package access_test

import (
	"context"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/toolbridge/toolbridge/bridge/access/accesstest"
)

func matchGlob(pattern, s string) (bool, error) { return path.Match(pattern, s) }

// FuzzValidate feeds the token parser arbitrary tokens: it never panics,
// never accepts one it was not given signed, and never quotes the token
// in its error.
func FuzzValidate(f *testing.F) {
	iss := accesstest.New(f)
	v := newValidator(f, iss)
	good := iss.Mint(f, "alice", audience, []string{"dev"}, "mcp:tools")
	f.Add(good)
	p := strings.Split(good, ".")
	f.Add(p[0] + "." + p[1] + ".")
	f.Add("eyJhbGciOiJub25lIn0." + p[1] + ".")
	f.Add("eyJhbGciOiJIUzI1NiIsImtpZCI6InJzYS0xIn0." + p[1] + "." + p[2])
	f.Add(p[0] + ".e30." + p[2])
	f.Add("..")
	f.Add("a.b.c")
	f.Add(strings.Repeat(".", 3000))
	f.Add("eyJhbGciOiJSUzI1NiIsImtpZCI6W119.e30.AA")
	f.Add("eyJhbGciOiJSUzI1NiIsImNyaXQiOlsiYiJdLCJiIjoxfQ." + p[1] + "." + p[2])
	f.Fuzz(func(t *testing.T, tok string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		id, err := v.Validate(ctx, tok)
		if err == nil {
			if tok != good {
				t.Fatalf("accepted a token that was not minted: %q -> %+v", tok, id)
			}
			return
		}
		if len(tok) > 12 && strings.Contains(err.Error(), tok) {
			t.Fatalf("error quotes the token: %v", err)
		}
	})
}
