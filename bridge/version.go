package bridge

// Version is toolbridge's version, reported to upstreams and clients. The
// release build sets it with -ldflags "-X github.com/toolbridge/toolbridge/bridge.Version=...".
var Version = "0.1.0-dev"
