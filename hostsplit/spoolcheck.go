package hostsplit

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"

	"github.com/cockroachdb/pebble/v2"
)

// Checking and rebuilding a spool at rest (issue 23). A spool holds URLs
// known nowhere else on this node: the remote links of pages its crawl log
// records as done. A spool that lost writes is worse than one that lost
// batches: with its epoch kept and its sequence numbers behind, the peers
// take the next batches for resends of ones they applied and drop them.
// So a damaged spool is never reused: RebuildSpool writes a new one, under
// a new epoch, with what the old one still holds.

// SpoolMark is the part of a spool that only grows: its epoch (drawn once)
// and, per peer, the last batch sequence number assigned. A mark taken
// earlier is a lower bound of a spool's mark; a spool below it lost writes.
//
// Applied (the (epoch, seq) last applied per sender) does not count for
// Covers: it is what RebuildSpool restores when the mark is Clean, taken
// after Close, so exact while the spool is at rest.
type SpoolMark struct {
	Epoch   uint64               `json:"epoch"`
	Last    map[NodeID]uint64    `json:"last,omitempty"`
	Applied map[NodeID][2]uint64 `json:"applied,omitempty"`
	Clean   bool                 `json:"clean,omitempty"`
}

// Covers reports whether m is at or beyond every position of earlier, and
// else why not.
func (m SpoolMark) Covers(earlier SpoolMark) (bool, string) {
	if m.Epoch != earlier.Epoch {
		return false, fmt.Sprintf("epoch %x, was %x: the spool was recreated", m.Epoch, earlier.Epoch)
	}
	for _, id := range slices.Sorted(mapsKeys(earlier.Last)) {
		if m.Last[id] < earlier.Last[id] {
			return false, fmt.Sprintf("batches for %s assigned up to %d, were up to %d: batches %d–%d are lost",
				id, m.Last[id], earlier.Last[id], m.Last[id]+1, earlier.Last[id])
		}
	}
	return true, ""
}

func mapsKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// SpoolReport is what InspectSpool found.
type SpoolReport struct {
	Exists bool // dir holds a pebble database
	Mark   SpoolMark
	// Counted only by a full scan.
	PendingBatches, PendingURLs   int
	ArchivedBatches, ArchivedURLs int
	Problems                      []string // each one may have lost URLs
}

// readApplied reads the "r" keys.
func readApplied(db *pebble.DB) (map[NodeID][2]uint64, error) {
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: []byte("r"), UpperBound: []byte("s")})
	if err != nil {
		return nil, fmt.Errorf("hostsplit: spool scan: %w", err)
	}
	defer it.Close()
	out := map[NodeID][2]uint64{}
	for it.First(); it.Valid(); it.Next() {
		k, v := it.Key(), it.Value()
		if len(k) < 3 || k[len(k)-1] != 0 || len(v) != 16 {
			return nil, fmt.Errorf("hostsplit: spool entry %q corrupt", k)
		}
		out[NodeID(k[1:len(k)-1])] = [2]uint64{binary.BigEndian.Uint64(v), binary.BigEndian.Uint64(v[8:])}
	}
	return out, it.Error()
}

// readLasts reads the "n" keys.
func readLasts(db *pebble.DB) (map[NodeID]uint64, error) {
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: []byte("n"), UpperBound: []byte("o")})
	if err != nil {
		return nil, fmt.Errorf("hostsplit: spool scan: %w", err)
	}
	defer it.Close()
	out := map[NodeID]uint64{}
	for it.First(); it.Valid(); it.Next() {
		k, v := it.Key(), it.Value()
		if len(k) < 3 || k[len(k)-1] != 0 || len(v) != 8 {
			return nil, fmt.Errorf("hostsplit: spool entry %q corrupt", k)
		}
		out[NodeID(k[1:len(k)-1])] = binary.BigEndian.Uint64(v)
	}
	return out, it.Error()
}

