package trace

import (
	"maps"
	"strings"
	"testing"
	"time"
)

func TestParseSettings(t *testing.T) {
	tests := []struct {
		name    string
		environ []string
		check   func(t *testing.T, s settings)
	}{
		{
			name: "defaults",
			check: func(t *testing.T, s settings) {
				if s.serviceName != "toolbridge" {
					t.Errorf("service = %q", s.serviceName)
				}
				if s.traces.protocol != ProtocolHTTPProtobuf || s.traces.endpoint != "http://localhost:4318/v1/traces" {
					t.Errorf("traces = %s %s", s.traces.protocol, s.traces.endpoint)
				}
				if s.metrics.endpoint != "http://localhost:4318/v1/metrics" {
					t.Errorf("metrics endpoint = %s", s.metrics.endpoint)
				}
				if s.batchDelay != 5*time.Second || s.metricEvery != time.Minute || s.traces.timeout != 10*time.Second {
					t.Errorf("delays = %v %v %v", s.batchDelay, s.metricEvery, s.traces.timeout)
				}
				if s.sampler.Description() != "ParentBased{root:AlwaysOnSampler,remoteParentSampled:AlwaysOnSampler,remoteParentNotSampled:AlwaysOffSampler,localParentSampled:AlwaysOnSampler,localParentNotSampled:AlwaysOffSampler}" {
					t.Errorf("sampler = %s", s.sampler.Description())
				}
			},
		},
		{
			name:    "grpc with generic endpoint",
			environ: []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4317", "OTEL_EXPORTER_OTLP_PROTOCOL=grpc"},
			check: func(t *testing.T, s settings) {
				if s.traces.protocol != ProtocolGRPC || s.traces.endpoint != "http://127.0.0.1:4317" {
					t.Errorf("traces = %s %s", s.traces.protocol, s.traces.endpoint)
				}
			},
		},
		{
			name:    "grpc default endpoint",
			environ: []string{"OTEL_EXPORTER_OTLP_PROTOCOL=grpc"},
			check: func(t *testing.T, s settings) {
				if s.traces.endpoint != "http://localhost:4317" {
					t.Errorf("endpoint = %s", s.traces.endpoint)
				}
			},
		},
		{
			name:    "http base endpoint gets the signal path",
			environ: []string{"OTEL_EXPORTER_OTLP_ENDPOINT=https://otel.example.com:4318/"},
			check: func(t *testing.T, s settings) {
				if s.traces.endpoint != "https://otel.example.com:4318/v1/traces" {
					t.Errorf("endpoint = %s", s.traces.endpoint)
				}
			},
		},
		{
			name: "per-signal endpoint and protocol win",
			environ: []string{
				"OTEL_EXPORTER_OTLP_ENDPOINT=http://a:4318",
				"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://b:9999/custom",
				"OTEL_EXPORTER_OTLP_METRICS_PROTOCOL=grpc",
			},
			check: func(t *testing.T, s settings) {
				if s.traces.endpoint != "http://b:9999/custom" {
					t.Errorf("traces endpoint = %s", s.traces.endpoint)
				}
				if s.metrics.protocol != ProtocolGRPC || s.metrics.endpoint != "http://a:4318" {
					t.Errorf("metrics = %s %s", s.metrics.protocol, s.metrics.endpoint)
				}
			},
		},
		{
			name:    "scheme-less endpoint is https unless insecure",
			environ: []string{"OTEL_EXPORTER_OTLP_ENDPOINT=collector:4317", "OTEL_EXPORTER_OTLP_PROTOCOL=grpc", "OTEL_EXPORTER_OTLP_METRICS_INSECURE=true"},
			check: func(t *testing.T, s settings) {
				if s.traces.endpoint != "https://collector:4317" || s.metrics.endpoint != "http://collector:4317" {
					t.Errorf("endpoints = %s %s", s.traces.endpoint, s.metrics.endpoint)
				}
			},
		},
		{
			name: "service, resource, headers, timeouts, later entries win",
			environ: []string{
				"OTEL_SERVICE_NAME=first",
				"OTEL_SERVICE_NAME=gw-eu",
				"OTEL_RESOURCE_ATTRIBUTES=deployment.environment=prod,team=a%20b, host.name = h1 ",
				"OTEL_EXPORTER_OTLP_HEADERS=authorization=Bearer%20x,x-tenant=t1",
				"OTEL_EXPORTER_OTLP_TIMEOUT=2500",
				"OTEL_EXPORTER_OTLP_COMPRESSION=gzip",
				"OTEL_BSP_SCHEDULE_DELAY=100",
				"OTEL_BSP_MAX_QUEUE_SIZE=10",
				"OTEL_METRIC_EXPORT_INTERVAL=250",
				"NOT_AN_ENTRY",
			},
			check: func(t *testing.T, s settings) {
				if s.serviceName != "gw-eu" {
					t.Errorf("service = %q", s.serviceName)
				}
				res := map[string]string{}
				for _, kv := range s.resource {
					res[string(kv.Key)] = kv.Value.AsString()
				}
				if !maps.Equal(res, map[string]string{"deployment.environment": "prod", "team": "a b", "host.name": "h1"}) {
					t.Errorf("resource = %v", res)
				}
				if !maps.Equal(s.traces.headers, map[string]string{"authorization": "Bearer x", "x-tenant": "t1"}) {
					t.Errorf("headers = %v", s.traces.headers)
				}
				if s.traces.timeout != 2500*time.Millisecond || s.traces.compression != "gzip" {
					t.Errorf("timeout %v compression %s", s.traces.timeout, s.traces.compression)
				}
				if s.batchDelay != 100*time.Millisecond || s.queueSize != 10 || s.metricEvery != 250*time.Millisecond {
					t.Errorf("batch %v queue %d metrics %v", s.batchDelay, s.queueSize, s.metricEvery)
				}
			},
		},
		{
			name:    "service.name from resource attributes",
			environ: []string{"OTEL_RESOURCE_ATTRIBUTES=service.name=from-res"},
			check: func(t *testing.T, s settings) {
				if s.serviceName != "from-res" {
					t.Errorf("service = %q", s.serviceName)
				}
			},
		},
		{
			name:    "sdk disabled and per-signal none",
			environ: []string{"OTEL_SDK_DISABLED=TRUE", "OTEL_METRICS_EXPORTER=none"},
			check: func(t *testing.T, s settings) {
				if !s.sdkDisabled || !s.metrics.disabled || s.traces.disabled {
					t.Errorf("disabled = %v metrics %v traces %v", s.sdkDisabled, s.metrics.disabled, s.traces.disabled)
				}
			},
		},
		{
			name:    "sampler ratio",
			environ: []string{"OTEL_TRACES_SAMPLER=traceidratio", "OTEL_TRACES_SAMPLER_ARG=0.25"},
			check: func(t *testing.T, s settings) {
				if s.sampler.Description() != "TraceIDRatioBased{0.25}" {
					t.Errorf("sampler = %s", s.sampler.Description())
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := parseSettings(tc.environ)
			if err != nil {
				t.Fatalf("parseSettings: %v", err)
			}
			tc.check(t, s)
		})
	}
}

func TestParseSettingsErrors(t *testing.T) {
	tests := []struct {
		env  string
		want string // the variable the error must name
	}{
		{"OTEL_EXPORTER_OTLP_PROTOCOL=http/json", "OTEL_EXPORTER_OTLP_PROTOCOL"},
		{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=thrift", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT=ftp://x:1", "OTEL_EXPORTER_OTLP_ENDPOINT"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT=http://", "OTEL_EXPORTER_OTLP_ENDPOINT"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT=http://a b:1", "OTEL_EXPORTER_OTLP_ENDPOINT"},
		{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT=http://%zz", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"},
		{"OTEL_EXPORTER_OTLP_HEADERS=novalue", "OTEL_EXPORTER_OTLP_HEADERS"},
		{"OTEL_EXPORTER_OTLP_HEADERS=a=%zz", "OTEL_EXPORTER_OTLP_HEADERS"},
		{"OTEL_RESOURCE_ATTRIBUTES==x", "OTEL_RESOURCE_ATTRIBUTES"},
		{"OTEL_EXPORTER_OTLP_TIMEOUT=soon", "OTEL_EXPORTER_OTLP_TIMEOUT"},
		{"OTEL_EXPORTER_OTLP_TIMEOUT=-5", "OTEL_EXPORTER_OTLP_TIMEOUT"},
		{"OTEL_EXPORTER_OTLP_COMPRESSION=zstd", "OTEL_EXPORTER_OTLP_COMPRESSION"},
		{"OTEL_EXPORTER_OTLP_INSECURE=yes", "OTEL_EXPORTER_OTLP_INSECURE"},
		{"OTEL_SDK_DISABLED=1", "OTEL_SDK_DISABLED"},
		{"OTEL_BSP_MAX_QUEUE_SIZE=0", "OTEL_BSP_MAX_QUEUE_SIZE"},
		{"OTEL_BSP_SCHEDULE_DELAY=1.5", "OTEL_BSP_SCHEDULE_DELAY"},
		{"OTEL_TRACES_SAMPLER=sometimes", "OTEL_TRACES_SAMPLER"},
		{"OTEL_TRACES_SAMPLER=traceidratio\x00", "OTEL_TRACES_SAMPLER"},
		{"OTEL_TRACES_EXPORTER=zipkin", "OTEL_TRACES_EXPORTER"},
	}
	for _, tc := range tests {
		t.Run(tc.env, func(t *testing.T) {
			_, err := parseSettings([]string{tc.env})
			if err == nil {
				t.Fatalf("no error")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not name %s", err, tc.want)
			}
		})
	}
	env := []string{"OTEL_TRACES_SAMPLER=traceidratio", "OTEL_TRACES_SAMPLER_ARG=2"}
	if _, err := parseSettings(env); err == nil || !strings.Contains(err.Error(), "OTEL_TRACES_SAMPLER_ARG") {
		t.Errorf("sampler arg 2: err = %v, want one naming OTEL_TRACES_SAMPLER_ARG", err)
	}
}

// FuzzParseSettings: no environment may panic the parser, and a parse
// that succeeds gives usable endpoints.
func FuzzParseSettings(f *testing.F) {
	f.Add("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4317")
	f.Add("OTEL_EXPORTER_OTLP_HEADERS", "a=b,c=%20d")
	f.Add("OTEL_RESOURCE_ATTRIBUTES", "k=v,,=x")
	f.Add("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "collector:4318")
	f.Add("OTEL_TRACES_SAMPLER_ARG", "NaN")
	f.Fuzz(func(t *testing.T, key, value string) {
		s, err := parseSettings([]string{"OTEL_TRACES_SAMPLER=traceidratio", key + "=" + value})
		if err != nil {
			return
		}
		for _, sig := range []signal{s.traces, s.metrics} {
			if !strings.HasPrefix(sig.endpoint, "http://") && !strings.HasPrefix(sig.endpoint, "https://") {
				t.Fatalf("accepted endpoint %q", sig.endpoint)
			}
		}
		if s.sampler == nil || s.queueSize <= 0 || s.batchSize <= 0 || s.batchDelay <= 0 {
			t.Fatalf("accepted unusable settings %+v", s)
		}
	})
}
