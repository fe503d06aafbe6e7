package upstream

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if any test leaves a goroutine behind: a
// transport reader of an upstream that was never closed, a supervisor
// still reconnecting, a cancellation notice still being sent.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
