package extract

import "testing"

func TestIsHTML(t *testing.T) {
	html := []byte("<!DOCTYPE html><html><body>hi")
	png := []byte("\x89PNG\r\n\x1a\n....")
	for _, tc := range []struct {
		ct    string
		sniff []byte
		want  bool
	}{
		{"text/html", nil, true},
		{"text/html; charset=utf-8", png, true},
		{"  TEXT/HTML ;charset=x", nil, true},
		{"application/xhtml+xml", nil, true},
		{"Application/XHTML+XML; q=1", nil, true},
		{"text/plain", html, false},
		{"application/json", html, false},
		{"text/htmlx", nil, false},
		{"text/html garbage", nil, false},
		{"image/png", png, false},
		{"", html, true},
		{"   ", html, true},
		{"", png, false},
		{"", []byte("plain text"), false},
		{"", nil, false},
		{"; charset=utf-8", html, false},
	} {
		if got := IsHTML(tc.ct, tc.sniff); got != tc.want {
			t.Errorf("IsHTML(%q, %q) = %v, want %v", tc.ct, tc.sniff, got, tc.want)
		}
	}
}
