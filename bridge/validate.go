package bridge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
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

// validate checks args (a JSON object) against schema. It returns the
// violations, one line each, or nil when args are valid. A schema that does
// not compile is not held against the call: the upstream judges it.
func (v *validators) validate(schema, args []byte) []string {
	c := v.get(schema)
	if c.err != nil {
		return nil
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(args))
	if err != nil {
		return []string{"arguments are not valid JSON: " + err.Error()}
	}
	err = c.schema.Validate(inst)
	if err == nil {
		return nil
	}
	verr, ok := err.(*jsonschema.ValidationError)
	if !ok {
		return []string{err.Error()}
	}
	var out []string
	collectViolations(verr, &out)
	sort.Strings(out)
	return out
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
