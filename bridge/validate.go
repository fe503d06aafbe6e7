package bridge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/toolbridge/toolbridge/bridge/jsonscan"
)

// validators compiles each tool's input schema once and caches it by the
// schema's bytes, so a catalog rebuild that keeps a tool unchanged keeps its
// compiled schema too.
type validators struct {
	mu    sync.Mutex
	cache map[string]*compiled
}

type compiled struct {
	schema *jsonschema.Schema
	err    error // the schema itself could not be compiled
}

func newValidators() *validators { return &validators{cache: map[string]*compiled{}} }

// maxCachedSchemas bounds the cache; past it, the cache starts over (a
// catalog that churns schemas that fast gains nothing from caching).
const maxCachedSchemas = 50000

// get returns the compiled schema, or an error if the schema itself is
// broken. Compiling never fetches anything: $refs to other documents fail
// instead of reaching the network.
func (v *validators) get(schema []byte) *compiled {
	v.mu.Lock()
	// The conversion in the index expression does not copy the schema: the
	// hit path, every tool_call, allocates nothing here.
	c, ok := v.cache[string(schema)]
	v.mu.Unlock()
	if ok {
		return c
	}
	key := string(schema)
	c = &compiled{}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err == nil {
		comp := jsonschema.NewCompiler()
		comp.UseLoader(noLoader{})
		comp.DefaultDraft(jsonschema.Draft2020)
		if err = comp.AddResource("toolbridge:///input.json", doc); err == nil {
			c.schema, err = comp.Compile("toolbridge:///input.json")
		}
	}
	c.err = err
	v.mu.Lock()
	if len(v.cache) >= maxCachedSchemas {
		v.cache = map[string]*compiled{}
	}
	v.cache[key] = c
	v.mu.Unlock()
	return c
}

// noLoader refuses every external $ref: validation must not reach the
// network, and the machine may have none.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("toolbridge does not load external schema %s", url)
}

// validate checks doc against schema, strictly: it returns the
// violations, one line each, or nil when doc is valid. A schema that does
// not compile is not held against doc.
func (v *validators) validate(schema, doc []byte) []string {
	_, problems := v.check(schema, doc, false)
	return problems
}

// validateArgs checks a tool call's args (a JSON object) against the
// tool's input schema. It returns the arguments to forward and the
// violations, one line each, or nil when the arguments are valid.
//
// Hosts and tools such as Inspector's --tool-arg send every argument as a
// string. A string where the schema wants a number, an integer or a
// boolean, and only there, is converted when it parses exactly as one
// (see convertScalar); the converted arguments are then validated and, if
// valid, forwarded instead of args. Valid arguments are never touched, and
// anything that does not convert gets the schema's own error.
//
// A schema that does not compile is not held against the call: the
// upstream judges it.
func (v *validators) validateArgs(schema, args []byte) ([]byte, []string) {
	return v.check(schema, args, true)
}

// check is validate, converting strings first when convert is set.
func (v *validators) check(schema, doc []byte, convert bool) ([]byte, []string) {
	c := v.get(schema)
	if c.err != nil {
		return doc, nil
	}
	inst, err := decodeInstance(doc)
	if err != nil {
		return doc, []string{"arguments are not valid JSON: " + err.Error()}
	}
	err = c.schema.Validate(inst)
	if err == nil {
		return doc, nil
	}
	verr, ok := err.(*jsonschema.ValidationError)
	if !ok {
		return doc, []string{err.Error()}
	}
	if convert && convertStrings(inst, verr) {
		switch err := c.schema.Validate(inst).(type) {
		case nil:
			return compactJSON(inst), nil
		case *jsonschema.ValidationError:
			// What is left is wrong whatever the spelling: report that,
			// not the strings that did convert.
			verr = err
		}
	}
	var out []string
	collectViolations(verr, &out)
	sort.Strings(out)
	return doc, out
}

// decodeInstance is jsonschema.UnmarshalJSON(doc), the instance a schema
// validates (objects as map[string]any, numbers as json.Number), read in
// place for a document whose keys are plain (see decodePlain). The
// decoder jsonschema.UnmarshalJSON sets up for a call's few arguments was
// most of what decoding them cost, and a tenth of the gateway's own
// allocations a tool_call (#25). Anything else, an invalid document
// among it, gets jsonschema.UnmarshalJSON and its error.
// FuzzDecodeInstance holds it to jsonschema.UnmarshalJSON.
func decodeInstance(doc []byte) (any, error) {
	if json.Valid(doc) {
		i := jsonscan.SkipSpace(doc, 0)
		if v, ok := decodePlain(doc[i:jsonscan.SkipValue(doc, i)]); ok {
			return v, nil
		}
	}
	return jsonschema.UnmarshalJSON(bytes.NewReader(doc))
}

// decodePlain decodes value, one JSON value of a valid document, as
// encoding/json's decoder with UseNumber decodes it into an any; ok is
// false for an object with a key that has escapes or bytes beyond ASCII,
// and for a string that is not valid UTF-8 (both left to the decoder).
func decodePlain(value []byte) (v any, ok bool) {
	switch value[0] {
	case '{':
		obj := map[string]any{}
		ok = jsonscan.Members(value, func(key, member []byte) bool {
			var mv any
			if mv, ok = decodePlain(member); ok {
				obj[string(key)] = mv
			}
			return ok
		})
		return obj, ok
	case '[':
		arr := []any{}
		i := jsonscan.SkipSpace(value, 1)
		for value[i] != ']' {
			end := jsonscan.SkipValue(value, i)
			ev, ok := decodePlain(value[i:end])
			if !ok {
				return nil, false
			}
			arr = append(arr, ev)
			if i = jsonscan.SkipSpace(value, end); value[i] == ',' {
				i = jsonscan.SkipSpace(value, i+1)
			}
		}
		return arr, true
	case '"':
		return jsonscan.String(value)
	case 't':
		return true, true
	case 'f':
		return false, true
	case 'n':
		return nil, true
	}
	return json.Number(value), true
}

