package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	goyaml "go.yaml.in/yaml/v3"
)

// Render returns the config with secrets masked (see Redacted) as "yaml" or
// "json", in the keys and layout a config file uses, so the output of
// `toolbridge config check` shows exactly what toolbridge will run with.
// Keys follow the order of the reference (the Config type); durations are
// written as "30s". Note that values are shown resolved: a "$" in the output
// is literal text, where a config file would need "$$".
func (c *Config) Render(format string) ([]byte, error) {
	if c == nil {
		return nil, fmt.Errorf("rendering config: nil Config")
	}
	tree := toTree(reflect.ValueOf(*c.Redacted()))
	switch strings.ToLower(format) {
	case "yaml", "yml":
		var buf bytes.Buffer
		enc := goyaml.NewEncoder(&buf)
		enc.SetIndent(2)
		if err := enc.Encode(yamlNode(tree)); err != nil {
			return nil, fmt.Errorf("rendering config as YAML: %w", err)
		}
		if err := enc.Close(); err != nil {
			return nil, fmt.Errorf("rendering config as YAML: %w", err)
		}
		return buf.Bytes(), nil
	case "json":
		var buf bytes.Buffer
		if err := writeJSON(&buf, tree, ""); err != nil {
			return nil, fmt.Errorf("rendering config as JSON: %w", err)
		}
		buf.WriteByte('\n')
		return buf.Bytes(), nil
	}
	return nil, fmt.Errorf("rendering config: unknown format %q: want yaml or json", format)
}

// omap is an object whose keys keep their order.
type omap struct {
	keys []string
	vals []any
}

// toTree converts a config value to strings, numbers, booleans, []any and
// *omap, with struct fields named and omitted as their json tags say.
func toTree(v reflect.Value) any {
	if v.Type() == durationType {
		return time.Duration(v.Int()).String()
	}
	switch v.Kind() {
	case reflect.Struct:
		m := &omap{}
		t := v.Type()
		for i := range t.NumField() {
			name, opts, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
			f := v.Field(i)
			omit := strings.Contains(opts, "omitempty") || strings.Contains(opts, "omitzero")
			if name == "-" || (omit && f.IsZero()) {
				continue
			}
			m.keys = append(m.keys, name)
			m.vals = append(m.vals, toTree(f))
		}
		return m
	case reflect.Map:
		m := &omap{}
		keys := make([]string, 0, v.Len())
		for _, k := range v.MapKeys() {
			keys = append(keys, k.String())
		}
		slices.Sort(keys)
		for _, k := range keys {
			m.keys = append(m.keys, k)
			m.vals = append(m.vals, toTree(v.MapIndex(reflect.ValueOf(k))))
		}
		return m
	case reflect.Slice:
		out := make([]any, v.Len())
		for i := range out {
			out[i] = toTree(v.Index(i))
		}
		return out
	case reflect.String:
		return v.String()
	case reflect.Bool:
		return v.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int()
	case reflect.Float32, reflect.Float64:
		return v.Float()
	case reflect.Pointer, reflect.Interface:
		// A tool rule's annotations, and its fixed arguments' values.
		if v.IsNil() {
			return nil
		}
		return toTree(v.Elem())
	}
	return fmt.Sprint(v.Interface())
}

// yamlNode builds a YAML node tree that keeps the key order of t.
func yamlNode(t any) *goyaml.Node {
	switch t := t.(type) {
	case *omap:
		n := &goyaml.Node{Kind: goyaml.MappingNode, Tag: "!!map"}
		for i, k := range t.keys {
			n.Content = append(n.Content, yamlNode(k), yamlNode(t.vals[i]))
		}
		return n
	case []any:
		n := &goyaml.Node{Kind: goyaml.SequenceNode, Tag: "!!seq"}
		if len(t) == 0 {
			n.Style = goyaml.FlowStyle
		}
		for _, v := range t {
			n.Content = append(n.Content, yamlNode(v))
		}
		return n
	}
	// With the tag given, the encoder quotes a string that would otherwise
	// read back as another type ("on", "10").
	n := &goyaml.Node{Kind: goyaml.ScalarNode}
	switch t := t.(type) {
	case string:
		n.Tag, n.Value = "!!str", t
	case bool:
		n.Tag, n.Value = "!!bool", strconv.FormatBool(t)
	case int64:
		n.Tag, n.Value = "!!int", strconv.FormatInt(t, 10)
	case float64:
		// A whole number is written as one (threshold_pct: 10); the decoder
		// takes it for a float field.
		n.Tag, n.Value = "!!float", strconv.FormatFloat(t, 'g', -1, 64)
		if t == math.Trunc(t) && math.Abs(t) < 1e15 {
			n.Tag, n.Value = "!!int", strconv.FormatInt(int64(t), 10)
		}
	default:
		n.Tag, n.Value = "!!str", fmt.Sprint(t)
	}
	return n
}

// writeJSON writes t as indented JSON, keeping the key order.
func writeJSON(buf *bytes.Buffer, t any, indent string) error {
	inner := indent + "  "
	switch t := t.(type) {
	case *omap:
		if len(t.keys) == 0 {
			buf.WriteString("{}")
			return nil
		}
		buf.WriteString("{\n")
		for i, k := range t.keys {
			buf.WriteString(inner)
			if err := writeScalar(buf, k); err != nil {
				return err
			}
			buf.WriteString(": ")
			if err := writeJSON(buf, t.vals[i], inner); err != nil {
				return err
			}
			if i < len(t.keys)-1 {
				buf.WriteByte(',')
			}
			buf.WriteByte('\n')
		}
		buf.WriteString(indent + "}")
		return nil
	case []any:
		if len(t) == 0 {
			buf.WriteString("[]")
			return nil
		}
		buf.WriteString("[\n")
		for i, v := range t {
			buf.WriteString(inner)
			if err := writeJSON(buf, v, inner); err != nil {
				return err
			}
			if i < len(t)-1 {
				buf.WriteByte(',')
			}
			buf.WriteByte('\n')
		}
		buf.WriteString(indent + "]")
		return nil
	}
	return writeScalar(buf, t)
}

// writeScalar writes one JSON scalar without HTML escaping: the output is
// for people and config files, not for embedding in web pages.
func writeScalar(buf *bytes.Buffer, v any) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	buf.Write(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
	return nil
}
