package upstream

import (
	"errors"
	"fmt"
	"reflect"
	"sort"

	"github.com/mark3labs/mcp-go/server"
	"github.com/toolbridge/toolbridge/config"
)

// Spec says how to reach one upstream server: a config entry, or an
// in-process MCP server (the demo and tests use those).
type Spec struct {
	Name   string
	Config config.Server
	// InProcess, when set, is served in this process; Config's command and
	// url are ignored.
	InProcess *server.MCPServer
}

// Transport names the spec's transport as progress lines and traces show it.
func (s Spec) Transport() string {
	if s.InProcess != nil {
		return "inprocess"
	}
	return s.Config.UpstreamTransport()
}

// RPCError is a JSON-RPC error an upstream answered with.
type RPCError struct {
	Code    int
	Message string
	Data    any
}

func (e *RPCError) Error() string { return fmt.Sprintf("%s (code %d)", e.Message, e.Code) }

// ErrUnavailable is returned for calls to an upstream that is not connected.
var ErrUnavailable = errors.New("upstream is not connected")

// SpecsFromConfig returns a Spec for every enabled server, sorted by name.
func SpecsFromConfig(cfg *config.Config) []Spec {
	specs := make([]Spec, 0, len(cfg.Servers))
	for name, s := range cfg.Servers {
		if s.Disabled {
			continue
		}
		specs = append(specs, Spec{Name: name, Config: s})
	}
	sort.Slice(specs, func(i, j int) bool { return specs[i].Name < specs[j].Name })
	return specs
}

// sameSpec reports whether a reload can keep a server's connection.
func sameSpec(a, b Spec) bool {
	return a.InProcess == b.InProcess && reflect.DeepEqual(a.Config, b.Config)
}
