package classify

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolbridge/toolbridge/classify/internal/o200k"
	"github.com/toolbridge/toolbridge/config"
)

// Counter counts the tokens one tool's schema costs the client.
type Counter interface {
	// Count returns the tokens of the tool as the client receives it: the
	// JSON of its name, title, description, inputSchema, outputSchema and
	// annotations (see ToolJSON). It never fails: a tool that cannot be
	// marshalled is counted from its raw parts.
	Count(tool mcp.Tool) int
	// Name is the tokenizer's name: o200k_base or estimate.
	Name() string
	// Exact reports whether Count is a real BPE count rather than an estimate.
	Exact() bool
}

// NewCounter returns the counter for a tokenizer name: config.TokenizerO200k
// (also used for "", the default) or config.TokenizerEstimate. The returned
// counter is safe for concurrent use.
func NewCounter(name string) (Counter, error) {
	switch name {
	case config.TokenizerO200k, "":
		codec, err := o200k.New()
		if err != nil {
			return nil, fmt.Errorf("loading tokenizer %s: %w", config.TokenizerO200k, err)
		}
		return &bpeCounter{codec: codec, cache: make(map[string]int), cacheLimit: maxCacheBytes}, nil
	case config.TokenizerEstimate:
		return estimateCounter{}, nil
	}
	return nil, fmt.Errorf("unknown tokenizer %q (want %s or %s)", name, config.TokenizerO200k, config.TokenizerEstimate)
}

// ToolJSON is the JSON of the tool's fields the client's model reads: name,
// title, description, inputSchema, outputSchema and annotations. It is
// marshalled by mcp-go's own Tool.MarshalJSON, the code that serves the tool
// downstream, so key order and escaping are byte for byte what the client
// receives. _meta, defer_loading, icons and execution are left out: they are
// protocol plumbing, not prompt text. RawInputSchema and RawOutputSchema win
// over the structured schemas when set, as the gateway keeps the upstream's
// raw schema there.
//
// A tool whose schemas are raw, as the gateway's always are, takes a
// shortcut that gives the same bytes (see rawSchemaTool).
func ToolJSON(tool mcp.Tool) ([]byte, error) {
	if fastToolJSON(tool) {
		b, err := json.Marshal(rawSchemaTool{
			Annotations: tool.Annotations, Description: tool.Description, InputSchema: tool.RawInputSchema,
			Name: tool.Name, OutputSchema: tool.RawOutputSchema, Title: tool.Title,
		})
		if err == nil {
			return b, nil
		}
		// A broken schema: mcp-go's path says why, in its words.
	}
	return marshalTool(tool)
}

// rawSchemaTool is what mcp-go's Tool.MarshalJSON writes of a tool with a
// raw input schema and a raw or no output schema, minus the plumbing
// ToolJSON leaves out: the same keys, in the same order (it marshals a
// map, so sorted), omitted in the same cases, each value marshalled by the
// same encoding/json code (strings quoted and raw schemas compacted, both
// HTML-escaped). Marshalling it skips building and sorting a map per
// tool, which was most of the cost of counting a tool whose text the
// counter has seen; TestToolJSONMatchesMCPGo and FuzzToolJSON hold it to
// mcp-go's bytes.
type rawSchemaTool struct {
	Annotations  mcp.ToolAnnotation `json:"annotations"`
	Description  string             `json:"description,omitempty"`
	InputSchema  json.RawMessage    `json:"inputSchema"`
	Name         string             `json:"name"`
	OutputSchema json.RawMessage    `json:"outputSchema,omitempty"`
	Title        string             `json:"title,omitempty"`
}

// fastToolJSON reports whether rawSchemaTool marshals tool as mcp-go
// would: the input schema is raw, and the output schema raw and not empty
// (mcp-go writes an empty one and fails; omitempty would drop it) or not
// there at all.
func fastToolJSON(tool mcp.Tool) bool {
	if tool.RawInputSchema == nil {
		return false
	}
	if tool.RawOutputSchema == nil {
		return tool.OutputSchema.Type == ""
	}
	return len(tool.RawOutputSchema) > 0
}

// marshalTool is ToolJSON through mcp-go's Tool.MarshalJSON.
func marshalTool(tool mcp.Tool) ([]byte, error) {
	t := mcp.Tool{
		Name:            tool.Name,
		Title:           tool.Title,
		Description:     tool.Description,
		InputSchema:     tool.InputSchema,
		RawInputSchema:  tool.RawInputSchema,
		OutputSchema:    tool.OutputSchema,
		RawOutputSchema: tool.RawOutputSchema,
		Annotations:     tool.Annotations,
	}
	// mcp-go refuses a tool with both forms set; the raw one is what the
	// gateway serves, so drop the structured one.
	if t.RawInputSchema != nil {
		t.InputSchema = mcp.ToolInputSchema{}
	}
	if t.RawOutputSchema != nil {
		t.OutputSchema = mcp.ToolOutputSchema{}
	}
	b, err := json.Marshal(t)
	if err != nil {
		return nil, fmt.Errorf("marshalling tool %q: %w", tool.Name, err)
	}
	return b, nil
}

