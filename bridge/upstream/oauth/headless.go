package oauth

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// FollowOpener returns an Opener for authorization servers that approve
// without a person (the conformance suite's, test servers): it fetches the
// authorization URL, and delivers the redirect it answers with to the
// login's own 127.0.0.1 listener. It refuses to deliver it anywhere but
// 127.0.0.1 or localhost.
func FollowOpener(hc *http.Client) Opener {
	if hc == nil {
		hc = http.DefaultClient
	}
	noFollow := *hc
	noFollow.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return func(ctx context.Context, authURL string) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
		if err != nil {
			return fmt.Errorf("following the authorization URL: %w", err)
		}
		resp, err := noFollow.Do(req)
		if err != nil {
			return fmt.Errorf("following the authorization URL: %w", err)
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxDocBytes))
		resp.Body.Close()
		loc, err := resp.Location()
		if err != nil {
			return fmt.Errorf("following the authorization URL: status %d and no redirect", resp.StatusCode)
		}
		if h := loc.Hostname(); loc.Scheme != "http" || (h != "127.0.0.1" && h != "localhost") {
			return fmt.Errorf("following the authorization URL: it redirects to %s, not to the loopback listener", (&url.URL{Scheme: loc.Scheme, Host: loc.Host}).String())
		}
		req, err = http.NewRequestWithContext(ctx, http.MethodGet, loc.String(), nil)
		if err != nil {
			return fmt.Errorf("delivering the redirect: %w", err)
		}
		resp, err = noFollow.Do(req)
		if err != nil {
			return fmt.Errorf("delivering the redirect: %w", err)
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxDocBytes))
		resp.Body.Close()
		return nil
	}
}

// FollowPrinted plays the browser for `toolbridge auth login
// --no-browser`: it reads what the command prints (its stderr) to the end,
// copying each line to echo (if not nil), and follows the first line that
// is a URL with FollowOpener. onFail, if not nil, is called when following
// fails, so the caller can stop the command, which would otherwise wait
// for a redirect that never comes.
func FollowPrinted(ctx context.Context, printed io.Reader, echo io.Writer, onFail func()) error {
	var followErr error
	followed := false
	sc := bufio.NewScanner(printed)
	for sc.Scan() {
		line := sc.Text()
		if echo != nil {
			fmt.Fprintln(echo, line)
		}
		u := strings.TrimSpace(line)
		if followed || !(strings.HasPrefix(u, "http://") || strings.HasPrefix(u, "https://")) {
			continue
		}
		followed = true
		if followErr = FollowOpener(nil)(ctx, u); followErr != nil && onFail != nil {
			onFail()
		}
	}
	return followErr
}
