package policy

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if any test leaves a goroutine behind: a hook
// whose process was never reaped, an output copier still running.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
