package hostsplit

import (
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/cockroachdb/pebble/v2"
)

// createHook, if set (tests), runs when a new spool's database exists
// under its temporary name and its epoch is not written yet: an error
// stands for the process dying there.
var createHook func() error

// createStore makes the spool in dir, with its epoch, unless dir already
// holds one. It is atomic: the database is made and its epoch written and
// synced under dir+".new", which is then renamed to dir (and the parent
// directory synced), so that a kill at any moment leaves either no spool
// or a whole one (before, a kill between pebble's creation of the
// database and the epoch's write left a spool every later open refused:
// "no epoch"). A leftover dir+".new" is a creation cut short: removed.
func createStore(dir string, log *slog.Logger) error {
	names, err := os.ReadDir(dir)
	if err == nil && len(names) > 0 {
		return nil
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("hostsplit: spool: %w", err)
	}
	tmp := dir + ".new"
	if err := os.RemoveAll(tmp); err != nil {
		return fmt.Errorf("hostsplit: spool: %w", err)
	}
	db, err := pebble.Open(tmp, &pebble.Options{Logger: pebbleLogger{log}})
	if err != nil {
		return fmt.Errorf("hostsplit: create spool: %w", err)
	}
	if createHook != nil {
		if err := createHook(); err != nil {
			db.Close()
			return err
		}
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	b[0] |= 1 // never zero
	if err := db.Set([]byte("e"), b[:], pebble.Sync); err != nil {
		db.Close()
		return fmt.Errorf("hostsplit: write epoch: %w", err)
	}
	if err := db.Close(); err != nil {
		return fmt.Errorf("hostsplit: create spool: %w", err)
	}
	if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) { // empty
		return fmt.Errorf("hostsplit: spool: %w", err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return fmt.Errorf("hostsplit: create spool: %w", err)
	}
	return syncDir(filepath.Dir(dir))
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("hostsplit: spool: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("hostsplit: spool: sync %s: %w", dir, err)
	}
	return nil
}

// isEmpty reports whether db holds no key at all.
func isEmpty(db *pebble.DB) (bool, error) {
	it, err := db.NewIter(nil)
	if err != nil {
		return false, err
	}
	empty := !it.First()
	return empty, errors.Join(it.Error(), it.Close())
}
