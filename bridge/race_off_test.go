//go:build !race

package bridge

// raceEnabled says the race detector is on: it makes every call several
// times slower, so absolute latency bounds do not hold under it.
const raceEnabled = false
