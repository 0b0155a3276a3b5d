package crawl

import "sync/atomic"

// classMetrics split Metrics.FetchHTTPErr by status class, for
// sextant_fetches_total{class}: FetchOK is 2xx and FetchRedirect 3xx
// already; an HTTP error is 1xx, 4xx, 5xx or a code outside 100–599.
type classMetrics struct {
	FetchHTTP1xx, FetchHTTP4xx, FetchHTTP5xx atomic.Uint64
}

// countHTTPErr counts a fetch whose status is neither 2xx nor 3xx.
func (m *classMetrics) countHTTPErr(code int) {
	switch code / 100 {
	case 1:
		m.FetchHTTP1xx.Add(1)
	case 4:
		m.FetchHTTP4xx.Add(1)
	case 5:
		m.FetchHTTP5xx.Add(1)
	}
}

// FetchClasses are a node's fetches by status class, from Stats: "1xx"
// … "5xx", "other" (a code outside 100–599) and "error" (no response),
// each with the outcome (sextant_fetches_total's other label) it is part
// of. They sum to Fetches.
func (s Stats) FetchClasses() []FetchClass {
	other := s.FetchHTTPErr - min(s.FetchHTTPErr, s.FetchHTTP1xx+s.FetchHTTP4xx+s.FetchHTTP5xx)
	return []FetchClass{{"1xx", "http_error", s.FetchHTTP1xx}, {"2xx", "ok", s.FetchOK},
		{"3xx", "redirect", s.FetchRedirect}, {"4xx", "http_error", s.FetchHTTP4xx},
		{"5xx", "http_error", s.FetchHTTP5xx}, {"other", "http_error", other}, {"error", "error", s.FetchErr}}
}

// FetchClass is one status class's count.
type FetchClass struct {
	Class, Outcome string
	N              uint64
}
