package oauth

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Transport returns an http.RoundTripper that authorizes the requests it
// passes to next (nil: http.DefaultTransport):
//
//   - With a stored token it sends "Authorization: Bearer", refreshing the
//     token first when it is about to expire. Without one it sends the
//     request as it is: OAuth applies once the server answers 401.
//   - On a 401 it renews the token (a token another process saved, else a
//     refresh, else client credentials) and sends the request once more;
//     with nothing to renew it calls Config.Authorize or fails with
//     *NeedsLoginError.
//   - On a 403 insufficient_scope it takes a token with more scope that a
//     login elsewhere stored, else authorizes again (Config.Authorize) with
//     the scopes the server asked for added, at most MaxStepUps times until
//     the server accepts a request; without Authorize the scopes are kept
//     for the next `toolbridge auth login` and the request fails with
//     *NeedsLoginError.
//
// A request whose body cannot be replayed is not retried: its 401 or 403
// is returned as it is.
func (c *Client) Transport(next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	return &authTransport{c: c, next: next}
}

type authTransport struct {
	c    *Client
	next http.RoundTripper
}

func (t *authTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.roundTrip(req)
	var nl *NeedsLoginError
	if errors.As(err, &nl) {
		msg := nl.Error()
		t.c.lastNeedsLogin.Store(&msg)
	}
	return resp, err
}

func (t *authTransport) roundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	c := t.c
	logins := 0 // authorizations this request triggered
	renewed := false
	for attempt := 0; ; attempt++ {
		token, ok, err := c.AccessToken(ctx)
		if err != nil && !IsNeedsLogin(err) {
			return nil, err
		}
		if IsNeedsLogin(err) && c.cfg.Authorize == nil {
			return nil, err
		}
		r := req
		if attempt > 0 {
			if r, err = rewind(req); err != nil {
				return nil, err
			}
		}
		if ok {
			r = r.Clone(ctx)
			r.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := t.next.RoundTrip(r)
		if err != nil {
			return nil, err
		}
		switch resp.StatusCode {
		case http.StatusUnauthorized:
			ch := ParseChallenges(resp.Header)
			if !strings.Contains(strings.ToLower(strings.Join(resp.Header.Values("WWW-Authenticate"), " ")), "bearer") && !ok {
				return resp, nil // not an OAuth server: leave the 401 to the caller
			}
			c.noteChallenge(ch)
			if !replayable(req) {
				return resp, nil
			}
			drain(resp)
			if !renewed {
				// Once per request: a token another process saved (this
				// one may not have seen it yet), a refresh, or client
				// credentials.
				renewed = true
				if _, rerr := c.renew(ctx, token); rerr == nil {
					continue
				} else if !IsNeedsLogin(rerr) {
					return nil, rerr
				}
			}
			if logins > MaxStepUps {
				return nil, c.needsLogin("the server still answers 401 after %d logins", logins)
			}
			logins++
			if err := t.authorize(req, "the server answered 401"); err != nil {
				return nil, err
			}
		case http.StatusForbidden:
			ch := ParseChallenges(resp.Header)
			if ch.Error != "insufficient_scope" || !replayable(req) {
				return resp, nil
			}
			c.noteChallenge(ch)
			drain(resp)
			if !renewed {
				// A login elsewhere may have stored a token with more
				// scope than the one this process still holds.
				renewed = true
				if r, err := c.load(ctx); err == nil && usable(r, time.Now()) && r.Token.AccessToken != token {
					continue
				}
			}
			if c.cfg.Authorize == nil && c.cfg.Grant != GrantClientCredentials {
				c.rememberStepUp(ctx)
				return nil, c.needsLogin("the server asks for scope %q", oneLine(ch.Scope, 200))
			}
			if logins > MaxStepUps || c.stepUps.Add(1) > MaxStepUps {
				return nil, c.needsLogin("the server still asks for scope %q after %d step-ups", oneLine(ch.Scope, 200), MaxStepUps)
			}
			logins++
			if err := t.authorize(req, fmt.Sprintf("the server asks for scope %q", oneLine(ch.Scope, 200))); err != nil {
				return nil, err
			}
		default:
			// The server accepted the token: step-ups start over.
			c.stepUps.Store(0)
			c.lastNeedsLogin.Store(nil)
			return resp, nil
		}
	}
}

// authorize gets a new authorization while serving req: client
// credentials directly, a login through Config.Authorize, or else the
// NeedsLoginError saying why.
func (t *authTransport) authorize(req *http.Request, why string) error {
	c := t.c
	ctx := req.Context()
	if c.cfg.Grant == GrantClientCredentials {
		c.mu.Lock()
		_, err := c.clientCredentials(ctx)
		c.mu.Unlock()
		return err
	}
	if c.cfg.Authorize == nil {
		c.rememberStepUp(ctx)
		return c.needsLogin("%s", why)
	}
	return c.cfg.Authorize(ctx, c)
}

// replayable reports whether req can be sent again.
func replayable(req *http.Request) bool {
	return req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
}

// rewind returns a copy of req with a fresh body.
func rewind(req *http.Request) (*http.Request, error) {
	r := req.Clone(req.Context())
	if req.GetBody != nil {
		b, err := req.GetBody()
		if err != nil {
			return nil, fmt.Errorf("replaying the request: %w", err)
		}
		r.Body = b
	} else if req.Body != nil && req.Body != http.NoBody {
		return nil, errors.New("replaying the request: its body cannot be read again")
	}
	return r, nil
}

// drain reads and closes a response that is answered by retrying.
func drain(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxDocBytes))
	resp.Body.Close()
}
