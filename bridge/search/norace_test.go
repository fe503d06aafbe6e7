//go:build !race

package search

// raceEnabled says the race detector is on: tests that run hundreds of
// thousands of searches sample them instead.
const raceEnabled = false
