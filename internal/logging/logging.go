// Package logging holds the one rule every Sextant library follows for its
// Options.Logger: a nil logger discards. Libraries log only through the
// *slog.Logger they are given, never print, and never fall back to
// slog.Default, so that embedding a crawler in a program does not write to
// that program's stderr unasked. cmd/crawler builds the real logger from
// --log-format and --log-level.
package logging

import (
	"log/slog"
	"strings"
)

var discard = slog.New(slog.DiscardHandler)

// Discard returns a logger that drops every record.
func Discard() *slog.Logger { return discard }

// OrDiscard returns l, or Discard() if l is nil: the default for every
// Options.Logger field.
func OrDiscard(l *slog.Logger) *slog.Logger {
	if l == nil {
		return discard
	}
	return l
}

// Lines returns a logger that formats each record as one text line (as
// slog's TextHandler does, without the time) and hands it to fn, which
// must be safe for concurrent use. Tests use it to see what a library
// logged: logging.Lines(func(l string) { t.Log(l) }).
func Lines(fn func(line string), level slog.Leveler) *slog.Logger {
	return slog.New(slog.NewTextHandler(lineWriter(fn), &slog.HandlerOptions{
		Level: level,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))
}

// lineWriter receives one Write per record from slog's TextHandler.
type lineWriter func(string)

func (w lineWriter) Write(p []byte) (int, error) {
	w(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// TB is the part of testing.TB that Test needs.
type TB interface {
	Helper()
	Log(args ...any)
}

// Test returns a logger that writes every record, debug included, to t.Log.
func Test(t TB) *slog.Logger {
	return Lines(func(l string) { t.Helper(); t.Log(l) }, slog.LevelDebug)
}
