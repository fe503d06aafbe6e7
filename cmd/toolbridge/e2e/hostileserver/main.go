// Command hostileserver is a stdio MCP server that does what a hostile or
// careless upstream does, written by hand on the wire so that nothing in an
// SDK softens it:
//
//	hostileserver tools N   lists N tools, 1000 to a page, every tool with
//	                        a description and a small schema, as a server
//	                        that generates its tools from an API might
//	hostileserver ask       has one tool, ask, that sends
//	                        sampling/createMessage and then
//	                        elicitation/create to its client while the call
//	                        is in flight, and answers the call with the raw
//	                        JSON-RPC answers it got, one per line
//
//	hostileserver catalog FILE FIRST N
//	                        lists N real tools: those of the catalog FILE
//	                        ({"servers":[{"tools":[...]}]}, the shape of
//	                        bridge/testdata/reference-servers/catalog.json)
//	                        taken in turn from tool number FIRST of the
//	                        cycle over them, each copy past the first
//	                        renamed NAME_vK, as a catalog of many real
//	                        servers holds them
//
// All but catalog also list echo, which answers its text, and hold, which notes the
// call in the file named by its argument "called", then answers "released"
// once the file named by "release" exists: a call that is in flight for
// exactly as long as the test wants.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"strconv"
	"sync"
	"time"
)

type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   json.RawMessage `json:"error,omitempty"`
}

type server struct {
	mode  string
	tools int
	// catalog is the catalog mode's tools, as listed.
	catalog []json.RawMessage

	mu      sync.Mutex
	out     *bufio.Writer
	next    int
	waiting map[string]chan message // our requests' ids -> their answers
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: hostileserver tools N | ask | catalog FILE FIRST N")
		os.Exit(2)
	}
	s := &server{mode: os.Args[1], out: bufio.NewWriterSize(os.Stdout, 1<<20), waiting: map[string]chan message{}}
	if s.mode == "tools" {
		if len(os.Args) != 3 {
			fmt.Fprintln(os.Stderr, "usage: hostileserver tools N")
			os.Exit(2)
		}
		n, err := strconv.Atoi(os.Args[2])
		if err != nil || n < 0 {
			fmt.Fprintln(os.Stderr, "hostileserver: N must be a count")
			os.Exit(2)
		}
		s.tools = n
	}
	if s.mode == "catalog" {
		tools, err := catalogTools(os.Args[2:])
		if err != nil {
			fmt.Fprintln(os.Stderr, "hostileserver:", err)
			os.Exit(2)
		}
		s.catalog = tools
		s.tools = len(tools)
	}
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	for {
		line, err := in.ReadBytes('\n')
		if len(line) > 0 {
			var m message
			if json.Unmarshal(line, &m) == nil {
				s.handle(m)
			}
		}
		if err != nil {
			if err != io.EOF {
				fmt.Fprintln(os.Stderr, "hostileserver:", err)
			}
			return
		}
	}
}

func (s *server) write(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, _ = s.out.Write(append(b, '\n'))
	_ = s.out.Flush()
}

func (s *server) answer(id json.RawMessage, result any) {
	s.write(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
}

func (s *server) handle(m message) {
	if m.Method == "" { // an answer to one of our requests
		s.mu.Lock()
		ch := s.waiting[string(m.ID)]
		delete(s.waiting, string(m.ID))
		s.mu.Unlock()
		if ch != nil {
			ch <- m
		}
		return
	}
	if m.ID == nil {
		return // notifications need no answer
	}
	switch m.Method {
	case "initialize":
		s.answer(m.ID, map[string]any{
			"protocolVersion": "2025-11-25",
			"capabilities":    map[string]any{"tools": map[string]any{}},
			"serverInfo":      map[string]any{"name": "hostile", "version": "1"},
		})
	case "ping":
		s.answer(m.ID, map[string]any{})
	case "tools/list":
		s.listTools(m.ID, m.Params)
	case "tools/call":
		go s.call(m) // off the reader: ask waits for answers it reads
	default:
		s.write(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32601, "message": "method not found"}})
	}
}

// pageSize is how many tools one tools/list page has.
const pageSize = 1000

func (s *server) listTools(id, params json.RawMessage) {
	var p struct {
		Cursor string `json:"cursor"`
	}
	_ = json.Unmarshal(params, &p)
	first, _ := strconv.Atoi(p.Cursor) // the cursor is the index of the page's first tool
	if s.catalog != nil {
		s.listPage(id, s.catalog, first)
		return
	}
	all := 1 + s.tools // echo, then the generated ones
	if s.mode == "ask" {
		all++
	}
	var tools []any
	for i := first; i < all && i < first+pageSize; i++ {
		switch {
		case i == 0:
			tools = append(tools, tool("echo", "Echo the text back."), tool("hold", "Hold the call until the test releases it."))

		case s.mode == "ask" && i == 1:
			tools = append(tools, tool("ask", "Ask the client's model and user something while the call runs."))
		default:
			n := i - 1
			tools = append(tools, tool(fmt.Sprintf("generated_tool_%06d", n),
				fmt.Sprintf("Generated operation number %d of a very large API: reads or changes record %d.", n, n)))
		}
	}
	result := map[string]any{"tools": tools}
	if first+pageSize < all {
		result["nextCursor"] = strconv.Itoa(first + pageSize)
	}
	s.answer(id, result)
}

