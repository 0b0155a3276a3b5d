package extract

import (
	"io"
	"strconv"
	"testing"
)

// endless is an infinite reader: head once, then body repeated forever
// (body may be a func of the repetition index).
type endless struct {
	head []byte
	body func(i int) []byte
	i    int
	pend []byte
}

func (r *endless) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if len(r.pend) == 0 {
			if r.head != nil {
				r.pend, r.head = r.head, nil
			} else {
				r.pend = r.body(r.i)
				r.i++
			}
		}
		c := copy(p[n:], r.pend)
		r.pend = r.pend[c:]
		n += c
	}
	return n, nil
}

// TestHostileStreams: endless input always ends in a bounded amount of
// reading with the right truncation reason.
func TestHostileStreams(t *testing.T) {
	x := make([]byte, 4096)
	for i := range x {
		x[i] = 'x'
	}
	opts := Options{MaxBytes: 8 << 20, MaxTokenBytes: 1 << 20, MaxLinks: 1000}
	for _, tc := range []struct {
		name string
		r    io.Reader
		want Truncation
	}{
		{"endless attribute", &endless{head: []byte(`<a href="/`), body: func(int) []byte { return x }}, TruncatedToken},
		{"endless tag", &endless{head: []byte(`<div `), body: func(i int) []byte { return []byte("a" + strconv.Itoa(i) + "=b ") }}, TruncatedToken},
		{"endless text", &endless{body: func(int) []byte { return x }}, TruncatedToken},
		{"endless noscript", &endless{head: []byte(`<noscript>`), body: func(int) []byte { return x }}, TruncatedToken},
		{"endless distinct links", &endless{body: func(i int) []byte { return []byte(`<a href="/p` + strconv.Itoa(i) + `">`) }}, TruncatedLinks},
		{"endless duplicate links", &endless{body: func(int) []byte { return []byte(`<a href="/same">`) }}, TruncatedBytes},
		{"endless small tags", &endless{body: func(int) []byte { return []byte(`<p class=c>t</p>`) }}, TruncatedBytes},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, _ := New(opts)
			n := 0
			res, err := e.Extract(tc.r, mustURL(t, docURL), "text/html", func(Link) { n++ })
			if err != nil {
				t.Fatal(err)
			}
			if res.Truncated != tc.want || res.Bytes > opts.MaxBytes || n > opts.MaxLinks {
				t.Errorf("got %+v (%d links), want truncation %v", res, n, tc.want)
			}
		})
	}
}