// InspectSpool opens the spool in dir read-only and reads its mark; with
// scan, it also reads every entry (pebble verifies each block's checksum)
// and decodes every spooled and archived batch. The spool must not be in
// use. A spool that does not open is a Problem, not an error; the error is
// for a directory that cannot be read.
func InspectSpool(dir string, lim Limits, scan bool) (rep SpoolReport, err error) {
	names, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return rep, nil
	}
	if err != nil {
		return rep, fmt.Errorf("hostsplit: spool: %w", err)
	}
	if len(names) == 0 {
		return rep, nil
	}
	rep.Exists = true
	problem := func(format string, args ...any) {
		rep.Problems = append(rep.Problems, fmt.Sprintf(format, args...))
	}
	db, err := openReadOnly(dir)
	if err != nil {
		problem("does not open: %v", err)
		return rep, nil
	}
	defer func() {
		if r := recover(); r != nil { // pebble panics on some corruptions
			problem("reading it failed: %v", r)
		}
		_ = db.Close()
	}()
	v, c, err := db.Get([]byte("e"))
	switch {
	case errors.Is(err, pebble.ErrNotFound):
		if empty, err := isEmpty(db); err == nil && empty {
			// Made by pebble, killed before its epoch was written (a
			// spool created before createStore was atomic): it holds
			// nothing, and opens as a new spool.
			rep.Exists = false
			return rep, nil
		}
		problem("no epoch: the spool lost its first write")
	case err != nil:
		problem("epoch: %v", err)
	default:
		if len(v) == 8 {
			rep.Mark.Epoch = binary.BigEndian.Uint64(v)
		} else {
			problem("epoch entry corrupt")
		}
		c.Close()
	}
	if rep.Mark.Last, err = readLasts(db); err != nil {
		problem("%v", err)
	}
	if rep.Mark.Applied, err = readApplied(db); err != nil {
		problem("%v", err)
	}
	if !scan {
		return rep, nil
	}
	maxSeq := map[NodeID]uint64{}
	err = eachEntry(db, lim, func(e spoolEntry) {
		switch e.tag {
		case 's':
			rep.PendingBatches++
			rep.PendingURLs += len(e.urls)
		case 'a':
			rep.ArchivedBatches++
			rep.ArchivedURLs += len(e.urls)
		}
		if e.tag == 's' { // archives of a rebuilt spool lie beyond (archiveBase)
			maxSeq[e.peer] = max(maxSeq[e.peer], e.seq)
		}
	}, func(k []byte, err error) { problem("entry %q: %v", k, err) })
	if err != nil {
		problem("reading its entries: %v", err)
	}
	for _, id := range slices.Sorted(mapsKeys(maxSeq)) {
		if maxSeq[id] > rep.Mark.Last[id] {
			problem("batch %d for %s spooled beyond the last assigned, %d: the spool lost writes", maxSeq[id], id, rep.Mark.Last[id])
		}
	}
	return rep, nil
}

func openReadOnly(dir string) (*pebble.DB, error) {
	return pebble.Open(dir, &pebble.Options{ReadOnly: true, ErrorIfNotExists: true,
		Logger: pebbleLogger{slog.New(slog.DiscardHandler)}})
}

// spoolEntry is one decoded spool entry.
type spoolEntry struct {
	tag      byte
	peer     NodeID
	seq      uint64 // 's' and 'a'
	kind     Kind   // 's' and 'a'
	key, val []byte // copies
	urls     []string
}

// eachEntry calls fn on every well-formed entry of db in key order and bad
// on each malformed one. The error is the iterator's (a checksum failure
// ends the scan).
func eachEntry(db *pebble.DB, lim Limits, fn func(spoolEntry), bad func([]byte, error)) error {
	it, err := db.NewIter(nil)
	if err != nil {
		return err
	}
	for it.First(); it.Valid(); it.Next() {
		e, err := parseEntry(it.Key(), it.Value(), lim)
		if err != nil {
			bad(slices.Clone(it.Key()), err)
			continue
		}
		fn(e)
	}
	return errors.Join(it.Error(), it.Close())
}

func parseEntry(k, v []byte, lim Limits) (spoolEntry, error) {
	e := spoolEntry{key: slices.Clone(k), val: slices.Clone(v)}
	if len(k) == 0 {
		return e, errors.New("empty key")
	}
	e.tag = k[0]
	switch e.tag {
	case 'e':
		if len(k) != 1 || len(v) != 8 {
			return e, errors.New("malformed epoch")
		}
	case 'm':
	case 'n', 'r':
		want := map[byte]int{'n': 8, 'r': 16}[e.tag]
		if len(k) < 3 || k[len(k)-1] != 0 || bytes.IndexByte(k[1:], 0) != len(k)-2 || len(v) != want {
			return e, errors.New("malformed peer entry")
		}
		e.peer = NodeID(k[1 : len(k)-1])
	case 's', 'a':
		if len(k) < 11 || k[len(k)-9] != 0 || bytes.IndexByte(k[1:len(k)-9], 0) >= 0 {
			return e, errors.New("malformed batch key")
		}
		e.peer, e.seq = NodeID(k[1:len(k)-9]), binary.BigEndian.Uint64(k[len(k)-8:])
		kind, n, enc, ok := decodeSpooled(v)
		if !ok || !kind.valid() {
			return e, errors.New("malformed batch header")
		}
		urls, err := DecodeBatch(enc, lim)
		if err != nil {
			return e, err
		}
		if len(urls) != n {
			return e, fmt.Errorf("%d URLs, header says %d", len(urls), n)
		}
		e.urls, e.kind = urls, kind
	default:
		return e, fmt.Errorf("unknown tag %q", e.tag)
	}
	return e, nil
}

