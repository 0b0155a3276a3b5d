package frontier

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// TestSynctestPoliteness runs a real Frontier (real clock, real pebble) in
// a synctest bubble, where time is fake and exact: the blocking Next must
// return exactly Factor × duration after the previous fetch ended.
func TestSynctestPoliteness(t *testing.T) {
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		f, err := Open(dir, Options{Factor: 10, MaxDelay: 10 * time.Second, MaxCrawlDelay: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := f.Add(items("a", 3)...); err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		for i, c := range []struct {
			fetch, crawlDelay, want time.Duration
		}{
			{20 * time.Millisecond, 0, 200 * time.Millisecond},  // 10 × 20ms
			{30 * time.Millisecond, time.Hour, 2 * time.Second}, // Crawl-delay, capped
		} {
			l, err := f.Next(ctx)
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(c.fetch)
			if err := f.Done(l, Result{Duration: c.fetch, CrawlDelay: c.crawlDelay}); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			l, err = f.Next(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got := time.Since(start); got != c.want {
				t.Errorf("fetch %d: next lease after %v, want exactly %v", i, got, c.want)
			}
			if err := f.Done(l, Result{Requeue: i == 0}); err != nil {
				t.Fatal(err)
			}
		}
	})
}
