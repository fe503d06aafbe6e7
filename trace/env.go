package trace

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// OTLP protocols (OTEL_EXPORTER_OTLP_PROTOCOL).
const (
	ProtocolGRPC         = "grpc"
	ProtocolHTTPProtobuf = "http/protobuf"
)

// DefaultServiceName is service.name when OTEL_SERVICE_NAME is unset.
const DefaultServiceName = "toolbridge"

// signal is the OTLP settings of one signal (traces or metrics).
type signal struct {
	// protocol is grpc or http/protobuf.
	protocol string
	// endpoint is the full URL: for gRPC scheme://host:port, for HTTP the
	// URL including the signal path (/v1/traces).
	endpoint    string
	headers     map[string]string
	timeout     time.Duration
	compression string // "gzip" or "none"
	disabled    bool   // OTEL_{TRACES,METRICS}_EXPORTER=none
}

// settings is everything Setup reads from the environment. It is parsed
// from an explicit environ slice, never from os.Getenv, so tests are
// hermetic and the gateway decides which variables count.
type settings struct {
	serviceName   string
	resource      []attribute.KeyValue
	sdkDisabled   bool
	traces        signal
	metrics       signal
	sampler       sdktrace.Sampler
	batchDelay    time.Duration
	exportTimeout time.Duration
	queueSize     int
	batchSize     int
	metricEvery   time.Duration
	metricTimeout time.Duration
}

// envMap turns environ ("KEY=value" entries) into a map; a later entry
// wins over an earlier one, as with exec.Cmd.Env. Entries without "=" are
// skipped.
func envMap(environ []string) map[string]string {
	m := make(map[string]string, len(environ))
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			continue
		}
		m[k] = v
	}
	return m
}

// parseSettings reads the standard OTEL_* variables that Setup honours.
// Every bad value is an error naming the variable.
func parseSettings(environ []string) (settings, error) {
	env := envMap(environ)
	get := func(k string) string { return strings.TrimSpace(env[k]) }
	s := settings{serviceName: DefaultServiceName}
	var err error

	if s.sdkDisabled, err = parseBool(get("OTEL_SDK_DISABLED"), "OTEL_SDK_DISABLED"); err != nil {
		return s, err
	}
	if s.resource, err = parseResourceAttrs(get("OTEL_RESOURCE_ATTRIBUTES")); err != nil {
		return s, err
	}
	for _, kv := range s.resource {
		if kv.Key == "service.name" && kv.Value.AsString() != "" {
			s.serviceName = kv.Value.AsString()
		}
	}
	if v := get("OTEL_SERVICE_NAME"); v != "" {
		s.serviceName = v
	}
	if s.traces, err = parseSignal(get, "TRACES", "/v1/traces"); err != nil {
		return s, err
	}
	if s.metrics, err = parseSignal(get, "METRICS", "/v1/metrics"); err != nil {
		return s, err
	}
	if s.sampler, err = parseSampler(get("OTEL_TRACES_SAMPLER"), get("OTEL_TRACES_SAMPLER_ARG")); err != nil {
		return s, err
	}
	ms := []struct {
		key string
		def time.Duration
		dst *time.Duration
	}{
		{"OTEL_BSP_SCHEDULE_DELAY", 5 * time.Second, &s.batchDelay},
		{"OTEL_BSP_EXPORT_TIMEOUT", 30 * time.Second, &s.exportTimeout},
		{"OTEL_METRIC_EXPORT_INTERVAL", 60 * time.Second, &s.metricEvery},
		{"OTEL_METRIC_EXPORT_TIMEOUT", 30 * time.Second, &s.metricTimeout},
	}
	for _, m := range ms {
		if *m.dst, err = parseMillis(get(m.key), m.key, m.def); err != nil {
			return s, err
		}
	}
	if s.queueSize, err = parsePositive(get("OTEL_BSP_MAX_QUEUE_SIZE"), "OTEL_BSP_MAX_QUEUE_SIZE", sdktrace.DefaultMaxQueueSize); err != nil {
		return s, err
	}
	if s.batchSize, err = parsePositive(get("OTEL_BSP_MAX_EXPORT_BATCH_SIZE"), "OTEL_BSP_MAX_EXPORT_BATCH_SIZE", sdktrace.DefaultMaxExportBatchSize); err != nil {
		return s, err
	}
	return s, nil
}

