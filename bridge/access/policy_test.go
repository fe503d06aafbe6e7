package access_test

import (
	"fmt"
	"testing"

	"github.com/toolbridge/toolbridge/bridge/access"
	"github.com/toolbridge/toolbridge/config"
)

var issueRules = []config.AccessRule{
	{Groups: []string{"dev"}, Allow: []string{"github::*", "filesystem::read_*"}},
	{Subjects: []string{"alice@example.com"}, Allow: []string{"*"}, Deny: []string{"*::delete_*"}},
	{Groups: []string{"ops"}, Allow: []string{"k8s::*", "pager::*"}, Deny: []string{"k8s::delete_*"}},
	{Subjects: []string{"mallory"}, Deny: []string{"*"}},
}

func TestPolicy(t *testing.T) {
	p := access.NewPolicy(issueRules)
	dev := &access.Identity{Subject: "bob", Groups: []string{"dev"}}
	ops := &access.Identity{Subject: "carol", Groups: []string{"ops"}}
	alice := &access.Identity{Subject: "alice@example.com"}
	aliceDev := &access.Identity{Subject: "alice@example.com", Groups: []string{"dev"}} // first match wins: the dev rule
	stranger := &access.Identity{Subject: "eve", Groups: []string{"sales"}}
	mallory := &access.Identity{Subject: "mallory", Groups: []string{"nobody"}}
	tests := []struct {
		who  *access.Identity
		id   string
		want bool
	}{
		{dev, "github::create_issue", true},
		{dev, "filesystem::read_file", true},
		{dev, "filesystem::write_file", false},
		{dev, "k8s::get_pods", false},
		{ops, "k8s::get_pods", true},
		{ops, "k8s::delete_pod", false},
		{ops, "github::create_issue", false},
		{alice, "github::delete_repo", false},
		{alice, "k8s::get_pods", true},
		{aliceDev, "k8s::get_pods", false},
		{stranger, "github::create_issue", false},
		{mallory, "github::create_issue", false},
		{nil, "github::create_issue", false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%v/%s", tt.who, tt.id), func(t *testing.T) {
			if got := p.For(tt.who).Allows(tt.id); got != tt.want {
				t.Errorf("Allows = %v, want %v", got, tt.want)
			}
		})
	}
	servers := []struct {
		who    *access.Identity
		server string
		want   bool
	}{
		{dev, "github", true}, {dev, "filesystem", true}, {dev, "k8s", false},
		{ops, "k8s", true}, {ops, "pager", true}, {ops, "github", false},
		{alice, "k8s", true}, {stranger, "github", false}, {mallory, "github", false}, {nil, "github", false},
	}
	for _, tt := range servers {
		if got := p.For(tt.who).AllowsServer(tt.server); got != tt.want {
			t.Errorf("%v AllowsServer(%s) = %v, want %v", tt.who, tt.server, got, tt.want)
		}
	}
}

func TestNoRulesAllowEverything(t *testing.T) {
	p := access.NewPolicy(nil)
	if p.Enabled() {
		t.Fatal("a policy without rules is enabled")
	}
	for _, who := range []*access.Identity{nil, {Subject: "x"}} {
		g := p.For(who)
		if !g.Everything() || !g.Allows("a::b") || !g.AllowsServer("a") {
			t.Errorf("%v: no rules must allow everything", who)
		}
	}
}

// FuzzPolicy: the matcher never panics, a denied id is never allowed, and
// an id the rule does not allow is never allowed.
func FuzzPolicy(f *testing.F) {
	f.Add("github::create_issue", "dev", "github::*", "")
	f.Add("k8s::delete_pod", "ops", "k8s::*", "k8s::delete_*")
	f.Add("a::b::c", "x", "*", "*::c")
	f.Add("[::]", "x", "[", "\\")
	f.Add("", "", "*", "")
	f.Fuzz(func(t *testing.T, id, group, allow, deny string) {
		p := access.NewPolicy([]config.AccessRule{{Groups: []string{group}, Allow: []string{allow}, Deny: []string{deny}}})
		g := p.For(&access.Identity{Subject: "s", Groups: []string{group}})
		got := g.Allows(id)
		_ = g.AllowsServer(id)
		if got && deny != "" {
			if ok, err := matchGlob(deny, id); err == nil && ok {
				t.Fatalf("%q allowed although deny %q matches it", id, deny)
			}
		}
		if got {
			if ok, err := matchGlob(allow, id); err != nil || !ok {
				t.Fatalf("%q allowed although allow %q does not match it", id, allow)
			}
		}
		if p.For(&access.Identity{Subject: "s", Groups: []string{group + "-other"}}).Allows(id) && group != "*" {
			t.Fatalf("a caller outside group %q got %q", group, id)
		}
	})
}
