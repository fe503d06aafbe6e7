// Command demo-server serves one of toolbridge's built-in demo MCP servers
// (see examples/demo) as a standalone process, over stdio or streamable
// HTTP. Example configs use it as a real upstream, and stdio benchmarks
// use it as a child process.
//
// Usage:
//
//	demo-server NAME                      serve NAME over stdio
//	demo-server -http 127.0.0.1:8931 NAME serve NAME at http://127.0.0.1:8931/mcp
//	demo-server -list                     print the server names, one a line
//
// Logs go to stderr only: on stdio, stdout carries nothing but JSON-RPC.
// SIGINT or SIGTERM stops the server; in stdio mode so does closing stdin.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/toolbridge/toolbridge/examples/demo"
)

// shutdownGrace bounds how long in-flight HTTP requests may finish.
const shutdownGrace = 5 * time.Second

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is main without the process globals, so it can be tested. It returns
// the exit code: 0 on a clean stop, 1 on a runtime failure, 2 on bad usage.
func run(ctx context.Context, argv []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("demo-server", flag.ContinueOnError)
	fs.SetOutput(stderr)
	list := fs.Bool("list", false, "print the demo server names, one a line, and exit")
	httpAddr := fs.String("http", "", "serve streamable HTTP at http://`ADDR`/mcp (e.g. 127.0.0.1:8931) instead of stdio")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: demo-server [-http ADDR] NAME\n       demo-server -list\n\nNAME is one of: %s\n\n", strings.Join(demo.Names(), ", "))
		fs.PrintDefaults()
	}
	name, err := parseArgs(fs, argv)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "demo-server: %v\n", err)
		fs.Usage()
		return 2
	}
	if *list {
		for _, n := range demo.Names() {
			fmt.Fprintln(stdout, n)
		}
		return 0
	}
	if name == "" {
		fmt.Fprintln(stderr, "demo-server: name a demo server to serve")
		fs.Usage()
		return 2
	}
	srv, ok := demo.Lookup(name)
	if !ok {
		fmt.Fprintf(stderr, "demo-server: unknown demo server %q; choose one of: %s\n", name, strings.Join(demo.Names(), ", "))
		return 2
	}
	tools := len(srv.MCP.ListTools())
	if *httpAddr != "" {
		err = serveHTTP(ctx, srv, tools, *httpAddr, stderr)
	} else {
		fmt.Fprintf(stderr, "demo-server: serving %s (%d tools) on stdio\n", srv.Name, tools)
		err = serveStdio(ctx, srv.MCP, stdin, stdout, stderr)
	}
	if err != nil {
		fmt.Fprintf(stderr, "demo-server: %v\n", err)
		return 1
	}
	return 0
}

// parseArgs accepts flags before or after the server name.
func parseArgs(fs *flag.FlagSet, argv []string) (string, error) {
	if err := fs.Parse(argv); err != nil {
		return "", err
	}
	if fs.NArg() == 0 {
		return "", nil
	}
	name := fs.Arg(0)
	if err := fs.Parse(fs.Args()[1:]); err != nil {
		return "", err
	}
	if fs.NArg() > 0 {
		return "", fmt.Errorf("unexpected arguments after %q: %s", name, strings.Join(fs.Args(), " "))
	}
	return name, nil
}

// serveStdio serves until stdin closes (after answering every request
// read) or ctx ends.
func serveStdio(ctx context.Context, s *server.MCPServer, stdin io.Reader, stdout, stderr io.Writer) error {
	ss := server.NewStdioServer(s)
	ss.SetErrorLogger(log.New(stderr, "demo-server: ", 0))
	track := newInflight(ctx)
	err := ss.Listen(ctx, track.reader(stdin), track.writer(stdout))
	if err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("serving stdio: %w", err)
	}
	return nil
}

// serveHTTP serves streamable HTTP at /mcp until ctx ends, then shuts down
// gracefully. The first stderr line names the URL (useful with port 0).
func serveHTTP(ctx context.Context, srv demo.Server, tools int, addr string, stderr io.Writer) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", addr, err)
	}
	mcpHandler := server.NewStreamableHTTPServer(srv.MCP)
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcpHandler)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}

	fmt.Fprintf(stderr, "demo-server: serving %s (%d tools) at http://%s/mcp\n", srv.Name, tools, ln.Addr())
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok && !tcp.IP.IsLoopback() {
		fmt.Fprintln(stderr, "demo-server: warning: listening beyond loopback with no authentication")
	}

	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("serving HTTP: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	// Close the MCP sessions first so open event streams end and the
	// HTTP server can go idle.
	mcpErr := mcpHandler.Shutdown(sctx)
	httpErr := hs.Shutdown(sctx)
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving HTTP: %w", err)
	}
	if err := errors.Join(mcpErr, httpErr); err != nil {
		return fmt.Errorf("shutting down: %w", err)
	}
	return nil
}
