package logging

import (
	"bytes"
	"context"
	"log/slog"
	"testing"
)

func TestOrDiscard(t *testing.T) {
	if l := OrDiscard(nil); l.Enabled(context.Background(), slog.LevelError) {
		t.Error("OrDiscard(nil) is enabled at ERROR; want a logger that drops everything")
	}
	var b bytes.Buffer
	l := slog.New(slog.NewTextHandler(&b, nil))
	OrDiscard(l).Info("kept")
	if !bytes.Contains(b.Bytes(), []byte("msg=kept")) {
		t.Errorf("OrDiscard(l) did not log through l: %q", b.String())
	}
}

func TestLines(t *testing.T) {
	var got []string
	l := Lines(func(s string) { got = append(got, s) }, slog.LevelInfo)
	l.Debug("dropped")
	l.Warn("kept", "n", 3, "why", "a b")
	if len(got) != 1 || got[0] != `level=WARN msg=kept n=3 why="a b"` {
		t.Errorf("got %q", got)
	}
}
