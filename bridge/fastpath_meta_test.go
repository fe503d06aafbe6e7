package bridge

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// TestEncodeResultMeta: the _meta of a fast answer is json.Marshal's,
// whether it is the server's identity alone (written directly, escapes
// and all) or anything else.
func TestEncodeResultMeta(t *testing.T) {
	identity := func(name, version string) *mcp.Meta {
		m := &mcp.Meta{}
		m.SetServerInfo(mcp.Implementation{Name: name, Version: version})
		return m
	}
	withToken := identity(serverName, Version)
	withToken.ProgressToken = "p"
	withField := identity(serverName, Version)
	withField.AdditionalFields["x"] = 1
	titled := &mcp.Meta{}
	titled.SetServerInfo(mcp.Implementation{Name: serverName, Version: Version, Title: "T"})
	noIcons := &mcp.Meta{}
	noIcons.SetServerInfo(mcp.Implementation{Name: "n", Version: "v", Icons: []mcp.Icon{}})
	described := &mcp.Meta{}
	described.SetServerInfo(mcp.Implementation{Name: "n", Version: "v", WebsiteURL: "https://example.com"})
	pointer := &mcp.Meta{AdditionalFields: map[string]any{mcp.MetaKeyServerInfo: &mcp.Implementation{Name: "p", Version: "1"}}}
	for i, m := range []*mcp.Meta{
		identity(serverName, Version), identity(serverName, Version),
		identity("other", "2<&>"), identity(serverName, Version),
		identity("\u2028\"é", "\x01\\"), withToken, withField, titled, noIcons, described, pointer, {},
	} {
		want, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		got, err := encodeResultMeta(m)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("case %d: got %s, %v; want %s", i, got, err, want)
		}
	}
}
