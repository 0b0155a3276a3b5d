package sitemap

import (
	"context"
	"errors"
	"fmt"
	"io"
)

// Fetcher fetches a sitemap file for a Walker: the caller's HTTP client,
// politeness and robots.txt checks live behind it. The Walker closes the
// body.
type Fetcher interface {
	Fetch(ctx context.Context, url string) (io.ReadCloser, error)
}

// FetchFunc adapts a function to Fetcher.
type FetchFunc func(ctx context.Context, url string) (io.ReadCloser, error)

// Fetch calls f.
func (f FetchFunc) Fetch(ctx context.Context, url string) (io.ReadCloser, error) { return f(ctx, url) }

// Walker reads a sitemap and, if it is an index, its child sitemaps, to a
// bounded depth. Each file is parsed with Options and its own URL as the
// base, so RuleHost admits the file's own host only: a sitemap that a
// robots.txt names on another host (a cross-submit) is parsed with Parse
// and the robots.txt URL as base instead. The zero values of MaxIndexDepth and MaxFiles mean their defaults.
type Walker struct {
	Fetcher Fetcher
	Options Options
	// MaxIndexDepth is how many levels of index are followed; default 1:
	// the protocol does not let an index list indexes, so the children of
	// a child index are not fetched (counted in WalkStats.TooDeep).
	MaxIndexDepth int
	// MaxFiles bounds the files fetched per Walk; default 1000.
	MaxFiles int
}

// WalkStats sums the Results of the files a Walk read.
type WalkStats struct {
	Files   int // files fetched
	Indexes int // of which sitemap indexes
	Failed  int // files that could not be fetched or parsed (partly or wholly)
	TooDeep int // child sitemaps not fetched: beyond MaxIndexDepth
	Skipped int // child sitemaps not fetched: beyond MaxFiles or already read
	// Page entries reported and dropped; entries of every file that
	// broke the location rule or were invalid.
	URLs, Dropped, OutOfPath, Invalid int
}

// Walk reads root and, breadth first, the children of indexes, calling fn
// for every page entry. Errors of single files are counted in Failed; Walk
// returns only ctx's error or fn's.
func (w *Walker) Walk(ctx context.Context, root string, fn func(url string, e Entry) error) (WalkStats, error) {
	var st WalkStats
	maxDepth, maxFiles := w.MaxIndexDepth, w.MaxFiles
	if maxDepth == 0 {
		maxDepth = 1
	}
	if maxFiles == 0 {
		maxFiles = 1000
	}
	seen := map[string]bool{root: true}
	level := []string{root}
	for depth := 0; len(level) > 0; depth++ {
		var next []string
		for _, file := range level {
			if err := ctx.Err(); err != nil {
				return st, err
			}
			if st.Files >= maxFiles {
				st.Skipped++
				continue
			}
			st.Files++
			res, err := w.one(ctx, file, func(e Entry, kind Kind) error {
				if kind != KindIndex {
					return fn(file, e)
				}
				switch {
				case depth >= maxDepth:
					st.TooDeep++
				case seen[e.Loc]:
					st.Skipped++
				default:
					seen[e.Loc] = true
					next = append(next, e.Loc)
				}
				return nil
			})
			if res.Kind == KindIndex {
				st.Indexes++
			} else {
				st.URLs += res.URLs
				st.Dropped += res.Dropped
			}
			st.OutOfPath += res.OutOfPath
			st.Invalid += res.Invalid
			var cb *callbackError
			if errors.As(err, &cb) {
				return st, cb.err
			}
			if err != nil {
				if ctx.Err() != nil {
					return st, ctx.Err()
				}
				st.Failed++
			}
		}
		level = next
	}
	return st, nil
}

// callbackError marks fn's error so that Walk tells it from a file's.
type callbackError struct{ err error }

func (e *callbackError) Error() string { return e.err.Error() }

func (w *Walker) one(ctx context.Context, file string, fn func(Entry, Kind) error) (Result, error) {
	body, err := w.Fetcher.Fetch(ctx, file)
	if err != nil {
		return Result{}, fmt.Errorf("sitemap: fetch %s: %w", file, err)
	}
	defer body.Close()
	return parse(body, file, w.Options, func(k Kind, e Entry) error {
		if err := fn(e, k); err != nil {
			return &callbackError{err}
		}
		return nil
	})
}
