package tracetest

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Scrape is one Prometheus scrape of a /metrics endpoint, parsed with
// Prometheus' own text parser, as a Prometheus server would read it.
type Scrape struct {
	// Families are the metric families by name.
	Families map[string]*dto.MetricFamily
	// Body is the text as served, for greps (no secret may be in it).
	Body string
}

// ScrapeURL GETs url (with header, if not nil) as Prometheus does and
// parses the answer. Any status but 200, or text the parser refuses, is
// an error.
func ScrapeURL(url string, header http.Header) (*Scrape, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("building the scrape request: %w", err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	// The text format, as Prometheus asks for it when it has no
	// protobuf: what operators and curl read.
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	client := &http.Client{Timeout: 30 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scraping %s: %w", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("reading the scrape of %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scraping %s: %s: %s", url, resp.Status, bytes.TrimSpace(body))
	}
	return ParseScrape(body)
}

// ParseScrape parses a scrape in the Prometheus text format.
func ParseScrape(body []byte) (*Scrape, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("parsing the scrape: %w", err)
	}
	return &Scrape{Families: fams, Body: string(body)}, nil
}

// Value is the value of the sample of family name whose labels include
// every pair of labels (name, value, name, value...): a counter's or a
// gauge's value, or a histogram's sample count. ok is false when there
// is no such sample.
func (s *Scrape) Value(name string, labels ...string) (v float64, ok bool) {
	m := s.Metric(name, labels...)
	if m == nil {
		return 0, false
	}
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue(), true
	case m.Gauge != nil:
		return m.Gauge.GetValue(), true
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount()), true
	case m.Untyped != nil:
		return m.Untyped.GetValue(), true
	}
	return 0, false
}

// Metric is the first sample of family name with every pair of labels;
// nil if none.
func (s *Scrape) Metric(name string, labels ...string) *dto.Metric {
	f := s.Families[name]
	if f == nil {
		return nil
	}
next:
	for _, m := range f.GetMetric() {
		for i := 0; i+1 < len(labels); i += 2 {
			if Label(m, labels[i]) != labels[i+1] {
				continue next
			}
		}
		return m
	}
	return nil
}

// Label is the value of m's label name, "" when it has none.
func Label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// LabelNames lists the label names used on family name, sorted.
func (s *Scrape) LabelNames(name string) []string {
	seen := map[string]bool{}
	if f := s.Families[name]; f != nil {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				seen[l.GetName()] = true
			}
		}
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Names lists the families whose name starts with prefix, sorted.
func (s *Scrape) Names(prefix string) []string {
	var out []string
	for n := range s.Families {
		if strings.HasPrefix(n, prefix) {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}