// parseSignal reads the generic OTEL_EXPORTER_OTLP_* variables and their
// per-signal overrides (OTEL_EXPORTER_OTLP_TRACES_*).
func parseSignal(get func(string) string, name, path string) (signal, error) {
	pick := func(suffix string) (key, val string) {
		key = "OTEL_EXPORTER_OTLP_" + name + "_" + suffix
		if v := get(key); v != "" {
			return key, v
		}
		key = "OTEL_EXPORTER_OTLP_" + suffix
		return key, get(key)
	}
	var sig signal
	switch v := strings.ToLower(get("OTEL_" + name + "_EXPORTER")); v {
	case "", "otlp":
	case "none":
		sig.disabled = true
	default:
		return sig, fmt.Errorf("OTEL_%s_EXPORTER=%q: want otlp or none (toolbridge picks the exporter with telemetry.exporter)", name, v)
	}

	key, proto := pick("PROTOCOL")
	switch proto {
	case "":
		// The OTLP specification's default.
		proto = ProtocolHTTPProtobuf
	case ProtocolGRPC, ProtocolHTTPProtobuf:
	default:
		return sig, fmt.Errorf("%s=%q: want %s or %s", key, proto, ProtocolGRPC, ProtocolHTTPProtobuf)
	}
	sig.protocol = proto

	_, insecureRaw := pick("INSECURE")
	insecure, err := parseBool(insecureRaw, "OTEL_EXPORTER_OTLP_INSECURE")
	if err != nil {
		return sig, err
	}
	perSignalKey := "OTEL_EXPORTER_OTLP_" + name + "_ENDPOINT"
	if v := get(perSignalKey); v != "" {
		// A per-signal endpoint is used as is, path included.
		if sig.endpoint, err = endpointURL(perSignalKey, v, insecure); err != nil {
			return sig, err
		}
	} else {
		base := get("OTEL_EXPORTER_OTLP_ENDPOINT")
		if base == "" {
			base = "http://localhost:4318"
			if proto == ProtocolGRPC {
				base = "http://localhost:4317"
			}
		}
		u, err := endpointURL("OTEL_EXPORTER_OTLP_ENDPOINT", base, insecure)
		if err != nil {
			return sig, err
		}
		if proto == ProtocolHTTPProtobuf {
			// The generic endpoint is a base URL: the signal path is
			// appended (spec: "/v1/traces" relative to it).
			u = strings.TrimSuffix(u, "/") + path
		}
		sig.endpoint = u
	}

	key, hdrs := pick("HEADERS")
	if sig.headers, err = parseKeyValues(hdrs, key); err != nil {
		return sig, err
	}
	key, t := pick("TIMEOUT")
	if sig.timeout, err = parseMillis(t, key, 10*time.Second); err != nil {
		return sig, err
	}
	key, c := pick("COMPRESSION")
	switch c = strings.ToLower(c); c {
	case "", "none":
		sig.compression = "none"
	case "gzip":
		sig.compression = "gzip"
	default:
		return sig, fmt.Errorf("%s=%q: want gzip or none", key, c)
	}
	return sig, nil
}

