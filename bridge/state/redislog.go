package state

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// go-redis writes a line to stderr for every connection it fails to
// dial ("failed to dial after 5 attempts"), which while Redis is down is
// one line per request on every replica: the opposite of the one line an
// outage gets from [Store.Check]. Its logger is process-wide, so it is
// replaced once, when this package is loaded; what Redis's health is, and
// why, is the Store's to log.
func init() { redis.SetLogger(quietLogger{}) }

// quietLogger drops go-redis's own log lines.
type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}
