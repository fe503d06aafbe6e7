#!/bin/sh
# Builds Jaeger v2 from source with Go (once) and runs it on 127.0.0.1:
#   OTLP gRPC 127.0.0.1:4317, OTLP HTTP 127.0.0.1:4318, UI http://127.0.0.1:16686
#
#   examples/jaeger/run.sh            build if needed, then run in the foreground
#   examples/jaeger/run.sh --build    only build (examples/jaeger/build/bin/jaeger)
#
# JAEGER_BIN=/path/to/jaeger uses a binary you already have instead.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
bin=${JAEGER_BIN:-$here/build/bin/jaeger}

if [ ! -x "$bin" ]; then
	command -v go >/dev/null || { echo "run.sh: Go is needed to build Jaeger (or set JAEGER_BIN)" >&2; exit 1; }
	echo "run.sh: building Jaeger v1.76.0 (the v2 binary) into $bin; the first build downloads" >&2
	echo "run.sh: several hundred modules and compiles for a while" >&2
	start=$(date +%s)
	# GOSUMDB=off: some of Jaeger's collector modules are not in the checksum
	# database; -mod=mod lets go fill go.sum in this separate module only.
	(cd "$here/build" && GOSUMDB=off GOFLAGS=-mod=mod go build -trimpath -o "$bin" github.com/jaegertracing/jaeger/cmd/jaeger)
	echo "run.sh: built in $(( $(date +%s) - start ))s" >&2
fi

if [ "${1:-}" = "--build" ]; then
	exit 0
fi

echo "run.sh: Jaeger UI on http://127.0.0.1:16686, OTLP on 127.0.0.1:4317 (gRPC) and 127.0.0.1:4318 (HTTP)" >&2
exec "$bin" --config "$here/config.yaml"
