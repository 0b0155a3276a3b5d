package crawl

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// robotsCacheFile holds the node's robots.txt rules with their expiry
// (fetcher.SaveRobots), so that a restart does not fetch every robots.txt
// again (issue 25, defect 7: ≈ 100 re-fetches per kill on the default web).
const robotsCacheFile = "robots.cache"

// robotsSaveInterval is how often a running node saves its robots cache: a
// kill -9 costs the robots.txt fetched since the last save.
const robotsSaveInterval = 10 * time.Second

// loadRobots fills the fetcher's robots cache from the data directory. A
// missing file is a first run; a damaged one only costs re-fetches, so it
// is logged, never fatal.
func (n *Node) loadRobots() {
	p := filepath.Join(n.opts.DataDir, robotsCacheFile)
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err != nil {
		n.opts.Logger.Warn("crawl: robots cache unreadable (robots.txt files are fetched again)", "file", p, "err", err)
		return
	}
	defer f.Close()
	loaded, bad, err := n.ft.LoadRobots(f)
	if err != nil || bad > 0 {
		n.opts.Logger.Warn("crawl: robots cache damaged (those hosts' robots.txt is fetched again)", "file", p, "restored", loaded, "skipped", bad, "err", err)
	}
}

// saveRobots writes the fetcher's robots cache to the data directory,
// through a temporary file renamed over the old one (a torn write leaves
// the previous cache).
func (n *Node) saveRobots() error {
	p := filepath.Join(n.opts.DataDir, robotsCacheFile)
	tmp := p + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("crawl: robots cache: %w", err)
	}
	_, err = n.ft.SaveRobots(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, p)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("crawl: robots cache: %w", err)
	}
	return nil
}

// saveRobotsEvery saves the robots cache every robotsSaveInterval until ctx
// ends. A failed save is logged: it costs re-fetches after a restart, not
// URLs.
func (n *Node) saveRobotsEvery(ctx context.Context) {
	t := time.NewTicker(robotsSaveInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := n.saveRobots(); err != nil {
				n.opts.Logger.Warn("crawl: robots cache", "err", err)
			}
		}
	}
}
