#!/bin/sh
# The Jaeger round trip, end to end: build Jaeger if needed, start it on
# 127.0.0.1, play the scripted demo with traces exported over OTLP gRPC, read
# the traces back from Jaeger's API, and check that the span names show the
# real tool behind tool_call. Exits non-zero if any step fails.
#
#   examples/jaeger/e2e.sh        (task e2e:jaeger)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
"$here/run.sh" --build
log=$(mktemp)
"$here/run.sh" >"$log" 2>&1 &
jaeger=$!
trap 'kill $jaeger 2>/dev/null; wait $jaeger 2>/dev/null; rm -f "$log"' EXIT INT TERM

# Wait for the query API (Jaeger takes a moment to start its pipelines).
i=0
until curl -sf http://127.0.0.1:16686/api/services >/dev/null 2>&1; do
	i=$((i + 1))
	if [ "$i" -gt 120 ]; then
		echo "e2e.sh: Jaeger did not come up; its log:" >&2
		cat "$log" >&2
		exit 1
	fi
	sleep 0.5
done

cd "$root"
echo "e2e.sh: playing the demo with traces to Jaeger" >&2
OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4317 OTEL_EXPORTER_OTLP_PROTOCOL=grpc \
	OTEL_SERVICE_NAME=toolbridge-e2e go run ./cmd/toolbridge demo --script --telemetry otlp >/dev/null

# Spans arrive in batches; give Jaeger a few tries.
out=""
i=0
while [ "$i" -lt 20 ]; do
	out=$(go run ./examples/jaeger/tree -service toolbridge-e2e -lookback 10m 2>&1 || true)
	case "$out" in *"tools/call convert_units"*) break ;; esac
	i=$((i + 1))
	sleep 1
done
echo "$out"
case "$out" in
*"tools/call tool_call"*"tools/call convert_units"*) echo "e2e.sh: ok: the trace of tool_call shows the real tool" >&2 ;;
*)
	echo "e2e.sh: FAILED: no trace 'tools/call tool_call' with a child 'tools/call convert_units'" >&2
	exit 1
	;;
esac
