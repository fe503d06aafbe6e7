package upstream

import (
	"io"
	"net/http"
	"strings"
)

// A streamable HTTP server may refuse the optional GET stream (the one that
// carries its own requests and notifications). mcp-go stops listening on
// 405 and re-listens after a 404 once the session is new, but any other
// refusal (400 from a server that wants something else, 406, 415…) makes
// it try again every second for as long as the connection lives, logging
// an error each time: a server that will never offer the stream cost one
// request and one log line a second, forever. optionalStream turns such a
// permanent refusal into the 405 it means ("this server does not offer the
// stream"), so mcp-go stops once. POSTs, which carry every call, are left
// as they are.
type optionalStream struct{ next http.RoundTripper }

// RoundTrip implements http.RoundTripper.
func (t optionalStream) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil || req.Method != http.MethodGet || !permanentRefusal(resp.StatusCode) ||
		!strings.Contains(req.Header.Get("Accept"), "text/event-stream") {
		return resp, err
	}
	// The refusal's body is not read by anyone: drop it and say 405.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	_ = resp.Body.Close()
	resp.StatusCode = http.StatusMethodNotAllowed
	resp.Status = "405 Method Not Allowed (was " + resp.Status + ")"
	resp.Body = http.NoBody
	resp.ContentLength = 0
	return resp, nil
}

// permanentRefusal reports whether a 4xx answer to the GET stream will not
// change by asking again. 401 and 403 can (after a login or a token
// refresh), 404 is the session's end (mcp-go re-initializes), 408 and 429
// are about timing.
func permanentRefusal(status int) bool {
	switch status {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound,
		http.StatusMethodNotAllowed, http.StatusRequestTimeout, http.StatusTooManyRequests:
		return false
	}
	return status >= 400 && status < 500
}