// toolText is what a counter tokenizes for a tool: its ToolJSON or, when
// that fails (e.g. a RawInputSchema that is not valid JSON), the raw parts
// joined, so a broken tool still costs roughly what it would if sent.
func toolText(tool mcp.Tool) []byte {
	if b, err := ToolJSON(tool); err == nil {
		return b
	}
	var b []byte
	b = append(b, tool.Name...)
	b = append(b, tool.Title...)
	b = append(b, tool.Description...)
	b = append(b, tool.RawInputSchema...)
	b = append(b, tool.RawOutputSchema...)
	return b
}

// estimateCounter is the chars/4 fallback (config.TokenizerEstimate).
type estimateCounter struct{}

func (estimateCounter) Count(tool mcp.Tool) int { return (len(toolText(tool)) + 3) / 4 }
func (estimateCounter) Name() string            { return config.TokenizerEstimate }
func (estimateCounter) Exact() bool             { return false }

// maxCacheBytes bounds the BPE cache by the bytes of its keys. A gateway
// whose upstreams keep changing their descriptions would otherwise grow it
// forever; when full it is dropped and refilled, which costs one cold count.
const maxCacheBytes = 8 << 20

// bpeCounter counts o200k_base tokens.
//
// A cold count costs tens of µs per tool, and the gateway recounts the
// whole catalog on every change, so counts are cached per
// chunk of the tool's JSON (see chunks): a chunk is roughly one JSON key or
// string value, so unchanged tools are never re-tokenized and the JSON
// structure that tools share ("type":"string","description":") is
// tokenized once. The sum of the chunks' counts equals the count of the
// whole text exactly; TestChunkedCountIsExact and FuzzClassifyCount check it.
type bpeCounter struct {
	// codec counts as github.com/tiktoken-go/tokenizer's o200k_base codec
	// does, but loads in microseconds rather than tens of milliseconds and
	// allocates nothing per piece.
	codec *o200k.Encoder

	mu         sync.RWMutex
	cache      map[string]int
	cacheBytes int
	cacheLimit int // maxCacheBytes; tests lower it
}

func (c *bpeCounter) Name() string { return config.TokenizerO200k }
func (c *bpeCounter) Exact() bool  { return true }

func (c *bpeCounter) Count(tool mcp.Tool) int { return c.countString(string(toolText(tool))) }

// countString counts the o200k_base tokens of text through the chunk cache.
func (c *bpeCounter) countString(text string) int {
	total := 0
	var missed []string
	c.mu.RLock()
	for ch := range chunks(text) {
		if n, ok := c.cache[ch]; ok {
			total += n
		} else {
			missed = append(missed, ch)
		}
	}
	c.mu.RUnlock()
	if len(missed) == 0 {
		return total
	}
	counts := make([]int, len(missed))
	for i, ch := range missed {
		n, err := c.codec.Count(ch)
		if err != nil {
			// The codec only fails on a regexp error; an estimate beats
			// reporting zero tokens for text that does cost something.
			n = (len(ch) + 3) / 4
		}
		counts[i] = n
		total += n
	}
	c.mu.Lock()
	for i, ch := range missed {
		if _, ok := c.cache[ch]; ok || len(ch) > c.cacheLimit {
			continue // another Count got there first, or too big to keep
		}
		if c.cacheBytes+len(ch) > c.cacheLimit {
			clear(c.cache)
			c.cacheBytes = 0
		}
		// Clone: the key must not pin the whole tool's text.
		c.cache[strings.Clone(ch)] = counts[i]
		c.cacheBytes += len(ch)
	}
	c.mu.Unlock()
	return total
}

// chunks splits text where the o200k_base pre-tokenizer is sure to split
// too: between an ASCII letter and a '"'. The regexp piece holding the
// letter can only be a letter run (\p{L} classes, optionally led by one
// non-letter and followed by a 's-style contraction), which cannot take a
// '"', so a piece ends there whatever comes next. The piece that starts at
// '"' depends only on the text after it (the pattern has no look-behind),
// and cutting the text there changes no earlier piece: the only construct
// that behaves differently at the end of the text is the look-ahead of
// \s+(?!\S), which needs whitespace before the cut, not a letter. So the
// pieces, hence the BPE tokens, of text are the pieces of its chunks. In
// compact JSON every key and every value ending in a letter ends a chunk.
func chunks(text string) func(yield func(string) bool) {
	return func(yield func(string) bool) {
		start := 0
		for i := 1; i < len(text); i++ {
			if text[i] == '"' && isASCIILetter(text[i-1]) {
				if !yield(text[start:i]) {
					return
				}
				start = i
			}
		}
		if start < len(text) {
			yield(text[start:])
		}
	}
}

func isASCIILetter(b byte) bool { return 'a' <= b|0x20 && b|0x20 <= 'z' }
