package due

import (
	"errors"
	"fmt"
	"os"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// Info is what a DUE directory's MANIFEST says, read without opening the
// DUE (no lock, no recovery, no delivery).
type Info struct {
	// Exists is false when dir holds no MANIFEST and no DUE file: Open
	// would create an empty DUE.
	Exists bool
	// Delivered is the seq of the last batch the Sink acknowledged; the
	// batches Delivered+1 … Delivered+Pending are committed but not yet
	// acknowledged (Open delivers them again).
	Delivered uint64
	Pending   int
	// Entries is the number of fingerprints in the runs (the seen-set on
	// disk), Runs their number.
	Entries uint64
	Runs    int
}

// LastCommitted is the seq of the newest committed batch (0: none).
func (i Info) LastCommitted() uint64 { return i.Delivered + uint64(i.Pending) }

// Inspect reads the MANIFEST of the DUE in dir on fs (nil: the OS). A consumer
// uses it before Open to cross-check the batches it applied against those
// the DUE delivered: Open would re-deliver pending batches first and hide
// a consumer that lost some. A missing directory, or one with no DUE file,
// is an Info with Exists false; a damaged MANIFEST is an error wrapping
// ErrCorrupt.
func Inspect(fs vfs.FS, dir string) (Info, error) {
	if fs == nil {
		fs = vfs.Default
	}
	raw, err := readFile(fs, fs.PathJoin(dir, manifestName))
	if errors.Is(err, os.ErrNotExist) {
		names, lerr := fs.List(dir)
		if lerr != nil && !errors.Is(lerr, os.ErrNotExist) {
			return Info{}, fmt.Errorf("due: %w", lerr)
		}
		for _, n := range names {
			if _, _, ok := parseName(n); ok {
				return Info{}, fmt.Errorf("%w: %s has DUE files but no MANIFEST", ErrCorrupt, dir)
			}
		}
		return Info{}, nil
	}
	if err != nil {
		return Info{}, fmt.Errorf("due: read manifest: %w", err)
	}
	m, err := decodeManifest(raw)
	if err != nil {
		return Info{}, fmt.Errorf("%s: %w", dir, err)
	}
	info := Info{Exists: true, Delivered: m.delivered, Pending: len(m.pending), Runs: len(m.runs)}
	for _, r := range m.runs {
		info.Entries += r.count
	}
	return info, nil
}
