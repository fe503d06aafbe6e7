package trace

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if any test leaves a goroutine behind: an export
// still retrying after Shutdown.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
