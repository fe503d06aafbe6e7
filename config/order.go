package config

import (
	"bytes"
	"encoding/json"
	"regexp"
	"slices"
	"strings"

	goyaml "go.yaml.in/yaml/v3"
)

// ServerNames returns the configured server names in the order the config
// file lists them, then any others (from defaults a program passed in)
// sorted. Where one choice among servers must be made by a rule a user
// can predict (which server's copy of a shared core tool name is listed),
// the order they wrote is that rule.
func (c *Config) ServerNames() []string {
	out := make([]string, 0, len(c.Servers))
	seen := make(map[string]bool, len(c.Servers))
	for _, name := range c.serverOrder {
		if _, ok := c.Servers[name]; ok && !seen[name] {
			seen[name] = true
			out = append(out, name)
		}
	}
	var rest []string
	for name := range c.Servers {
		if !seen[name] {
			rest = append(rest, name)
		}
	}
	slices.Sort(rest)
	return append(out, rest...)
}

// SetServerOrder records the order of the servers, as a config file lists
// them; for programs and tests that build a Config without a file.
func (c *Config) SetServerOrder(names []string) { c.serverOrder = slices.Clone(names) }

// fileServerOrder reads the keys of the mcpServers object of a config
// file in the order written. The parsers toolbridge loads with give maps,
// which forget it. A file it cannot read gives nil: the order is a
// preference, and the load reports the file's real errors.
func fileServerOrder(format string, b []byte) []string {
	switch format {
	case "YAML":
		var doc goyaml.Node
		if goyaml.Unmarshal(b, &doc) != nil || len(doc.Content) == 0 {
			return nil
		}
		return yamlKeys(yamlValue(doc.Content[0], "mcpServers"))
	case "JSON":
		return jsonServerKeys(b)
	case "TOML":
		var out []string
		for _, m := range tomlServer.FindAllSubmatch(b, -1) {
			name := string(m[1])
			if name == "" {
				name = string(m[2])
			}
			if !slices.Contains(out, name) {
				out = append(out, name)
			}
		}
		return out
	}
	return nil
}

// tomlServer matches a table header [mcpServers.NAME] or
// [mcpServers."NAME"] (also of a sub-table, [mcpServers.NAME.env]).
var tomlServer = regexp.MustCompile(`(?m)^\s*\[\s*mcpServers\s*\.\s*(?:"([^"]+)"|([A-Za-z0-9_-]+))`)

// yamlValue returns the value of key in a mapping node, following
// aliases; nil when absent.
func yamlValue(n *goyaml.Node, key string) *goyaml.Node {
	for n != nil && n.Kind == goyaml.AliasNode {
		n = n.Alias
	}
	if n == nil || n.Kind != goyaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// yamlKeys lists a mapping node's keys in order.
func yamlKeys(n *goyaml.Node) []string {
	for n != nil && n.Kind == goyaml.AliasNode {
		n = n.Alias
	}
	if n == nil || n.Kind != goyaml.MappingNode {
		return nil
	}
	var out []string
	for i := 0; i+1 < len(n.Content); i += 2 {
		out = append(out, n.Content[i].Value)
	}
	return out
}

// jsonServerKeys lists the keys of the top-level "mcpServers" object.
func jsonServerKeys(b []byte) []string {
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil
		}
		key, _ := t.(string)
		if key != "mcpServers" {
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				return nil
			}
			continue
		}
		if t, err := dec.Token(); err != nil || t != json.Delim('{') {
			return nil
		}
		var out []string
		for dec.More() {
			t, err := dec.Token()
			if err != nil {
				return out
			}
			name, _ := t.(string)
			out = append(out, strings.Clone(name))
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				return out
			}
		}
		return out
	}
	return nil
}
