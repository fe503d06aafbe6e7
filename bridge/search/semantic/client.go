package semantic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
)

// Limits on what one request sends and one answer may hold.
const (
	// DefaultBatchSize is how many texts one request embeds: small enough
	// that a CPU-only local model answers a batch in about a second.
	DefaultBatchSize = 64
	// maxDims bounds the dimension of a vector; the largest common
	// embedding models have 4096.
	maxDims = 8192
	// maxAnswerBase and maxAnswerPerText bound an answer's size: a vector
	// of maxDims numbers in JSON is at most about 200 KB.
	maxAnswerBase    = 1 << 20
	maxAnswerPerText = 256 << 10
	// maxErrorBody is how much of an error answer is read for its message.
	maxErrorBody = 4 << 10
	// maxShownMessage is how much of the endpoint's error message an
	// error repeats.
	maxShownMessage = 200
)

// Reasons classify a failure, for logging each kind once and for spans.
const (
	ReasonTimeout     = "timeout"
	ReasonUnreachable = "unreachable"
	ReasonStatus      = "http status"
	ReasonMalformed   = "malformed answer"
	ReasonCount       = "wrong count"
	ReasonDimension   = "wrong dimension"
	ReasonNotFinite   = "not finite"
	ReasonCanceled    = "canceled"
)

// Error is a failed embedding request.
type Error struct {
	// Reason is one of the Reason constants; with ReasonStatus the
	// status code follows ("http status 401").
	Reason string
	// Err is the cause; it never holds the API key or the URL's
	// credentials.
	Err error
}

func (e *Error) Error() string { return e.Err.Error() }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// ReasonOf returns err's Reason, or "error" for an error of another kind.
func ReasonOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return "error"
}

// Embedder turns texts into vectors, one per text, in order.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// ClientOptions configure a Client.
type ClientOptions struct {
	// URL is the API's base URL ("http://127.0.0.1:11434/v1"); requests go
	// to URL + "/embeddings".
	URL string
	// Model is the model's name as the endpoint knows it.
	Model string
	// APIKey, if set, is sent as "Authorization: Bearer <key>".
	APIKey string
	// BatchSize bounds the texts of one request (default DefaultBatchSize).
	BatchSize int
	// HTTP is the client to use (default: one without a timeout of its
	// own; every call's context bounds it).
	HTTP *http.Client
	// ShowURL, if set, is how errors show the endpoint (toolbridge passes
	// config.ShowURL, its one rule for showing URLs); default Redact.
	ShowURL func(string) string
}

// Client is an Embedder for an OpenAI-compatible endpoint. It is safe for
// concurrent use.
type Client struct {
	endpoint string
	shown    string // the endpoint without credentials, for errors
	model    string
	key      string
	batch    int
	http     *http.Client
}

// NewClient checks o and returns a client.
func NewClient(o ClientOptions) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(o.URL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("creating embeddings client: invalid URL %q: want http:// or https:// with a host, no credentials, query or fragment", Redact(o.URL))
	}
	if o.Model == "" {
		return nil, errors.New("creating embeddings client: no model")
	}
	c := &Client{endpoint: u.String() + "/embeddings", model: o.Model, key: o.APIKey, batch: o.BatchSize, http: o.HTTP}
	c.shown = Redact(c.endpoint)
	if o.ShowURL != nil {
		c.shown = o.ShowURL(c.endpoint)
	}
	if c.batch <= 0 {
		c.batch = DefaultBatchSize
	}
	if c.http == nil {
		c.http = &http.Client{}
	}
	return c, nil
}

// Model returns the model's name.
func (c *Client) Model() string { return c.model }

// Redact returns raw without userinfo, query and fragment, the parts of a
// URL that may carry a secret; a URL that does not parse is "(invalid
// URL)".
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(invalid URL)"
	}
	u.User, u.RawQuery, u.Fragment, u.RawFragment = nil, "", "", ""
	return u.String()
}

// Embed embeds texts in batches and returns one vector per text. Every
// vector has the same dimension and finite components.
func (c *Client) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, 0, len(texts))
	for start := 0; start < len(texts); start += c.batch {
		vecs, err := c.embedBatch(ctx, texts[start:min(start+c.batch, len(texts))])
		if err != nil {
			return nil, err
		}
		if len(out) > 0 && len(vecs[0]) != len(out[0]) {
			return nil, c.fail(ReasonDimension, len(texts), fmt.Errorf("batches of %d and %d dimensions", len(out[0]), len(vecs[0])))
		}
		out = append(out, vecs...)
	}
	return out, nil
}

// request is the body of POST /embeddings.
type request struct {
	Model string   `json:"model"`
	Input []string `json:"input"`
}

