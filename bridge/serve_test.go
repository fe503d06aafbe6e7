package bridge

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/toolbridge/toolbridge/trace"
)

// TestTransportLoggerDemotesInfo: mcp-go's routine Info lines ("Delivered
// sampling response" after every elicitation and roots answer) show only
// at debug level, while its warnings and errors still show at info level.
func TestTransportLoggerDemotesInfo(t *testing.T) {
	tests := []struct {
		name  string
		level slog.Level
		log   func(*slog.Logger)
		shown bool
	}{
		{"info hidden at info level", slog.LevelInfo, func(l *slog.Logger) { l.Info("Delivered sampling response") }, false},
		{"info shown at debug level", slog.LevelDebug, func(l *slog.Logger) { l.Info("Delivered sampling response") }, true},
		{"warning kept", slog.LevelInfo, func(l *slog.Logger) { l.Warn("Delivered sampling response") }, true},
		{"error kept", slog.LevelInfo, func(l *slog.Logger) { l.With("k", "v").WithGroup("g").Error("Delivered sampling response") }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			base := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: tt.level}))
			tt.log(transportLogger(base))
			if got := strings.Contains(buf.String(), "Delivered sampling response"); got != tt.shown {
				t.Fatalf("shown = %v, want %v; log:\n%s", got, tt.shown, buf.String())
			}
		})
	}
}

// mcp-go logs session ids ("Sweeping expired session", "session", id);
// an id is a credential, so the log shows its hash.
func TestTransportLoggerHashesSessionIDs(t *testing.T) {
	var buf bytes.Buffer
	base := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	l := transportLogger(base)
	l.Info("Sweeping expired session", "session", "mcp-session-LIVE1")
	l.Warn("failed to terminate session during CloseSessions", "sessionID", "mcp-session-LIVE2", "err", "x")
	l.With("session", "mcp-session-LIVE3").Error("Failed to resume stream")
	out := buf.String()
	if strings.Contains(out, "LIVE") {
		t.Errorf("the transport log shows a session id:\n%s", out)
	}
	for _, id := range []string{"mcp-session-LIVE1", "mcp-session-LIVE2", "mcp-session-LIVE3"} {
		if !strings.Contains(out, trace.SessionRef(id)) {
			t.Errorf("the transport log lacks the hash of %s:\n%s", id, out)
		}
	}
	if !strings.Contains(out, "err=x") {
		t.Errorf("other attributes were lost:\n%s", out)
	}
}
