package bridge

import (
	"context"
	"testing"

	"github.com/mark3labs/mcp-go/server"

	"github.com/toolbridge/toolbridge/bridge/upstream"
	"github.com/toolbridge/toolbridge/classify"
	"github.com/toolbridge/toolbridge/config"
)

// TestPrepareIndexesBeforeTheCatalogHasTheServer checks that prepare
// indexes a server's tools while the catalog does not list it yet, under
// the fingerprint the rebuild will compare with.
func TestPrepareIndexesBeforeTheCatalogHasTheServer(t *testing.T) {
	g, err := New(testConfig(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	prepared := 0
	err = g.pool.Connect(context.Background(), []upstream.Spec{{Name: "alpha", InProcess: echoServer("alpha")}}, func(u *upstream.Conn) {
		g.prepare(u)
		prepared++
		if n := len(g.Catalog().Tools); n != 0 {
			t.Errorf("catalog lists %d tools before the rebuild", n)
		}
		g.rebuildMu.Lock()
		defer g.rebuildMu.Unlock()
		want, _ := docPrint(buildCatalog([]*upstream.Conn{u}, metaNames, nil).Tools, nil)
		if got, ok := g.serverDocs["alpha"]; !ok || got != want {
			t.Errorf("after prepare the index holds fingerprint %x (%v), want %x", got, ok, want)
		}
		if hits := g.index.Search("echo the text back", 10).Hits; len(hits) == 0 || hits[0].ID != "alpha::echo" {
			t.Errorf("search after prepare = %+v, want alpha::echo first", hits)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if prepared != 1 {
		t.Fatalf("prepared %d times, want once", prepared)
	}
}

// TestConnectIndexesAndCountsLikeARebuild checks that preparing servers as
// they come up leaves what a rebuild from scratch would: each server's
// index fingerprint is that of its tools in the published catalog, and
// every tool's count is exact under the name clients see, here qualified
// because both servers list the same names (prepare counted the bare ones).
func TestConnectIndexesAndCountsLikeARebuild(t *testing.T) {
	g, _ := startGateway(t, testConfig(), map[string]*server.MCPServer{"alpha": echoServer("alpha"), "beta": echoServer("beta")})
	cat := g.Catalog()
	counter, err := classify.NewCounter(config.TokenizerO200k)
	if err != nil {
		t.Fatal(err)
	}
	byServer := map[string][]*Tool{}
	for _, tool := range cat.Tools {
		byServer[tool.Server] = append(byServer[tool.Server], tool)
		if tool.Exposed == tool.Name {
			t.Errorf("%s is exposed unqualified although both servers list it", tool.ID)
		}
		if want := counter.Count(tool.Listed()); tool.Tokens != want {
			t.Errorf("%s: %d tokens, a fresh counter says %d", tool.ID, tool.Tokens, want)
		}
	}
	g.rebuildMu.Lock()
	defer g.rebuildMu.Unlock()
	for _, name := range []string{"alpha", "beta"} {
		want, _ := docPrint(byServer[name], nil)
		if got, ok := g.serverDocs[name]; !ok || got != want {
			t.Errorf("index of %s: fingerprint %x (held %v), catalog's %x", name, got, ok, want)
		}
	}
	if hits := g.index.Search("echo the text back", 10).Hits; len(hits) < 2 {
		t.Errorf("search found %d hits, want both servers' echo", len(hits))
	}
}