func (c *Client) embedBatch(ctx context.Context, texts []string) ([][]float32, error) {
	body, err := json.Marshal(request{Model: c.model, Input: texts})
	if err != nil {
		return nil, c.fail(ReasonMalformed, len(texts), err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, c.fail(ReasonUnreachable, len(texts), err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, c.transportError(ctx, len(texts), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		return nil, c.fail(fmt.Sprintf("%s %d", ReasonStatus, resp.StatusCode), len(texts),
			fmt.Errorf("status %d%s", resp.StatusCode, c.errorMessage(msg)))
	}
	limit := int64(maxAnswerBase + maxAnswerPerText*len(texts))
	raw, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, c.transportError(ctx, len(texts), err)
	}
	if int64(len(raw)) > limit {
		return nil, c.fail(ReasonMalformed, len(texts), fmt.Errorf("answer larger than %d bytes", limit))
	}
	vecs, err := ParseResponse(raw, len(texts))
	if err != nil {
		return nil, c.fail(ReasonOf(err), len(texts), err)
	}
	return vecs, nil
}

// transportError classifies a failed round trip.
func (c *Client) transportError(ctx context.Context, n int, err error) error {
	var ne net.Error
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()):
		return c.fail(ReasonTimeout, n, unquoteURL(err, c.endpoint, c.shown))
	case errors.Is(ctx.Err(), context.Canceled):
		return c.fail(ReasonCanceled, n, unquoteURL(err, c.endpoint, c.shown))
	}
	return c.fail(ReasonUnreachable, n, unquoteURL(err, c.endpoint, c.shown))
}

// unquoteURL replaces the endpoint in err's text (net/http quotes it) by
// its shown form.
func unquoteURL(err error, endpoint, shown string) error {
	if endpoint == shown {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), endpoint, shown))
}

// errorMessage extracts the endpoint's error message from an error body
// ({"error":{"message":...}}, {"error":"..."} or plain text), with the
// API key cut out in case the endpoint echoes it.
func (c *Client) errorMessage(body []byte) string {
	var m struct {
		Error json.RawMessage `json:"error"`
	}
	text := strings.TrimSpace(string(body))
	if json.Unmarshal(body, &m) == nil && len(m.Error) > 0 {
		var obj struct {
			Message string `json:"message"`
		}
		var s string
		switch {
		case json.Unmarshal(m.Error, &obj) == nil && obj.Message != "":
			text = obj.Message
		case json.Unmarshal(m.Error, &s) == nil:
			text = s
		}
	}
	if c.key != "" {
		text = strings.ReplaceAll(text, c.key, "****")
	}
	text = strings.Join(strings.Fields(text), " ")
	if text == "" {
		return ""
	}
	if len(text) > maxShownMessage {
		text = text[:maxShownMessage] + "..."
	}
	return ": " + text
}

func (c *Client) fail(reason string, n int, err error) error {
	return &Error{Reason: reason, Err: fmt.Errorf("embedding %d texts at %s: %w", n, c.shown, err)}
}

// response is the part of an answer ParseResponse reads.
type response struct {
	Data []struct {
		Index     *int      `json:"index"`
		Embedding []float64 `json:"embedding"`
	} `json:"data"`
}

// notFinite finds the non-numbers some servers write into JSON.
var notFinite = regexp.MustCompile(`(?i)[\[,:]\s*"?[-+]?(nan|inf|infinity)"?\s*[\],]`)

// ParseResponse decodes an embeddings answer for n texts: exactly n
// vectors, placed by their index (answers may come in any order), of one
// dimension from 1 to 8192, every component a finite float32.
func ParseResponse(raw []byte, n int) ([][]float32, error) {
	var r response
	if err := json.Unmarshal(raw, &r); err != nil {
		reason := ReasonMalformed
		if notFinite.Match(raw) {
			reason = ReasonNotFinite
		}
		return nil, &Error{Reason: reason, Err: fmt.Errorf("decoding the answer: %w", err)}
	}
	if len(r.Data) != n {
		return nil, &Error{Reason: ReasonCount, Err: fmt.Errorf("decoding the answer: %d vectors for %d texts", len(r.Data), n)}
	}
	out := make([][]float32, n)
	dim := -1
	for i, d := range r.Data {
		idx := i
		if d.Index != nil {
			idx = *d.Index
		}
		if idx < 0 || idx >= n || out[idx] != nil {
			return nil, &Error{Reason: ReasonCount, Err: fmt.Errorf("decoding the answer: index %d out of range or repeated", idx)}
		}
		if dim < 0 {
			dim = len(d.Embedding)
		}
		if len(d.Embedding) != dim || dim == 0 || dim > maxDims {
			return nil, &Error{Reason: ReasonDimension, Err: fmt.Errorf("decoding the answer: vector %d has %d dimensions (first: %d, at most %d)", idx, len(d.Embedding), dim, maxDims)}
		}
		v := make([]float32, dim)
		for j, f := range d.Embedding {
			if math.Abs(f) > math.MaxFloat32 {
				return nil, &Error{Reason: ReasonNotFinite, Err: fmt.Errorf("decoding the answer: vector %d component %d is not a finite float32", idx, j)}
			}
			v[j] = float32(f)
		}
		out[idx] = v
	}
	return out, nil
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

func errDimension(got, want int) error {
	return fmt.Errorf("a vector of %d dimensions where the store holds %d (did the model change?)", got, want)
}
