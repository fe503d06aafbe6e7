package tracetest

import (
	"compress/gzip"
	"fmt"
	"io"
	"mime"
	"net/http"

	collmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	colltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// maxBody bounds one OTLP/HTTP request body.
const maxBody = 32 << 20

// httpHandler serves OTLP/HTTP: POST /v1/traces and /v1/metrics with a
// protobuf or JSON body, gzip-compressed or not.
func (r *Receiver) httpHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", func(w http.ResponseWriter, req *http.Request) {
		var msg colltrace.ExportTraceServiceRequest
		if !decode(w, req, &msg) {
			return
		}
		r.add(spansFrom(&msg), nil)
		encode(w, req, &colltrace.ExportTraceServiceResponse{})
	})
	mux.HandleFunc("POST /v1/metrics", func(w http.ResponseWriter, req *http.Request) {
		var msg collmetrics.ExportMetricsServiceRequest
		if !decode(w, req, &msg) {
			return
		}
		r.add(nil, metricsFrom(&msg))
		encode(w, req, &collmetrics.ExportMetricsServiceResponse{})
	})
	return mux
}

// isJSON reports whether the request body is OTLP/JSON.
func isJSON(req *http.Request) bool {
	mt, _, _ := mime.ParseMediaType(req.Header.Get("Content-Type"))
	return mt == "application/json"
}

// decode reads the body into msg, answering 400 on failure.
func decode(w http.ResponseWriter, req *http.Request, msg proto.Message) bool {
	var body io.Reader = http.MaxBytesReader(w, req.Body, maxBody)
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(body)
		if err != nil {
			http.Error(w, fmt.Sprintf("reading gzip body: %v", err), http.StatusBadRequest)
			return false
		}
		defer zr.Close()
		body = zr
	}
	b, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, fmt.Sprintf("reading body: %v", err), http.StatusBadRequest)
		return false
	}
	if isJSON(req) {
		err = protojson.Unmarshal(b, msg)
	} else {
		err = proto.Unmarshal(b, msg)
	}
	if err != nil {
		http.Error(w, fmt.Sprintf("decoding OTLP: %v", err), http.StatusBadRequest)
		return false
	}
	return true
}

// encode writes the response in the request's encoding.
func encode(w http.ResponseWriter, req *http.Request, msg proto.Message) {
	var (
		b   []byte
		err error
	)
	if isJSON(req) {
		w.Header().Set("Content-Type", "application/json")
		b, err = protojson.Marshal(msg)
	} else {
		w.Header().Set("Content-Type", "application/x-protobuf")
		b, err = proto.Marshal(msg)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	_, _ = w.Write(b)
}