// convertStrings replaces, in inst, each string that verr reports where
// the schema wants a number, integer or boolean and that parses exactly as
// one. It reports whether it replaced any.
func convertStrings(inst any, verr *jsonschema.ValidationError) bool {
	// Every type error for one location (anyOf branches give several).
	wants := map[string][]string{}
	var locs [][]string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		for _, c := range e.Causes {
			walk(c)
		}
		t, ok := e.ErrorKind.(*kind.Type)
		if !ok || t.Got != "string" || len(e.InstanceLocation) == 0 {
			return
		}
		key := strings.Join(e.InstanceLocation, "\x00")
		if _, seen := wants[key]; !seen {
			locs = append(locs, e.InstanceLocation)
		}
		wants[key] = append(wants[key], t.Want...)
	}
	walk(verr)
	changed := false
	for _, loc := range locs {
		parent, last := locate(inst, loc[:len(loc)-1]), loc[len(loc)-1]
		switch p := parent.(type) {
		case map[string]any:
			if s, ok := p[last].(string); ok {
				if val, ok := convertScalar(s, wants[strings.Join(loc, "\x00")]); ok {
					p[last], changed = val, true
				}
			}
		case []any:
			if i, err := strconv.Atoi(last); err == nil && i >= 0 && i < len(p) {
				if s, ok := p[i].(string); ok {
					if val, ok := convertScalar(s, wants[strings.Join(loc, "\x00")]); ok {
						p[i], changed = val, true
					}
				}
			}
		}
	}
	return changed
}

// locate follows a JSON pointer's tokens from v; nil when there is no
// such value.
func locate(v any, path []string) any {
	for _, tok := range path {
		switch c := v.(type) {
		case map[string]any:
			v = c[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil
			}
			v = c[i]
		default:
			return nil
		}
	}
	return v
}

var (
	// integerText is a JSON integer literal: no sign but '-', no leading
	// zeros, no fraction or exponent ("1.0" and "1e3" are not integers
	// here, though JSON Schema would accept them: a server that reads an
	// int would not).
	integerText = regexp.MustCompile(`^-?(0|[1-9][0-9]*)$`)
	// numberText is a JSON number literal: no '+', spaces, hex, NaN or
	// Infinity.
	numberText = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$`)
)

// convertScalar converts s to one of the wanted JSON types when it is
// exactly that type's literal: "true"/"false" for a boolean, a JSON
// integer or number literal for those. It tries boolean, integer, number,
// in that order.
func convertScalar(s string, want []string) (any, bool) {
	has := func(t string) bool { return slices.Contains(want, t) }
	switch {
	case has("boolean") && (s == "true" || s == "false"):
		return s == "true", true
	case has("integer") && integerText.MatchString(s):
		return json.Number(s), true
	case has("number") && numberText.MatchString(s):
		return json.Number(s), true
	}
	return nil, false
}

var printer = message.NewPrinter(language.English)

// collectViolations flattens the error tree into its leaves, each as
// "at /path: message" (the root is "at the top level").
func collectViolations(e *jsonschema.ValidationError, out *[]string) {
	if len(e.Causes) > 0 {
		for _, c := range e.Causes {
			collectViolations(c, out)
		}
		return
	}
	where := "at the top level"
	if len(e.InstanceLocation) > 0 {
		where = "at /" + strings.Join(e.InstanceLocation, "/")
	}
	*out = append(*out, where+": "+e.ErrorKind.LocalizedString(printer))
}

// ResultChecker checks tool results the way strict clients do (the
// official TypeScript SDK, MCP Inspector): a tool that declares an output
// schema must answer with structuredContent unless the answer is an
// error, and structuredContent, when present, must validate against the
// schema (JSON Schema 2020-12). It caches compiled schemas; it is safe
// for concurrent use.
type ResultChecker struct{ v *validators }

// NewResultChecker returns an empty checker.
func NewResultChecker() *ResultChecker { return &ResultChecker{v: newValidators()} }

// Check returns why a strict client would reject res as tool's answer,
// one line each; nil when it would accept it. A declared output schema
// that does not compile is a reason too: the client cannot check anything
// against it.
func (c *ResultChecker) Check(tool mcp.Tool, res *mcp.CallToolResult) []string {
	schema := outputSchemaOf(tool)
	if schema == nil {
		return nil
	}
	if res.StructuredContent == nil {
		if res.IsError {
			return nil
		}
		return []string{fmt.Sprintf("%s declares an output schema but returned no structuredContent", tool.Name)}
	}
	doc, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return []string{fmt.Sprintf("encoding %s's structuredContent: %v", tool.Name, err)}
	}
	if compiled := c.v.get(schema); compiled.err != nil {
		return []string{fmt.Sprintf("compiling %s's output schema: %v", tool.Name, compiled.err)}
	}
	problems := c.v.validate(schema, doc)
	for i, p := range problems {
		problems[i] = "structuredContent " + p
	}
	return problems
}

// outputSchemaOf returns a tool's declared output schema as JSON, nil when
// it declares none: the raw bytes a gateway keeps, or the typed form a
// client decoded.
func outputSchemaOf(tool mcp.Tool) []byte {
	if len(tool.RawOutputSchema) > 0 {
		return tool.RawOutputSchema
	}
	if tool.OutputSchema.Type == "" {
		return nil
	}
	b, err := json.Marshal(tool.OutputSchema)
	if err != nil {
		return nil
	}
	return b
}