// archiveBase numbers the archived batches a rebuilt spool keeps: batch
// sequence numbers of its new epoch stay far below.
const archiveBase = 1 << 62

// RebuildReport is what RebuildSpool did.
type RebuildReport struct {
	Opened                        bool // the old spool opened (else nothing was salvaged)
	PendingBatches, PendingURLs   int  // re-spooled for their peer
	ArchivedBatches, ArchivedURLs int  // kept in the new archive
	Skipped                       int  // entries that did not decode
	Applied                       int  // senders' applied marks restored
	ReadErr                       error
	Mark                          SpoolMark // the new spool's
}

// RebuildSpool moves the spool in dir aside (to dir.damaged, replacing an
// older one) and writes a new spool in dir, under a new epoch, holding
// what the old one still yields: its membership view and metadata, its
// pending batches (renumbered 1, 2… per peer: a peer's applied count then
// meets this node's sent count again, for termination) and its archives
// (renumbered from archiveBase, out of the way of the acknowledgements to
// come). Batches it lost are not known here: the caller re-derives them
// (internal/crawl fetches again the pages whose links they held).
//
// The senders' applied marks come from prior when it is Clean (taken at a
// clean stop: exact, since nothing was applied after), or from the old
// spool for a sender whose salvaged mark is newer. Without a clean prior
// they are dropped: one that lost writes would make the receiver take its
// sender's next batch for a gap and refuse it for ever. Without marks,
// batches a sender re-sends are applied again (the Local sink takes
// repeats), and the cluster's termination waits until every sender that
// had sent this node a batch sends one more (its applied count is unknown
// until then).
func RebuildSpool(dir string, lim Limits, prior *SpoolMark) (RebuildReport, error) {
	var rep RebuildReport
	var entries []spoolEntry
	if db, err := openReadOnly(dir); err == nil {
		rep.Opened = true
		func() {
			defer func() {
				if r := recover(); r != nil {
					rep.ReadErr = errors.Join(rep.ReadErr, fmt.Errorf("hostsplit: salvage: %v", r))
				}
				_ = db.Close()
			}()
			rep.ReadErr = eachEntry(db, lim, func(e spoolEntry) { entries = append(entries, e) },
				func([]byte, error) { rep.Skipped++ })
		}()
	} else {
		rep.ReadErr = err
	}
	aside := dir + ".damaged"
	if err := os.RemoveAll(aside); err != nil {
		return rep, fmt.Errorf("hostsplit: rebuild spool: %w", err)
	}
	if err := os.Rename(dir, aside); err != nil && !errors.Is(err, os.ErrNotExist) {
		return rep, fmt.Errorf("hostsplit: rebuild spool: %w", err)
	}
	st, err := openStore(dir, slog.New(slog.DiscardHandler)) // draws a new epoch
	if err != nil {
		return rep, err
	}
	b := st.db.NewBatch()
	last, archived := map[NodeID]uint64{}, map[NodeID]uint64{}
	for _, e := range entries { // in key order: each peer's batches in seq order
		switch e.tag {
		case 'a':
			archived[e.peer]++
			_ = b.Set(archiveKey(e.peer, archiveBase+archived[e.peer]), e.val, nil)
			rep.ArchivedBatches++
			rep.ArchivedURLs += len(e.urls)
		case 's':
			last[e.peer]++
			_ = b.Set(spoolKey(e.peer, last[e.peer]), e.val, nil)
			rep.PendingBatches++
			rep.PendingURLs += len(e.urls)
		case 'm':
			_ = b.Set(e.key, e.val, nil)
		}
	}
	if prior != nil && prior.Clean {
		applied := maps.Clone(prior.Applied)
		for _, e := range entries {
			if e.tag != 'r' {
				continue
			}
			ep, seq := binary.BigEndian.Uint64(e.val), binary.BigEndian.Uint64(e.val[8:])
			if a, ok := applied[e.peer]; !ok || (a[0] == ep && a[1] < seq) {
				applied[e.peer] = [2]uint64{ep, seq}
			}
		}
		for id, a := range applied {
			_ = b.Set(peerKey('r', id), binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, a[0]), a[1]), nil)
		}
		rep.Applied = len(applied)
	}
	for id, seq := range last {
		_ = b.Set(peerKey('n', id), binary.BigEndian.AppendUint64(nil, seq), nil)
	}
	err = b.Commit(pebble.Sync)
	rep.Mark = SpoolMark{Epoch: st.epoch, Last: last}
	if cerr := st.close(); err == nil {
		err = cerr
	}
	if err != nil {
		return rep, fmt.Errorf("hostsplit: rebuild spool: %w", err)
	}
	return rep, nil
}
