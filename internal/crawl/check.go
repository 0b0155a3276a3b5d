package crawl

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/sextant-crawler/sextant/due"
	"github.com/sextant-crawler/sextant/frontier"
	"github.com/sextant-crawler/sextant/hostsplit"
)

// ErrDamaged is returned by Open (and reported by Check) when a store of the
// data directory is missing, unreadable or disagrees with the others so
// that URLs would be lost. The message names the store; Repair rebuilds it
// (`crawler fsck --data DIR --repair`).
var ErrDamaged = errors.New("crawl: damaged data directory")

// dueSource is the frontier's AddBatch source for the DUE's batches.
const dueSource = "due"

// Store directories and files of a data directory.
const (
	frontierDir  = "frontier"
	dueDir       = "due"
	crawlLogFile = "crawl.log"
)

// damaged wraps ErrDamaged with what is wrong and the fix.
func damaged(dataDir, format string, args ...any) error {
	return fmt.Errorf("%w: %s; run 'crawler fsck --data %s --repair' to rebuild (what was fetched is fetched again, no URL is lost)",
		ErrDamaged, fmt.Sprintf(format, args...), dataDir)
}

// dirState is what a data directory holds before its stores are opened.
type dirState struct {
	frontier bool     // frontier/ holds files
	due      due.Info // due/MANIFEST
	logBytes int64    // crawl.log size
	identity bool     // IDENTITY exists
}

// used reports whether a crawl ran in the directory before.
func (s dirState) used() bool {
	return s.frontier || s.due.Exists || s.logBytes > 0 || s.identity
}

// inspectDir reads the directory's state without opening its stores.
func inspectDir(dataDir string) (dirState, error) {
	var s dirState
	names, err := os.ReadDir(filepath.Join(dataDir, frontierDir))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return s, damaged(dataDir, "frontier %s: %v", filepath.Join(dataDir, frontierDir), err)
	}
	s.frontier = len(names) > 0
	if s.due, err = due.Inspect(nil, filepath.Join(dataDir, dueDir)); err != nil {
		return s, damaged(dataDir, "DUE %s: %v", filepath.Join(dataDir, dueDir), err)
	}
	if fi, err := os.Stat(filepath.Join(dataDir, crawlLogFile)); err == nil {
		s.logBytes = fi.Size()
	}
	if _, err := os.Stat(filepath.Join(dataDir, IdentityFile)); err == nil {
		s.identity = true
	}
	return s, nil
}

// checkMissing refuses a used directory that lacks a store: a fresh store
// would silently forget the URLs the lost one held.
func checkMissing(dataDir string, s dirState) error {
	if !s.used() {
		return nil
	}
	var missing []string
	if !s.frontier {
		missing = append(missing, "frontier "+filepath.Join(dataDir, frontierDir))
	}
	if !s.due.Exists {
		missing = append(missing, "DUE "+filepath.Join(dataDir, dueDir))
	}
	if len(missing) > 0 {
		return damaged(dataDir, "%q missing from a data directory that was crawled in", missing)
	}
	return nil
}

// checkSeqs cross-checks the frontier against the DUE, before the DUE is
// opened (Open re-delivers pending batches and would hide a gap): the
// frontier must have applied every batch the DUE recorded as delivered, and
// none the DUE never committed. With scan, every frontier key is read too.
func checkSeqs(dataDir string, fr *frontier.Frontier, info due.Info, scan bool) error {
	applied, err := fr.Applied(dueSource)
	if err != nil {
		return damaged(dataDir, "frontier %s: %v", filepath.Join(dataDir, frontierDir), err)
	}
	switch {
	case applied < info.Delivered:
		return damaged(dataDir, "frontier %s applied the DUE's batches up to %d but the DUE delivered up to %d: the URLs of batches %d–%d are lost (the frontier lost writes)",
			filepath.Join(dataDir, frontierDir), applied, info.Delivered, applied+1, info.Delivered)
	case applied > info.LastCommitted():
		return damaged(dataDir, "DUE %s committed batches up to %d but the frontier applied up to %d: the DUE lost its seen-set or batches",
			filepath.Join(dataDir, dueDir), info.LastCommitted(), applied)
	}
	// Every key once: pebble may open a store that lost files (a missing
	// manifest marker starts a new one over the old log) and a damaged
	// block is otherwise found mid-crawl. It reads ~1.7·10⁶ keys/s on a
	// loaded 2-core box: about a minute per 10⁸ queued URLs
	// (Options.SkipOpenCheck leaves it to fsck).
	if !scan {
		return nil
	}
	if _, err := fr.Scan(nil); err != nil {
		return damaged(dataDir, "frontier %s: %v", filepath.Join(dataDir, frontierDir), err)
	}
	return nil
}

