package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolbridge/toolbridge/cmd/toolbridge/internal/testenv"
)

// hostileDescription would set window.__tbPwned (and open a dialog) if
// the status page ever parsed upstream text as HTML.
const hostileDescription = `Renders a report. <img src=x onerror="window.__tbPwned='img';alert('img')">` +
	`<script>window.__tbPwned='script';alert('script')</script><svg onload="window.__tbPwned='svg'">`

// chromiumPath finds Debian's chromium (CI installs it: see .ci/run).
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("no chromium on PATH: the status page test needs a real browser (apt-get install -y chromium)")
	return ""
}

// artifactDir is where screenshots go: $TOOLBRIDGE_TEST_ARTIFACTS when
// set (CI keeps it), else the test's temp dir.
func artifactDir(t *testing.T) string {
	if dir := os.Getenv("TOOLBRIDGE_TEST_ARTIFACTS"); dir != "" {
		dir = filepath.Join(dir, "status-page")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	return t.TempDir()
}

// statusPageConfig serves the npm reference servers, six servers of the
// reference catalog through drift servers, and one hostile server.
func statusPageConfig(t *testing.T) (cfg string, c *catalogFile) {
	t.Helper()
	env := testenv.NPM(t)
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "notes.md"), []byte("# notes\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c = copyCatalog(t)
	c.doc["servers"] = append(c.doc["servers"].([]any), map[string]any{
		"name": "reports",
		"tools": []any{map[string]any{
			"name": "render_report", "title": `<b onmouseover="window.__tbPwned='title'">Report</b>`,
			"description": hostileDescription,
			"inputSchema": map[string]any{"type": "object", "properties": map[string]any{
				"title": map[string]any{"type": "string", "description": `<iframe src="javascript:window.__tbPwned='iframe'"></iframe>`},
			}},
		}},
	})
	c.write(t)
	bin := driftServer.Path(t)
	var b strings.Builder
	fmt.Fprintf(&b, "state_dir: %s\ncontext_window: 100000\ntelemetry: {exporter: otlp, ui_url: \"http://127.0.0.1:16686\"}\nmcpServers:\n", t.TempDir())
	fmt.Fprintf(&b, "  filesystem: {command: %q, args: [%q]}\n", env.Bin(testenv.BinFilesystem), root)
	fmt.Fprintf(&b, "  memory: {command: %q, env: {MEMORY_FILE_PATH: %q}}\n", env.Bin(testenv.BinMemory), filepath.Join(t.TempDir(), "memory.jsonl"))
	fmt.Fprintf(&b, "  everything: {command: %q, args: [stdio]}\n", env.Bin(testenv.BinEverything))
	for _, s := range []string{"github", "gitlab", "slack", "puppeteer", "google-maps", "brave-search", "reports"} {
		fmt.Fprintf(&b, "  %s: {command: %q, args: [%q, %q]}\n", s, bin, c.path, s)
	}
	return writeConfig(t, "toolbridge.yaml", b.String()), c
}

// TestStatusPageInBrowser loads the status page in headless Chromium from
// a gateway with real servers and a hostile one: it shows the servers,
// their tool counts and the bridge decision; a search (TypeScript SDK
// client) and calls (mcp-go client) appear live; a tool whose definition
// drifts shows up as held with its diff; nothing the hostile server sent
// ever runs; and the layout fits at 1280x800 and at a phone's 390x844.
func TestStatusPageInBrowser(t *testing.T) {
	chromium := chromiumPath(t)
	npm := testenv.NPM(t)
	cfg, catalog := statusPageConfig(t)
	// Spans need an exporter for calls to carry trace ids; this one points
	// at a closed port and only logs that it cannot export.
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", fmt.Sprintf("http://127.0.0.1:%d", testenv.FreePort(t)))
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	g := startHTTP(t, "-c", cfg)

	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.WindowSize(1280, 800))...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(allocCtx)
	defer cancelBrowser()

	// Every dialog, uncaught exception and console error is recorded (and
	// dialogs dismissed): the hostile texts must open none.
	var dialogs atomic.Int32
	var mu sync.Mutex
	var problems []string
	if err := chromedp.Listen(bctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch ev := ev.(type) {
		case *runtime.EventExceptionThrown:
			problems = append(problems, "exception: "+ev.ExceptionDetails.Text)
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError {
				problems = append(problems, "console.error")
			}
		}
	}); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	opened := chromedp.Events(bctx, page.JavascriptDialogOpening)
	go func() {
		for _, err := range opened {
			if err != nil {
				return
			}
			dialogs.Add(1)
			_, _ = chromedp.Call(bctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
		}
	}()

	if err := chromedp.Do(bctx,
		chromedp.EmulateViewport(1280, 800),
		chromedp.Navigate(g.base+"/ui/"),
		chromedp.WaitVisible(chromedp.CSS(`body[data-ready="true"]`)),
	); err != nil {
		t.Fatalf("loading %s/ui/: %v\nstderr:\n%s", g.base, err, g.stderr)
	}
	eval := func(what, js string, out any) {
		t.Helper()
		v, err := chromedp.Run(bctx, chromedp.Evaluate[json.RawMessage](js))
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if err := json.Unmarshal(v, out); err != nil {
			t.Fatalf("%s: %v (%s)", what, err, v)
		}
	}
	poll := func(what, js string) {
		t.Helper()
		if _, err := chromedp.Run(bctx, chromedp.Poll[chromedp.Void](js, chromedp.WithPollingTimeout(2*time.Minute), chromedp.WithPollingInterval(100*time.Millisecond))); err != nil {
			var page string
			eval("page text", `document.body.innerText`, &page)
			t.Fatalf("waiting for %s: %v\npage:\n%s\nstderr:\n%s", what, err, page, g.stderr)
		}
	}

	// Servers with their tool counts, as /readyz has them.
	poll("every server connected", `document.querySelectorAll('.server[data-state="connected"]').length === 10`)
	var servers map[string]string
	eval("servers", `Object.fromEntries([...document.querySelectorAll('.server')].map(s =>
		[s.querySelector('.name').textContent, s.querySelector('.facts').textContent]))`, &servers)
	_, ready := waitReadyz(t, g.base)
	if len(ready.Servers) != 10 || len(servers) != 10 {
		t.Errorf("the page shows %d servers, /readyz %d, want 10", len(servers), len(ready.Servers))
	}
	for _, s := range ready.Servers {
		want := fmt.Sprintf("%d tools", s.Tools)
		if s.Tools == 1 {
			want = "1 tool"
		}
		if !strings.Contains(servers[s.Name], want) {
			t.Errorf("server %s shows %q, want %q as in /readyz", s.Name, servers[s.Name], want)
		}
	}
	if !strings.Contains(servers["github"], "26 tools") || !strings.Contains(servers["reports"], "1 tool") {
		t.Errorf("github shows %q, reports %q", servers["github"], servers["reports"])
	}
	// The bridge decision: auto bridges at this context window, and the
	// chart has both bars and the threshold line.
	var decision struct {
		Mode, Headline string
		Bars, Lines    int
	}
	eval("decision", `({mode: document.getElementById('mode').textContent,
		headline: document.getElementById('decision-headline').textContent,
		bars: document.querySelectorAll('#decision-chart rect').length,
		lines: document.querySelectorAll('#decision-chart line.threshold').length})`, &decision)
	if decision.Mode != "bridge mode" || !strings.Contains(decision.Headline, "tokens saved") || decision.Bars != 2 || decision.Lines != 1 {
		t.Errorf("decision shows %+v", decision)
	}

	// A search through the TypeScript SDK client, a hit and a miss and two
	// calls through mcp-go: all appear live.
	report, driverErr, err := npm.RunTSSession(ctx, testenv.TSSession{
		Session: testenv.SessionSearch, Transport: "http", URL: g.url,
		Searches: []testenv.TSSearch{{Query: "create an issue in a github repository", Want: "github::create_issue"}},
	})
	if err != nil {
		t.Fatalf("TypeScript SDK search: %v\n%s", err, driverErr)
	}
	for _, p := range report.Problems() {
		t.Errorf("TypeScript SDK search: %s", p)
	}
	c := mcpSession(t, g)
	call := func(name string, args map[string]any) *mcp.CallToolResult {
		t.Helper()
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = name, args
		res, err := c.CallTool(ctx, req)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return res
	}
	if res := call("tool_search", map[string]any{"query": "qzxv wplk"}); !strings.HasPrefix(textOf(res), "No tool matches") {
		t.Logf("the miss search found: %s", textOf(res))
	}
	// A client's query and an upstream's error text are shown too: both
	// carry markup here.
	call("tool_search", map[string]any{"query": `<img src=x onerror="window.__tbPwned='query'">`})
	call("tool_call", map[string]any{"name": "filesystem::read_text_file", "arguments": map[string]any{"path": `/etc/<img src=x onerror="window.__tbPwned='error'">`}})
	call("tool_call", map[string]any{"name": "slack::slack_post_message", "arguments": map[string]any{"channel_id": "C1", "text": "hi"}})
	call("tool_call", map[string]any{"name": "everything::echo", "arguments": map[string]any{"message": "hello"}})
	call("tool_call", map[string]any{"name": "filesystem::read_text_file", "arguments": map[string]any{"path": "/etc/no-such-file"}})
	poll("the calls and searches", `document.querySelectorAll('#calls li').length >= 4 && document.querySelectorAll('#searches li').length >= 3`)
	var feed struct {
		Calls, Searches []string
		Misses, Errors  int
		Traces          int
	}
	eval("feed", `({calls: [...document.querySelectorAll('#calls li .what')].map(e => e.textContent),
		searches: [...document.querySelectorAll('#searches li .what')].map(e => e.textContent),
		misses: document.querySelectorAll('#searches li.miss').length,
		errors: document.querySelectorAll('#calls li.err').length,
		traces: document.querySelectorAll('#calls a.trace[href^="http://127.0.0.1:16686/trace/"]').length})`, &feed)
	if !contains(feed.Calls, "everything::echo") || !contains(feed.Calls, "slack::slack_post_message") || feed.Errors < 1 {
		t.Errorf("calls feed %v (%d errors), want everything::echo, slack::slack_post_message and the failed read", feed.Calls, feed.Errors)
	}
	if !contains(feed.Searches, "create an issue in a github repository") || !contains(feed.Searches, "qzxv wplk") || feed.Misses < 1 {
		t.Errorf("searches feed %v (%d misses)", feed.Searches, feed.Misses)
	}
	if feed.Traces < 4 {
		t.Errorf("%d calls link to their trace, want all 4", feed.Traces)
	}
	var literal struct{ Calls, Searches bool }
	eval("markup shown as text", `({calls: document.getElementById('calls').textContent.includes('<img src=x onerror='),
		searches: document.getElementById('searches').textContent.includes('<img src=x onerror=')})`, &literal)
	if !literal.Calls || !literal.Searches {
		t.Errorf("the error text and the query with markup are not shown as text: %+v", literal)
	}

	// A definition that drifts: the tool is held, with its diff and the
	// command that approves it.
	tool := catalog.tool(t, "github", "create_issue")
	tool["description"] = tool["description"].(string) + poison
	catalog.write(t)
	poll("the held tool", `!document.getElementById('held-card').hidden && document.getElementById('held').textContent.includes('github::create_issue')`)
	var held string
	eval("held", `document.getElementById('held').textContent`, &held)
	var marked struct{ Add, Del int }
	eval("diff lines", `({add: document.querySelectorAll('#held .diff .add').length, del: document.querySelectorAll('#held .diff .del').length})`, &marked)
	if marked.Add == 0 || marked.Del == 0 {
		t.Errorf("the held tool's diff marks %d added and %d removed lines, want both", marked.Add, marked.Del)
	}
	for _, want := range []string{"toolbridge trust approve github::create_issue", "id_rsa"} {
		if !strings.Contains(held, want) {
			t.Errorf("held tools show %q, want %q in it", held, want)
		}
	}

	// The hostile tool: its texts show as text, and ran nothing.
	if err := chromedp.Do(bctx,
		chromedp.SendKeys(chromedp.CSS(`#filter`), "render_report"),
		chromedp.Click(chromedp.CSS(`#tools tbody tr`)),
		chromedp.WaitVisible(chromedp.CSS(`#schema[open]`)),
	); err != nil {
		t.Fatalf("opening the hostile tool's schema: %v", err)
	}
	var hostile struct {
		Title, Desc, Schema string
		Imgs, Scripts       int
		Pwned               any
	}
	eval("hostile", `({title: document.getElementById('schema-title').textContent,
		desc: document.getElementById('schema-desc').textContent,
		schema: document.getElementById('schema-body').textContent,
		imgs: document.querySelectorAll('img, iframe, svg:not(.bars), [onerror], [onload], [onmouseover]').length,
		scripts: document.querySelectorAll('script:not([src])').length,
		pwned: window.__tbPwned === undefined ? null : window.__tbPwned})`, &hostile)
	if hostile.Title != "reports::render_report" || !strings.Contains(hostile.Desc, `<img src=x onerror=`) || !strings.Contains(hostile.Schema, `<iframe src=`) {
		t.Errorf("the hostile tool's texts are not shown as text: %+v", hostile)
	}
	if hostile.Imgs != 0 || hostile.Scripts != 0 || hostile.Pwned != nil {
		t.Errorf("hostile markup reached the DOM or ran: %d elements, %d inline scripts, marker %v", hostile.Imgs, hostile.Scripts, hostile.Pwned)
	}
	if err := chromedp.Do(bctx, chromedp.Click(chromedp.CSS(`#schema-close`)), chromedp.SendKeys(chromedp.CSS(`#filter`), "\b\b\b\b\b\b\b\b\b\b\b\b\b")); err != nil {
		t.Fatal(err)
	}

	// Both widths: no horizontal overflow, and a screenshot of each.
	dir := artifactDir(t)
	for _, size := range []struct {
		name          string
		width, height int64
		mobile        bool
	}{{"desktop-1280x800", 1280, 800, false}, {"phone-390x844", 390, 844, true}} {
		opts := []chromedp.EmulateViewportOption{}
		if size.mobile {
			opts = append(opts, chromedp.EmulateScale(2), chromedp.EmulateMobile, chromedp.EmulateTouch)
		}
		if err := chromedp.Do(bctx, chromedp.EmulateViewport(size.width, size.height, opts...), chromedp.Sleep(300*time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		var top bool
		eval("scrolling to the top", `document.activeElement && document.activeElement.blur(), window.scrollTo(0, 0), true`, &top)
		if _, err := chromedp.Run(bctx, chromedp.Poll[chromedp.Void](`window.scrollY === 0`, chromedp.WithPollingTimeout(30*time.Second))); err != nil {
			t.Fatal(err)
		}
		var layout struct {
			ScrollWidth, InnerWidth int
			Wide                    []string
		}
		eval("layout", `({scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth,
			wide: [...document.querySelectorAll('body *')].filter(e => {
				const r = e.getBoundingClientRect();
				return r.width > 0 && r.right > window.innerWidth + 1 && !e.closest('.scroll, pre, .feed');
			}).slice(0, 5).map(e => e.tagName + '.' + e.className)})`, &layout)
		if layout.ScrollWidth > layout.InnerWidth || len(layout.Wide) > 0 {
			t.Errorf("%s: page is %dpx wide in a %dpx window; overflowing: %v", size.name, layout.ScrollWidth, layout.InnerWidth, layout.Wide)
		}
		shot, err := chromedp.Run(bctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatal(err)
		}
		full, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		for name, data := range map[string][]byte{size.name + ".png": shot, size.name + "-full.png": full} {
			path := filepath.Join(dir, name)
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("screenshot: %s", path)
		}
	}

	var pwned any
	eval("marker", `window.__tbPwned === undefined ? null : window.__tbPwned`, &pwned)
	if pwned != nil || dialogs.Load() != 0 {
		t.Errorf("hostile text ran: marker %v, %d dialogs", pwned, dialogs.Load())
	}
	mu.Lock()
	defer mu.Unlock()
	for _, p := range problems {
		t.Errorf("the page logged %s", p)
	}
}

// TestStatusPageOnStdio: a stdio gateway opens the page on ui.listen, the
// page shows its servers and the searches its client makes, and the
// listener refuses a Host that is not loopback (DNS rebinding).
func TestStatusPageOnStdio(t *testing.T) {
	addr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	cfg := demoConfig(t, "state_dir: "+t.TempDir()+"\nui: {listen: \""+addr+"\"}\n", "")
	g := startStdio(t, nil, "serve", "-c", cfg, "--mode", "on")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	want := "toolbridge: status page at http://" + addr + "/ui/"
	if out := g.stderr.WaitFor(ctx, func(s string) bool { return strings.Contains(s, want) }); !strings.Contains(out, want) {
		t.Fatalf("stderr lacks %q:\n%s", want, out)
	}
	g.call(t, "tool_search", map[string]any{"query": "add two numbers"})

	get := func(host string) (int, []byte) {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+addr+"/ui/api/state", nil)
		if host != "" {
			req.Host = host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, body
	}
	code, body := get("")
	var state struct {
		Transport string
		Servers   []struct{ Name, State string }
		Decision  struct{ Bridge bool }
	}
	if err := json.Unmarshal(body, &state); code != 200 || err != nil {
		t.Fatalf("state: %d %v\n%s", code, err, body)
	}
	if state.Transport != "stdio" || len(state.Servers) != 2 || state.Servers[0].Name != "math" || !state.Decision.Bridge {
		t.Errorf("state = %s", body)
	}
	if code, _ := get("attacker.example:80"); code != http.StatusMisdirectedRequest {
		t.Errorf("a foreign Host got %d, want 421", code)
	}
	// The search shows on the event stream.
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+addr+"/ui/api/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("the event stream ended before the search: %v", err)
		}
		if strings.HasPrefix(line, "data: ") && strings.Contains(line, `"query":"add two numbers"`) {
			break
		}
	}
}
