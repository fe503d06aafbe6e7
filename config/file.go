package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	kjson "github.com/knadh/koanf/parsers/json"
	"github.com/knadh/koanf/parsers/toml/v2"
	"github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/providers/file"
	gotoml "github.com/pelletier/go-toml/v2"
	goyaml "go.yaml.in/yaml/v3"
)

// parser is the part of koanf.Parser the file layer needs.
type parser interface {
	Unmarshal([]byte) (map[string]any, error)
}

// formats maps a file extension to its parser and the name used in errors.
func parserFor(path string) (parser, string, bool) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".yaml", ".yml":
		return yaml.Parser(), "YAML", true
	case ".json":
		return kjson.Parser(), "JSON", true
	case ".toml":
		return toml.Parser(), "TOML", true
	}
	return nil, "", false
}

// readFile reads and parses the config file into a raw tree, and the
// names of its servers in the order written (see fileServerOrder). Every
// error is an *Error whose Source is path.
func readFile(path string) (map[string]any, []string, error) {
	p, format, ok := parserFor(path)
	if !ok {
		ext := filepath.Ext(path)
		if ext == "" {
			ext = "no extension"
		} else {
			ext = strconv.Quote(ext)
		}
		return nil, nil, &Error{Source: path, Msg: fmt.Sprintf("unknown config format (%s): name the file .yaml, .yml, .json or .toml", ext)}
	}
	b, err := file.Provider(path).ReadBytes()
	if err != nil {
		msg := err.Error()
		var pe *fs.PathError
		switch {
		case errors.Is(err, fs.ErrNotExist):
			msg = "file not found"
		case errors.As(err, &pe):
			msg = "reading: " + pe.Err.Error()
		}
		return nil, nil, &Error{Source: path, Msg: msg, err: err}
	}
	// Windows editors may start a file with a byte order mark, which the
	// JSON parser refuses.
	b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, nil, &Error{Source: path, Msg: fmt.Sprintf("file is empty: want a %s object with at least \"mcpServers\"", format)}
	}
	m, err := p.Unmarshal(b)
	if err != nil {
		e := syntaxError(format, b, err)
		e.Source = path
		return nil, nil, e
	}
	if m == nil && format == "JSON" {
		return nil, nil, &Error{Source: path, Msg: "the top level must be a JSON object, got null"}
	}
	return m, fileServerOrder(format, b), nil
}

var yamlLine = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)

// syntaxError turns a parser's error into an *Error with the line (and
// column, where the parser gives one) and a message without parser jargon.
func syntaxError(format string, b []byte, err error) *Error {
	e := &Error{Msg: err.Error(), err: err}
	var (
		jsonSyntax *json.SyntaxError
		jsonType   *json.UnmarshalTypeError
		tomlErr    *gotoml.DecodeError
		yamlType   *goyaml.TypeError
	)
	switch {
	case errors.As(err, &jsonSyntax):
		e.Line, e.Column = lineCol(b, jsonSyntax.Offset)
		e.Msg = strings.TrimPrefix(jsonSyntax.Error(), "json: ")
	case errors.As(err, &jsonType):
		e.Line, e.Column = lineCol(b, jsonType.Offset)
		switch {
		case strings.HasPrefix(jsonType.Value, "number "):
			// A number too large for float64, such as 1e400.
			e.Msg = jsonType.Value + " is out of range"
		default:
			e.Msg = fmt.Sprintf("the top level must be a JSON object, got %s", article(jsonType.Value))
		}
	case errors.As(err, &tomlErr):
		e.Line, e.Column = tomlErr.Position()
		e.Msg = strings.TrimPrefix(tomlErr.Error(), "toml: ")
		if k := tomlErr.Key(); len(k) > 0 {
			e.Key = strings.Join(k, ".")
		}
	case errors.As(err, &yamlType):
		// Duplicate keys, or a top level that is not a mapping.
		msgs := make([]string, 0, len(yamlType.Errors))
		for i, te := range yamlType.Errors {
			msg := te
			// The first error's line goes in front; the others keep theirs.
			if m := yamlLine.FindStringSubmatch(te); m != nil && i == 0 {
				e.Line, _ = strconv.Atoi(m[1])
				msg = m[2]
			}
			if strings.Contains(msg, "cannot unmarshal") && strings.Contains(msg, "into map") {
				msg = "the top level must be a mapping of key: value pairs"
			}
			msgs = append(msgs, msg)
		}
		e.Msg = strings.Join(msgs, "; ")
	case format == "YAML":
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		if m := yamlLine.FindStringSubmatch(msg); m != nil {
			e.Line, _ = strconv.Atoi(m[1])
			msg = m[2]
		}
		if line := tabIndentedLine(b); line > 0 && strings.Contains(msg, "cannot start any token") {
			e.Line = line
			msg += " (YAML does not allow tabs for indentation; use spaces)"
		}
		e.Msg = msg
	default:
		// go-toml reports some problems, such as duplicate keys, without a
		// position.
		e.Msg = strings.TrimPrefix(err.Error(), "toml: ")
	}
	if e.Line == 0 {
		e.Column = 0
	}
	e.Msg = "invalid " + format + ": " + e.Msg
	return e
}

// tabIndentedLine returns the 1-based number of the first line indented
// with a tab, or 0.
func tabIndentedLine(b []byte) int {
	for i, line := range bytes.Split(b, []byte("\n")) {
		if trimmed := bytes.TrimLeft(line, " "); len(trimmed) > 0 && trimmed[0] == '\t' {
			return i + 1
		}
	}
	return 0
}

// lineCol converts a byte offset in b to a 1-based line and column.
func lineCol(b []byte, off int64) (int, int) {
	if off < 0 {
		return 0, 0
	}
	if off > int64(len(b)) {
		off = int64(len(b))
	}
	before := b[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	col := int(off) - (bytes.LastIndexByte(before, '\n') + 1)
	if col < 1 {
		col = 1
	}
	return line, col
}

// article prefixes a JSON kind ("array", "string") with a or an.
func article(kind string) string {
	if kind != "" && strings.ContainsRune("aeiou", rune(kind[0])) {
		return "an " + kind
	}
	return "a " + kind
}
