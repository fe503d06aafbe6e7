// Command tree prints the traces Jaeger holds for a service as indented
// span trees, from Jaeger's HTTP query API. It is the terminal view of what
// the Jaeger UI shows, and works with a Jaeger built from source, whose UI
// is only a placeholder (the UI assets are built with npm and embedded
// into release binaries only).
//
//	go run ./examples/jaeger/tree                      # service toolbridge, last hour
//	go run ./examples/jaeger/tree -tags gen_ai.tool.name=create_note -limit 3
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "tree:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("tree", flag.ContinueOnError)
	q := query{}
	fs.StringVar(&q.base, "url", "http://127.0.0.1:16686", "Jaeger query base URL")
	fs.StringVar(&q.service, "service", "toolbridge", "service name (OTEL_SERVICE_NAME)")
	fs.IntVar(&q.limit, "limit", 10, "most traces to show")
	fs.DurationVar(&q.lookback, "lookback", time.Hour, "how far back to look")
	tags := fs.String("tags", "", "only traces with these span tags: k=v[,k=v...]")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *tags != "" {
		q.tags = map[string]string{}
		for kv := range strings.SplitSeq(*tags, ",") {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				return fmt.Errorf("-tags %q: want k=v pairs separated by commas", *tags)
			}
			q.tags[k] = v
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	traces, err := fetch(ctx, q)
	if err != nil {
		return err
	}
	if len(traces) == 0 {
		fmt.Printf("no traces for service %q in the last %s\n", q.service, q.lookback)
		return nil
	}
	return render(os.Stdout, traces)
}
