package upstream

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sync/atomic"

	"github.com/toolbridge/toolbridge/config"
)

// HTTP upstreams get the same bound on one message as stdio ones
// (max_result_bytes, see lineLimiter): mcp-go reads a JSON answer whole and
// an event stream a line at a time, both without a limit, so a server
// answering with gigabytes would grow the gateway without end. The bound is
// applied to response bodies, below mcp-go, by the http.Client it is given.

// TooLargeError says an HTTP upstream sent a message longer than
// max_result_bytes.
type TooLargeError struct{ Limit int64 }

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("the server's message exceeded max_result_bytes (%d bytes)", e.Limit)
}

// httpClient is the client an HTTP upstream's transport uses: its response
// bodies are bounded by the upstream's max_result_bytes.
func (u *Conn) httpClient() *http.Client {
	limit := u.MessageLimit()
	u.httpTr = newHTTPTransport()
	var next http.RoundTripper = u.httpTr
	if u.auth != nil {
		// Tokens go on below the bound, so a retry after a refresh is
		// bounded like any answer.
		next = u.auth.Transport(next)
	}
	legacySSE := u.spec.Config.UpstreamTransport() == config.TransportSSE
	if !legacySSE {
		// The legacy SSE transport's GET stream is the connection itself:
		// a refusal there must stay an error.
		next = optionalStream{next: next}
	}
	return &http.Client{Transport: &limitTransport{next: next, limit: limit, answersOnStream: legacySSE}}
}

// maxIdleConnsPerUpstream is how many idle keep-alive connections an
// HTTP upstream's transport keeps. Every downstream session's calls to one
// upstream share its connection, so under load as many requests are in
// flight to it as there are busy sessions; net/http's default of 2 idle
// connections per host would close all but 2 as each answer came back and
// dial again for the next request: a TCP handshake (and a TLS one for an
// https upstream) per call, and sockets left in TIME_WAIT. 64 is the
// default max_in_flight of one session.
const maxIdleConnsPerUpstream = 64

// newHTTPTransport returns the transport of one HTTP upstream: net/http's
// default one (proxy from the environment, dial and TLS timeouts, HTTP/2)
// keeping enough idle connections for the calls in flight to it. Each
// upstream has its own, so closing the upstream closes its idle
// connections too, instead of leaving them in a pool shared by the process.
func newHTTPTransport() *http.Transport {
	base, ok := http.DefaultTransport.(*http.Transport)
	if !ok {
		// A program that replaced the default transport (with a
		// tracing wrapper, say) still gets net/http's settings.
		base = &http.Transport{Proxy: http.ProxyFromEnvironment, ForceAttemptHTTP2: true}
	}
	tr := base.Clone()
	tr.MaxIdleConns = maxIdleConnsPerUpstream
	tr.MaxIdleConnsPerHost = maxIdleConnsPerUpstream
	return tr
}

// limitTransport bounds the response bodies of next. An event stream
// (text/event-stream) lives as long as the session, so only each of its
// lines is bounded; every other body is bounded as a whole. A body past the
// bound fails its next Read with a *TooLargeError; it never holds more than
// what the caller reads.
type limitTransport struct {
	next  http.RoundTripper
	limit int64
	// answersOnStream is set for the legacy SSE transport, where every
	// answer comes on the one event stream. A message on it past the limit
	// ends the stream, and with it every answer still awaited; streamErr
	// records why, for those requests to report.
	answersOnStream bool
	streamErr       atomic.Pointer[TooLargeError]
}

// RoundTrip implements http.RoundTripper.
func (t *limitTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	body := &limitedBody{rc: resp.Body, limit: t.limit}
	if o := overflowFrom(req.Context()); o != nil {
		// A request's own answer.
		body.report = o.set
		if t.answersOnStream {
			o.stream.Store(t)
		}
	} else if t.answersOnStream {
		// The event stream (no request of the gateway's waits on it).
		body.report = func(e *TooLargeError) { t.streamErr.CompareAndSwap(nil, e) }
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "text/event-stream" {
		body.perLine = true
	} else if resp.ContentLength > t.limit {
		// Known to be too long: fail before a byte of it is read.
		body.fail()
	}
	resp.Body = body
	return resp, nil
}

// limitedBody is a response body that fails once it (or, with perLine, its
// current line) grows past limit.
type limitedBody struct {
	rc      io.ReadCloser
	limit   int64
	perLine bool
	n       int64                // bytes of the body, or of the line since the last '\n'
	err     error                // sticky, once the limit is passed
	report  func(*TooLargeError) // told when the limit is passed, if set
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	// Reading at most one byte past the limit means a read that passes it
	// holds only bytes of the message that is too long: whatever came
	// before it in the same read is never withheld from the caller.
	if room := b.limit - b.n + 1; int64(len(p)) > room {
		p = p[:room]
	}
	n, err := b.rc.Read(p)
	b.n += int64(n)
	if b.perLine {
		if i := bytes.LastIndexByte(p[:n], '\n'); i >= 0 {
			b.n = int64(n - i - 1)
		}
	}
	if b.n > b.limit {
		return 0, b.fail()
	}
	return n, err
}

// fail makes the body fail from now on, and says so to report.
func (b *limitedBody) fail() error {
	e := &TooLargeError{Limit: b.limit}
	b.err = e
	if b.report != nil {
		b.report(e)
	}
	return e
}

// Close implements io.Closer. A body left unread is not drained: closing
// it drops the connection.
func (b *limitedBody) Close() error { return b.rc.Close() }

// overflow records that the answer to one upstream request passed the
// bound. mcp-go does not always pass a read error on (an event stream that
// breaks off ends in "unexpected nil response"; a legacy SSE call whose
// stream broke, in "connection has been closed"), so the request's context
// carries an overflow to the transport, which fills it in.
type overflow struct {
	err    atomic.Pointer[TooLargeError]
	stream atomic.Pointer[limitTransport] // legacy SSE: where the answer comes
}

type overflowKey struct{}

// watchOverflow returns a context whose HTTP responses report to the
// returned overflow.
func watchOverflow(ctx context.Context) (context.Context, *overflow) {
	o := &overflow{}
	return context.WithValue(ctx, overflowKey{}, o), o
}

func overflowFrom(ctx context.Context) *overflow {
	o, _ := ctx.Value(overflowKey{}).(*overflow)
	return o
}

func (o *overflow) set(e *TooLargeError) { o.err.CompareAndSwap(nil, e) }

// failed returns why the answer was cut off, or nil if it was not.
func (o *overflow) failed() error {
	if e := o.err.Load(); e != nil {
		return e
	}
	if t := o.stream.Load(); t != nil {
		if e := t.streamErr.Load(); e != nil {
			return e
		}
	}
	return nil
}