// A cluster member's data directory also holds its splitter's spool
// (hostsplit): the remote links of pages its crawl log records as done,
// until their owner acknowledges them, and the archive of those it did.
// A spool that lost writes keeps its epoch with sequence numbers behind,
// and the peers then drop the next batches as resends: so the spool is
// checked before the splitter opens it, against the mark (epoch, last
// sequence per peer) written at open, every spoolMarkEvery while running
// and at every clean close. Marks only grow: a spool below its mark lost
// writes. A clean stop's mark also records what each peer's batches were
// applied up to, which a rebuilt spool restores (hostsplit.RebuildSpool).
// After a kill -9, damage that takes only the batches spooled since the
// last refresh is not seen (as for the DUE's buffer log); the scan still
// finds blocks that fail their checksums and entries that do not decode.
const (
	spoolDir      = "spool"
	spoolMarkFile = "spool.mark"
)

// isMember reports whether dataDir belongs to a cluster member: it holds a
// spool or a spool mark, or IDENTITY says it was made by `crawler node`.
func isMember(dataDir string) bool {
	if names, err := os.ReadDir(filepath.Join(dataDir, spoolDir)); err == nil && len(names) > 0 {
		return true
	}
	if _, err := os.Stat(filepath.Join(dataDir, spoolMarkFile)); err == nil {
		return true
	}
	raw, err := os.ReadFile(filepath.Join(dataDir, IdentityFile))
	var id Identity
	return err == nil && json.Unmarshal(raw, &id) == nil && id.Kind == "node"
}

// inspectSpool checks the spool of a member's dataDir (scan: every entry
// too) and returns what it found; problems are ErrDamaged errors naming
// the spool and the fix.
func inspectSpool(dataDir string, scan bool) (hostsplit.SpoolReport, error) {
	dir := filepath.Join(dataDir, spoolDir)
	rep, err := hostsplit.InspectSpool(dir, hostsplit.Limits{}, scan)
	if err != nil {
		return rep, damaged(dataDir, "spool %s: %v", dir, err)
	}
	ds, err := inspectDir(dataDir)
	if err != nil {
		return rep, err
	}
	if !rep.Exists {
		_, markErr := os.Stat(filepath.Join(dataDir, spoolMarkFile))
		if ds.used() || markErr == nil {
			return rep, damaged(dataDir, "spool %s missing from a cluster member's data directory that was crawled in: the links it held for peers are lost", dir)
		}
		return rep, nil
	}
	if len(rep.Problems) > 0 {
		return rep, damaged(dataDir, "spool %s: %s", dir, strings.Join(rep.Problems, "; "))
	}
	mark, ok, err := readSpoolMark(dataDir)
	if err != nil {
		return rep, damaged(dataDir, "spool mark %s: %v", filepath.Join(dataDir, spoolMarkFile), err)
	}
	if ok {
		if covers, why := rep.Mark.Covers(mark); !covers {
			return rep, damaged(dataDir, "spool %s lost writes (%s, per %s)", dir, why, filepath.Join(dataDir, spoolMarkFile))
		}
	}
	return rep, nil
}

func readSpoolMark(dataDir string) (hostsplit.SpoolMark, bool, error) {
	var m hostsplit.SpoolMark
	raw, err := os.ReadFile(filepath.Join(dataDir, spoolMarkFile))
	if errors.Is(err, os.ErrNotExist) {
		return m, false, nil
	}
	if err != nil {
		return m, false, err
	}
	if err := json.Unmarshal(raw, &m); err != nil || m.Epoch == 0 {
		return m, false, fmt.Errorf("not a spool mark (%v)", err)
	}
	return m, true, nil
}

// writeSpoolMark replaces dataDir's spool mark, durably (a mark lost with
// its rename would only weaken the next check).
func writeSpoolMark(dataDir string, m hostsplit.SpoolMark) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	path := filepath.Join(dataDir, spoolMarkFile)
	f, err := os.Create(path + ".tmp")
	if err != nil {
		return fmt.Errorf("crawl: spool mark: %w", err)
	}
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(path+".tmp", path)
	}
	if err != nil {
		return fmt.Errorf("crawl: spool mark: %w", err)
	}
	return nil
}