// endpointURL validates an endpoint. A value without a scheme
// ("collector:4317") gets https://, or http:// when
// OTEL_EXPORTER_OTLP_INSECURE is true, as the Go SDK does.
func endpointURL(key, v string, insecure bool) (string, error) {
	if !strings.Contains(v, "://") {
		scheme := "https://"
		if insecure {
			scheme = "http://"
		}
		v = scheme + v
	}
	u, err := url.Parse(v)
	if err != nil {
		return "", fmt.Errorf("parsing %s=%q: %w", key, v, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("%s=%q: want an http:// or https:// URL such as http://localhost:4317", key, v)
	}
	if u.Host == "" {
		return "", fmt.Errorf("%s=%q: the URL names no host", key, v)
	}
	return u.String(), nil
}

// parseKeyValues parses the W3C-baggage-like list used by
// OTEL_EXPORTER_OTLP_HEADERS and OTEL_RESOURCE_ATTRIBUTES:
// "k1=v1,k2=v2" with percent-encoded values.
func parseKeyValues(v, key string) (map[string]string, error) {
	if v == "" {
		return map[string]string{}, nil
	}
	out := map[string]string{}
	for item := range strings.SplitSeq(v, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		k, val, ok := strings.Cut(item, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("%s: entry %q is not key=value", key, item)
		}
		dec, err := url.PathUnescape(strings.TrimSpace(val))
		if err != nil {
			return nil, fmt.Errorf("decoding %s entry %q: %w", key, item, err)
		}
		out[k] = dec
	}
	return out, nil
}

// parseResourceAttrs parses OTEL_RESOURCE_ATTRIBUTES into attributes in a
// stable order.
func parseResourceAttrs(v string) ([]attribute.KeyValue, error) {
	m, err := parseKeyValues(v, "OTEL_RESOURCE_ATTRIBUTES")
	if err != nil {
		return nil, err
	}
	kvs := make([]attribute.KeyValue, 0, len(m))
	for k, val := range m {
		kvs = append(kvs, attribute.String(k, val))
	}
	// A *attribute.Set sorts them; we only need determinism for tests.
	set := attribute.NewSet(kvs...)
	return set.ToSlice(), nil
}

// parseBool accepts the spec's "true"/"false" (any case) and "" as false.
func parseBool(v, key string) (bool, error) {
	switch strings.ToLower(v) {
	case "", "false":
		return false, nil
	case "true":
		return true, nil
	}
	return false, fmt.Errorf("%s=%q: want true or false", key, v)
}

// parseMillis reads a duration given in milliseconds; "" gives def.
func parseMillis(v, key string, def time.Duration) (time.Duration, error) {
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%s=%q: want a positive number of milliseconds", key, v)
	}
	return time.Duration(n) * time.Millisecond, nil
}

// parsePositive reads a positive int; "" gives def.
func parsePositive(v, key string, def int) (int, error) {
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%s=%q: want a positive integer", key, v)
	}
	return n, nil
}

// parseSampler reads OTEL_TRACES_SAMPLER and its argument. The default,
// parentbased_always_on, follows a client's sampling decision.
func parseSampler(name, arg string) (sdktrace.Sampler, error) {
	ratio := func() (float64, error) {
		if arg == "" {
			return 1, nil
		}
		f, err := strconv.ParseFloat(arg, 64)
		if err != nil || f < 0 || f > 1 {
			return 0, fmt.Errorf("OTEL_TRACES_SAMPLER_ARG=%q: want a ratio between 0 and 1", arg)
		}
		return f, nil
	}
	switch strings.ToLower(name) {
	case "", "parentbased_always_on":
		return sdktrace.ParentBased(sdktrace.AlwaysSample()), nil
	case "always_on":
		return sdktrace.AlwaysSample(), nil
	case "always_off":
		return sdktrace.NeverSample(), nil
	case "parentbased_always_off":
		return sdktrace.ParentBased(sdktrace.NeverSample()), nil
	case "traceidratio":
		r, err := ratio()
		if err != nil {
			return nil, err
		}
		return sdktrace.TraceIDRatioBased(r), nil
	case "parentbased_traceidratio":
		r, err := ratio()
		if err != nil {
			return nil, err
		}
		return sdktrace.ParentBased(sdktrace.TraceIDRatioBased(r)), nil
	}
	return nil, fmt.Errorf("OTEL_TRACES_SAMPLER=%q: want always_on, always_off, traceidratio or a parentbased_ variant", name)
}
