package main

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"
)

func TestInflightHoldsEOFUntilAnswered(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pr, pw := io.Pipe()
	track := newInflight(ctx)
	r := track.reader(pr)
	w := track.writer(io.Discard)

	go func() {
		// Split across writes: lines must be reassembled.
		for _, chunk := range []string{
			`{"jsonrpc":"2.0","id":1,"method":"tools/call"}` + "\n" + `{"jsonrpc":"2.0","id":"1","met`,
			`hod":"tools/call"}` + "\n",
			`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n",
			"not json\n",
		} {
			_, _ = pw.Write([]byte(chunk))
		}
		_ = pw.Close()
	}()

	buf := make([]byte, 8)
	done := make(chan error, 1)
	go func() {
		for {
			if _, err := r.Read(buf); err != nil {
				done <- err
				return
			}
		}
	}()

	waitFor := func(n int) {
		t.Helper()
		for track.outstanding() != n {
			select {
			case <-ctx.Done():
				t.Fatalf("outstanding = %d, want %d", track.outstanding(), n)
			case <-time.After(time.Millisecond):
			}
		}
	}
	waitFor(2) // the numeric id 1 and the string id "1" are different requests

	// A server-to-client request with the same id is not an answer.
	_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"sampling/createMessage"}` + "\n"))
	_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1.0,"result":{}}` + "\n" + `{"jsonrpc":"2.0","id":"1",`))
	waitFor(1)
	select {
	case err := <-done:
		t.Fatalf("end of input (%v) passed through with a request unanswered", err)
	default:
	}
	_, _ = w.Write([]byte(`"error":{"code":-1,"message":"x"}}` + "\n"))
	select {
	case err := <-done:
		if !errors.Is(err, io.EOF) {
			t.Errorf("read ended with %v, want EOF", err)
		}
	case <-ctx.Done():
		t.Fatal("end of input never came after every request was answered")
	}
}

func TestInflightStopsWaitingWhenContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	track := newInflight(ctx)
	r := track.reader(&oneShot{data: `{"id":7,"method":"tools/call"}` + "\n"})
	done := make(chan error, 1)
	go func() {
		_, err := io.ReadAll(r)
		done <- err
	}()
	deadline := time.After(10 * time.Second)
	for track.outstanding() != 1 {
		select {
		case <-deadline:
			t.Fatal("the request was never recorded")
		case <-time.After(time.Millisecond):
		}
	}
	cancel() // a signal: stop waiting for the unanswered request
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("ReadAll: %v", err)
		}
	case <-deadline:
		t.Fatal("end of input stayed blocked after the context ended")
	}
}

// oneShot returns data once, then EOF.
type oneShot struct {
	data string
	done bool
}

func (o *oneShot) Read(p []byte) (int, error) {
	if o.done {
		return 0, io.EOF
	}
	o.done = true
	return copy(p, o.data), nil
}
