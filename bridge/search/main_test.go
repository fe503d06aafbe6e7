package search

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if any test leaves a goroutine behind: the
// package fans work out to goroutines and must always wait for them.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
