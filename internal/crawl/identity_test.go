package crawl

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sextant-crawler/sextant/internal/logging"
)

// Issue 23, defect 4: Open writes DataDir/IDENTITY once the stores opened
// and refuses a directory of another kind of run, node or seeds, naming
// both; ForceIdentity takes it over with a warning; a directory from before
// identities (stores, no IDENTITY) is adopted.
func TestIdentityChecked(t *testing.T) {
	dir := t.TempDir()
	open := func(id Identity, force bool, warns *[]string) error {
		o := Options{DataDir: dir, Workers: 1, Identity: id, ForceIdentity: force}
		if warns != nil {
			o.Logger = logging.Lines(func(l string) { *warns = append(*warns, l) }, slog.LevelWarn)
		}
		n, err := Open(o)
		if err == nil {
			err = n.Close()
		}
		return err
	}
	if err := open(Identity{}, false, nil); err != nil { // before identities
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, IdentityFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("IDENTITY written without an Identity: %v", err)
	}
	crawlA := NewIdentity("crawl", []string{"http://a.test/", "http://b.test/"})
	if err := open(crawlA, false, nil); err != nil {
		t.Fatalf("adopting a directory without IDENTITY: %v", err)
	}
	if err := open(NewIdentity("crawl", []string{"http://b.test/", "http://a.test/"}), false, nil); err != nil {
		t.Fatalf("same seeds in another order: %v", err)
	}
	for name, id := range map[string]Identity{
		"node":        NewIdentity("node", []string{"http://a.test/", "http://b.test/"}),
		"other seeds": NewIdentity("crawl", []string{"http://a.test/"}),
		"other web":   NewIdentity("crawl", []string{"http://a.test/", "http://b.test/"}, "simweb=default"),
	} {
		err := open(id, false, nil)
		if !errors.Is(err, ErrIdentityMismatch) || !strings.Contains(err.Error(), "was made by crawl node n0 seeds "+crawlA.Digest) {
			t.Errorf("%s: %v", name, err)
		}
	}
	var warns []string
	if err := open(NewIdentity("demo", nil), true, &warns); err != nil || len(warns) != 1 || !strings.Contains(warns[0], "taken over") {
		t.Fatalf("forced: %v, warnings %q", err, warns)
	}
	if err := open(crawlA, false, nil); !errors.Is(err, ErrIdentityMismatch) {
		t.Fatalf("after the take-over the directory is the demo's: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, IdentityFile), []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := open(crawlA, false, nil); !errors.Is(err, ErrIdentityMismatch) || !strings.Contains(err.Error(), "not an identity file") {
		t.Fatalf("malformed IDENTITY: %v", err)
	}
}

// A first Open that fails (here: the DUE directory is a file) leaves no
// IDENTITY behind, so the directory does not look crawled in.
func TestIdentityNotWrittenOnFailedOpen(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "due"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(Options{DataDir: dir, Workers: 1, Identity: NewIdentity("crawl", nil)}); err == nil {
		t.Fatal("Open with a file as the DUE directory succeeded")
	}
	if _, err := os.Stat(filepath.Join(dir, IdentityFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("IDENTITY after a failed first Open: %v", err)
	}
}