// listPage answers a tools/list with the page of tools from first.
func (s *server) listPage(id json.RawMessage, tools []json.RawMessage, first int) {
	first = min(max(first, 0), len(tools))
	result := map[string]any{"tools": tools[first:min(first+pageSize, len(tools))]}
	if first+pageSize < len(tools) {
		result["nextCursor"] = strconv.Itoa(first + pageSize)
	}
	s.answer(id, result)
}

// catalogTools reads the catalog mode's arguments, FILE FIRST N, and
// returns its N tools, renamed where a name comes round again.
func catalogTools(args []string) ([]json.RawMessage, error) {
	if len(args) != 3 {
		return nil, fmt.Errorf("usage: hostileserver catalog FILE FIRST N")
	}
	first, err1 := strconv.Atoi(args[1])
	n, err2 := strconv.Atoi(args[2])
	if err1 != nil || err2 != nil || first < 0 || n < 0 {
		return nil, fmt.Errorf("FIRST and N must be counts, got %q and %q", args[1], args[2])
	}
	raw, err := os.ReadFile(args[0])
	if err != nil {
		return nil, fmt.Errorf("reading the catalog: %w", err)
	}
	var cat struct {
		Servers []struct {
			Tools []map[string]any `json:"tools"`
		} `json:"servers"`
	}
	if err := json.Unmarshal(raw, &cat); err != nil {
		return nil, fmt.Errorf("decoding the catalog %s: %w", args[0], err)
	}
	var base []map[string]any
	for _, s := range cat.Servers {
		base = append(base, s.Tools...)
	}
	if len(base) == 0 {
		return nil, fmt.Errorf("the catalog %s has no tools", args[0])
	}
	tools := make([]json.RawMessage, 0, n)
	seen := map[string]bool{}
	for i := first; i < first+n; i++ {
		t := maps.Clone(base[i%len(base)])
		name, _ := t["name"].(string)
		if copyNo := i / len(base); copyNo > 0 {
			name += "_v" + strconv.Itoa(copyNo)
		}
		for seen[name] {
			name += "_2" // the reference servers share some names
		}
		seen[name] = true
		t["name"] = name
		b, err := json.Marshal(t)
		if err != nil {
			return nil, err
		}
		tools = append(tools, b)
	}
	return tools, nil
}

func tool(name, description string) map[string]any {
	return map[string]any{
		"name": name, "description": description,
		"inputSchema": map[string]any{"type": "object", "properties": map[string]any{
			"text": map[string]any{"type": "string", "description": "the text"},
		}},
	}
}

func (s *server) call(m message) {
	var p struct {
		Name      string         `json:"name"`
		Arguments map[string]any `json:"arguments"`
	}
	_ = json.Unmarshal(m.Params, &p)
	text := ""
	switch p.Name {
	case "echo":
		text, _ = p.Arguments["text"].(string)
	case "hold":
		called, _ := p.Arguments["called"].(string)
		release, _ := p.Arguments["release"].(string)
		_ = os.WriteFile(called, []byte("called\n"), 0o600)
		for {
			if _, err := os.Stat(release); err == nil {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		text = "released"
	case "ask":
		sampled := s.request("sampling/createMessage", map[string]any{
			"messages":  []any{map[string]any{"role": "user", "content": map[string]any{"type": "text", "text": "hello?"}}},
			"maxTokens": 10,
		})
		elicited := s.request("elicitation/create", map[string]any{
			"message":         "who are you?",
			"requestedSchema": map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}},
		})
		text = sampled + "\n" + elicited
	default:
		s.write(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32602, "message": "unknown tool " + p.Name}})
		return
	}
	s.answer(m.ID, map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}})
}

// request sends a request to the client and returns its answer as the raw
// JSON-RPC line (without jsonrpc and id).
func (s *server) request(method string, params any) string {
	s.mu.Lock()
	s.next++
	id := strconv.Quote("hostile-" + strconv.Itoa(s.next))
	ch := make(chan message, 1)
	s.waiting[id] = ch
	s.mu.Unlock()
	s.write(map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(id), "method": method, "params": params})
	got := <-ch
	b, _ := json.Marshal(map[string]any{"method": method, "result": got.Result, "error": got.Error})
	return string(b)
}
