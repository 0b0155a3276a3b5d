package crawl

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"time"

	"github.com/sextant-crawler/sextant/internal/logging"
)

// ErrIdentityMismatch is returned by Open for a data directory whose
// IDENTITY file says it was made by another kind of run, another node or
// for other seeds. Options.ForceIdentity overrides it.
var ErrIdentityMismatch = errors.New("crawl: data directory belongs to another run")

// IdentityFile is the name of the identity file in a data directory.
const IdentityFile = "IDENTITY"

// identityFormat is the version of the data directory's layout.
const identityFormat = 1

// Identity says which run a data directory belongs to. Kind, Node, Digest
// and Format must match on reopen; Created and Software are informative.
type Identity struct {
	Kind     string    `json:"kind"`   // crawl, node or demo
	Node     string    `json:"node"`   // node id
	Digest   string    `json:"digest"` // NewIdentity: of the seeds and config
	Format   int       `json:"format"`
	Created  time.Time `json:"created"`
	Software string    `json:"software,omitempty"`
}

// NewIdentity is the identity of a run of kind over seeds; extra (e.g. a
// synthetic web's configuration) goes into the digest too. The seeds' order
// does not matter.
func NewIdentity(kind string, seeds []string, extra ...string) Identity {
	s := slices.Clone(seeds)
	slices.Sort(s)
	h := sha256.New()
	for _, p := range append(s, extra...) {
		fmt.Fprintf(h, "%d:%s\n", len(p), p)
	}
	return Identity{Kind: kind, Digest: hex.EncodeToString(h.Sum(nil))[:16]}
}

func (id Identity) String() string {
	node := ""
	if id.Node != "" {
		node = " node " + id.Node
	}
	return fmt.Sprintf("%s%s seeds %s format %d (created %s)", id.Kind, node, id.Digest, id.Format, id.Created.UTC().Format(time.RFC3339))
}

func (id Identity) matches(o Identity) bool {
	return id.Kind == o.Kind && id.Node == o.Node && id.Digest == o.Digest && id.Format == o.Format
}

// CheckIdentity compares want (Kind set) with dir/IDENTITY and writes want
// there if the directory has none. A mismatch is ErrIdentityMismatch naming
// both identities, unless force: then want replaces the file and warn
// (nil: discard) gets a warning. A malformed file is a mismatch too.
func CheckIdentity(dir string, want Identity, force bool, warn *slog.Logger) error {
	write, err := compareIdentity(dir, &want, force, warn)
	if err == nil && write {
		err = writeIdentity(filepath.Join(dir, IdentityFile), want)
	}
	return err
}

// compareIdentity is CheckIdentity without the write: it fills in want's
// format, time and software and says whether the file must be (re)written.
// Open writes it only once the stores opened, so that a failed first Open
// does not leave a directory that looks crawled in.
func compareIdentity(dir string, want *Identity, force bool, warn *slog.Logger) (write bool, err error) {
	warn = logging.OrDiscard(warn)
	want.Format = identityFormat
	want.Created = time.Now().UTC().Truncate(time.Second)
	if bi, ok := debug.ReadBuildInfo(); ok {
		want.Software = bi.Main.Path + "@" + bi.Main.Version
	}
	path := filepath.Join(dir, IdentityFile)
	raw, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("crawl: %w", err)
	}
	var have Identity
	if err := json.Unmarshal(raw, &have); err != nil {
		if !force {
			return false, fmt.Errorf("%w: %s is not an identity file (%v); --force rewrites it", ErrIdentityMismatch, path, err)
		}
		warn.Warn("crawl: identity file unreadable: rewritten (forced)", "file", path, "err", err, "now", want.String())
		return true, nil
	}
	if have.matches(*want) {
		return false, nil
	}
	if !force {
		return false, fmt.Errorf("%w: %s was made by %s; this run is %s (use another --data, or --force to take the directory over)", ErrIdentityMismatch, path, have, want)
	}
	warn.Warn("crawl: data directory taken over (forced)", "file", path, "made_by", have.String(), "taken_over_by", want.String())
	return true, nil
}

// writeIdentity writes the file atomically (temporary file, rename).
func writeIdentity(path string, id Identity) error {
	b, err := json.MarshalIndent(id, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("crawl: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("crawl: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("crawl: %w", err)
	}
	return nil
}
