package realweb

import (
	"errors"
	"strings"
	"testing"
)

func TestParseAccessLine(t *testing.T) {
	for _, tc := range []struct {
		line string
		want Request
		err  bool
	}{
		{`HTTP/2.0 https a.test 200 7 3 GET /x?y=1`, Request{Protocol: "HTTP/2.0", Scheme: "https", Host: "a.test", Status: 200, Conn: 7, ConnRequests: 3, Method: "GET", URI: "/x?y=1"}, false},
		{`HTTP/1.1 http a.test 404 1 1 GET /Command/\x5Cfoo\x22 bar`, Request{Protocol: "HTTP/1.1", Scheme: "http", Host: "a.test", Status: 404, Conn: 1, ConnRequests: 1, Method: "GET", URI: `/Command/\foo" bar`}, false},
		{`HTTP/1.1 http a.test 404 1 1 GET /x\y`, Request{}, true},
		{`HTTP/1.1 http a.test 404 1 1 GET /x\x4`, Request{}, true},
		{`HTTP/1.1 http a.test 2x0 1 1 GET /`, Request{}, true},
		{`HTTP/1.1 http a.test 200 1 GET /`, Request{}, true},
		{`HTTP/1.1 http a.test 200 -1 z GET /`, Request{}, true},
	} {
		got, err := ParseAccessLine(tc.line)
		if tc.err {
			if !errors.Is(err, ErrBadLogLine) {
				t.Errorf("%q: err %v, want ErrBadLogLine", tc.line, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: got %+v, %v; want %+v", tc.line, got, err, tc.want)
		}
	}
}

// FuzzParseAccessLine: no panic; a parsed line's URI has no escape left
// undone (every backslash in it came from a \x5C).
func FuzzParseAccessLine(f *testing.F) {
	f.Add(`HTTP/2.0 https a.test 200 7 3 GET /x?y=1`)
	f.Add(`HTTP/1.1 http a.test 404 1 1 GET /Command/\x5Cfoo`)
	f.Add(`HTTP/1.1 http a.test 404 1 1 GET /\x`)
	f.Fuzz(func(t *testing.T, line string) {
		r, err := ParseAccessLine(line)
		if err != nil {
			return
		}
		if strings.Count(r.URI, `\`) > strings.Count(line, `\x5C`)+strings.Count(line, `\x5c`) {
			t.Fatalf("%q: URI %q kept an escape", line, r.URI)
		}
	})
}

// Without nginx StartNginx fails with ErrNoNginx, whose message says what
// to install (StartNginxT turns it into a test failure, never a skip).
func TestStartNginxMissingBinary(t *testing.T) {
	_, err := StartNginx(NginxOptions{Root: t.TempDir(), Binary: "/nonexistent/nginx"})
	if !errors.Is(err, ErrNoNginx) || !strings.Contains(err.Error(), "nginx-light") {
		t.Fatalf("StartNginx without nginx: %v, want ErrNoNginx naming nginx-light", err)
	}
}
