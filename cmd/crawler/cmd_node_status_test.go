package main

import "testing"

// The status page address: --status-listen, else --status, else the
// config's status_listen, else loopback.
func TestNodeStatusListen(t *testing.T) {
	for _, c := range []struct{ flag, old, config, want string }{
		{"", "", "", "127.0.0.1:0"},
		{"", "", "0.0.0.0:9180", "0.0.0.0:9180"},
		{"127.0.0.1:1", "", "0.0.0.0:9180", "127.0.0.1:1"},
		{"", "127.0.0.1:2", "0.0.0.0:9180", "127.0.0.1:2"},
		{"", "", "off", "off"},
		{"off", "", "0.0.0.0:9180", "off"},
	} {
		if got, err := nodeStatusListen(c.flag, c.old, c.config); err != nil || got != c.want {
			t.Errorf("nodeStatusListen(%q, %q, %q) = %q, %v; want %q", c.flag, c.old, c.config, got, err, c.want)
		}
	}
	if _, err := nodeStatusListen("nope", "", ""); err == nil {
		t.Error("--status-listen nope accepted")
	}
}
