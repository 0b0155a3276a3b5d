package due

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// parseName splits "000123.run" into (123, "run").
func parseName(name string) (uint64, string, bool) {
	base, ext, ok := strings.Cut(name, ".")
	if !ok || len(base) < 6 || (ext != "run" && ext != "log" && ext != "batch") {
		return 0, "", false
	}
	n, err := strconv.ParseUint(base, 10, 64)
	return n, ext, err == nil
}

// recover loads the manifest and the runs, deletes what an interrupted merge
// left behind, replays the live logs into the buffer and opens a new log.
func (d *DUE) recover() error {
	fs := d.fs
	if _, err := fs.Stat(d.dir); errors.Is(err, os.ErrNotExist) {
		// Create the directory and make its name durable.
		if err := fs.MkdirAll(d.dir, 0o755); err != nil {
			return fmt.Errorf("due: %w", err)
		}
		if err := syncDir(fs, fs.PathDir(d.dir)); err != nil {
			return fmt.Errorf("due: %w", err)
		}
	}
	lock, err := fs.Lock(fs.PathJoin(d.dir, lockName))
	if err != nil {
		return fmt.Errorf("due: lock %s: %w", d.dir, err)
	}
	d.lock = lock
	names, err := fs.List(d.dir)
	if err != nil {
		return fmt.Errorf("due: %w", err)
	}
	slices.Sort(names)
	var maxNum uint64
	ours := 0
	for _, n := range names {
		if num, _, ok := parseName(n); ok {
			maxNum = max(maxNum, num)
			ours++
		}
	}
	raw, err := readFile(fs, fs.PathJoin(d.dir, manifestName))
	switch {
	case errors.Is(err, os.ErrNotExist):
		if ours > 0 {
			return fmt.Errorf("%w: %s has DUE files but no MANIFEST", ErrCorrupt, d.dir)
		}
		d.man = manifest{nextFile: 1, logFloor: 1, nextSeq: 1}
		if err := writeFileAtomic(fs, d.dir, manifestName, d.man.encode()); err != nil {
			return fmt.Errorf("due: create manifest: %w", err)
		}
	case err != nil:
		return fmt.Errorf("due: read manifest: %w", err)
	default:
		if d.man, err = decodeManifest(raw); err != nil {
			return fmt.Errorf("%s: %w", d.dir, err)
		}
	}
	d.nextFile.Store(max(d.man.nextFile, maxNum+1))

	live := map[uint64]bool{}
	for _, rm := range d.man.runs {
		r, err := openRun(fs, d.path(rm.num, "run"), rm.num, rm.count, rm.size)
		if err != nil {
			return err
		}
		d.runs = append(d.runs, r)
		live[rm.num] = true
	}
	for _, p := range d.man.pending {
		if _, err := fs.Stat(d.path(p.num, "batch")); err != nil {
			return fmt.Errorf("%w: pending batch %d: %w", ErrCorrupt, p.seq, err)
		}
		live[p.num] = true
	}
	var logs []uint64
	for _, n := range names {
		num, ext, ok := parseName(n)
		switch {
		case strings.HasSuffix(n, ".tmp"):
			_ = fs.Remove(fs.PathJoin(d.dir, n))
		case !ok:
		case ext == "log" && num >= d.man.logFloor:
			logs = append(logs, num)
		case ext == "log" || !live[num]:
			d.opts.Logger.Info("due: removing an obsolete file", "file", n)
			_ = fs.Remove(fs.PathJoin(d.dir, n))
		}
	}
	slices.Sort(logs)

	d.mu.active = newBuffer(d.opts.BufferEntries)
	d.mu.pend.reset()
	d.spare.reset()
	for i, num := range logs {
		if err := d.replay(num, i == len(logs)-1); err != nil {
			return err
		}
	}
	lf, err := d.newLog()
	if err != nil {
		return fmt.Errorf("due: %w", err)
	}
	d.mu.log = lf
	d.mu.activeLogs = append(logs, lf.num)
	d.durable.Store(d.mu.appended)
	d.mu.Lock()
	d.setDiskStatsLocked()
	d.mu.Unlock()
	return nil
}

// replay adds the records of one live log to the active buffer. A torn tail
// is allowed on the newest log only and is cut off (the file is rewritten
// with its valid prefix) so that later opens see a clean log.
func (d *DUE) replay(num uint64, newest bool) error {
	p := d.path(num, "log")
	b := d.mu.active
	valid, torn, err := readLog(d.fs, p, func(r *record) error {
		d.mu.appended++
		b.insert(r.fp)
		return nil
	})
	if err != nil {
		return err
	}
	if !torn {
		return nil
	}
	if !newest {
		return fmt.Errorf("%w: log %06d ends in a torn chunk but is not the newest", ErrCorrupt, num)
	}
	d.opts.Logger.Warn("due: cutting a log's torn tail", "log", num, "offset", valid)
	return truncateFile(d.fs, d.dir, p, valid)
}

// truncateFile replaces path by its first n bytes, atomically.
func truncateFile(fs vfs.FS, dir, path string, n int64) error {
	data, err := readFile(fs, path)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := writeFileSynced(fs, tmp, data[:n]); err != nil {
		return err
	}
	if err := fs.Rename(tmp, path); err != nil {
		return err
	}
	return syncDir(fs, dir)
}
