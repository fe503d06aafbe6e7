package search

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/toolbridge/toolbridge/config/toolid"
)

// Bounds on schema flattening, so a hostile schema cannot blow up a
// document.
const (
	maxParamDepth = 4
	maxParams     = 256
	maxEnumValues = 64
)

// toolJSON is the part of an MCP tool's JSON form that search uses.
type toolJSON struct {
	Name        string          `json:"name"`
	Title       string          `json:"title"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
	Annotations struct {
		Title string `json:"title"`
	} `json:"annotations"`
}

// schemaJSON is the part of a JSON Schema that search uses.
type schemaJSON struct {
	Title       string                     `json:"title"`
	Description string                     `json:"description"`
	Enum        []any                      `json:"enum"`
	Properties  map[string]json.RawMessage `json:"properties"`
	Items       json.RawMessage            `json:"items"`
}

// DocumentFromToolJSON builds a Document from one MCP tool in its JSON form
// (name, title, description, inputSchema, annotations.title). Parameters
// are the schema's properties, nested ones as dotted paths ("prefs.size");
// a parameter's description carries its title and enum values, because
// requests often mention a value ("large", "celsius") rather than the
// parameter. The gateway can marshal an mcp.Tool and pass it here.
func DocumentFromToolJSON(server string, raw []byte) (Document, error) {
	var t toolJSON
	if err := json.Unmarshal(raw, &t); err != nil {
		return Document{}, fmt.Errorf("decoding tool of server %q: %w", server, err)
	}
	if t.Name == "" {
		return Document{}, fmt.Errorf("decoding tool of server %q: %w", server, errors.New("tool has no name"))
	}
	d := Document{
		ID:          toolid.Join(server, t.Name),
		Server:      server,
		Name:        t.Name,
		Title:       t.Title,
		Description: t.Description,
	}
	if d.Title == "" {
		d.Title = t.Annotations.Title
	}
	d.Params = appendParams(d.Params, "", t.InputSchema, 0)
	return d, nil
}

// appendParams flattens the properties of a JSON Schema into params.
// Malformed sub-schemas are skipped: a tool with an odd schema is still
// worth finding by its name and description.
func appendParams(dst []Param, prefix string, raw json.RawMessage, depth int) []Param {
	if len(raw) == 0 || depth >= maxParamDepth {
		return dst
	}
	var s schemaJSON
	if json.Unmarshal(raw, &s) != nil {
		return dst
	}
	if len(s.Properties) == 0 && len(s.Items) > 0 {
		return appendParams(dst, prefix, s.Items, depth+1)
	}
	names := make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if len(dst) >= maxParams {
			break
		}
		var p schemaJSON
		if json.Unmarshal(s.Properties[n], &p) != nil {
			continue
		}
		desc := []string{p.Title, p.Description}
		for i, e := range p.Enum {
			if i == maxEnumValues {
				break
			}
			if v, ok := e.(string); ok {
				desc = append(desc, v)
			}
		}
		dst = append(dst, Param{Name: prefix + n, Description: strings.TrimSpace(strings.Join(desc, " "))})
		dst = appendParams(dst, prefix+n+".", s.Properties[n], depth+1)
	}
	return dst
}

// ServerDocs is one server's tools as read from a catalog file.
type ServerDocs struct {
	Server string
	Docs   []Document
}

// LoadCatalog reads a catalog in the shared benchmark format:
// {"servers":[{"name":..., "tools":[MCP tool JSON, ...]}]}.
func LoadCatalog(path string) ([]ServerDocs, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading catalog: %w", err)
	}
	var c struct {
		Servers []struct {
			Name  string            `json:"name"`
			Tools []json.RawMessage `json:"tools"`
		} `json:"servers"`
	}
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("decoding catalog %s: %w", path, err)
	}
	out := make([]ServerDocs, 0, len(c.Servers))
	for _, s := range c.Servers {
		sd := ServerDocs{Server: s.Name}
		for _, raw := range s.Tools {
			d, err := DocumentFromToolJSON(s.Name, raw)
			if err != nil {
				return nil, fmt.Errorf("loading catalog %s: %w", path, err)
			}
			sd.Docs = append(sd.Docs, d)
		}
		out = append(out, sd)
	}
	return out, nil
}

// Query is one benchmark query with the ids of the tools that answer it.
type Query struct {
	ID       string   `json:"id"`
	Query    string   `json:"query"`
	Relevant []string `json:"relevant"`
}

// LoadQueries reads a queries.jsonl file: one Query per line.
func LoadQueries(path string) ([]Query, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening queries: %w", err)
	}
	defer f.Close()
	var out []Query
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for line := 1; sc.Scan(); line++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var q Query
		if err := json.Unmarshal(sc.Bytes(), &q); err != nil {
			return nil, fmt.Errorf("decoding %s line %d: %w", path, line, err)
		}
		if len(q.Relevant) == 0 {
			return nil, fmt.Errorf("decoding %s line %d: %w", path, line, errors.New("query has no relevant tools"))
		}
		out = append(out, q)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return out, nil
}
