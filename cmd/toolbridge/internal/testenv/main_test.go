package testenv

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if any test leaves a goroutine behind: the
// waiter of a conformance server that was never stopped, an HTTP client
// still polling a health endpoint.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
