package hostsplit

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
)

// store is the splitter's pebble database. Keys:
//
//	"e"                      → this node's spool epoch (8 bytes)
//	"n" peer 0x00            → last sequence number assigned for peer
//	"s" peer 0x00 seq(8 BE)  → uvarint URL count + encoded batch (Kind URLs), or
//	                           0x00 kind uvarint URL count + encoded batch (other kinds)
//	"a" peer 0x00 seq(8 BE)  → a batch the peer acknowledged, moved from "s" unchanged:
//	                           the archive re-sent if the peer is lost with its disk
//	"r" sender 0x00          → sender epoch (8) + last applied seq (8)
//	"m" name                 → metadata: the membership view ("m" "view"), hand-off marks,
//	                           this node's resend token and the tokens it served (resend.go)
//
// A URLs batch is never empty, so its uvarint count never starts with 0x00.
// Node ids contain no 0x00, so per-peer key ranges do not overlap.
type store struct {
	db    *pebble.DB
	epoch uint64
	syncs atomic.Uint64 // synced writes of batches and applied marks (Stats.SpoolSyncs)
}

func openStore(dir string, log *slog.Logger) (*store, error) {
	if err := createStore(dir, log); err != nil { // spoolcreate.go
		return nil, err
	}
	db, err := pebble.Open(dir, &pebble.Options{Logger: pebbleLogger{log}})
	if err != nil {
		return nil, fmt.Errorf("hostsplit: open spool: %w", err)
	}
	st := &store{db: db}
	v, ok, err := st.get([]byte("e"))
	switch {
	case err != nil:
		db.Close()
		return nil, err
	case ok && len(v) == 8:
		st.epoch = binary.BigEndian.Uint64(v)
	default:
		// A spool created before creation was atomic and cut short
		// (createStore): it holds nothing, so it takes a new epoch.
		var b [8]byte
		_, _ = rand.Read(b[:])
		b[0] |= 1 // never zero
		if err := db.Set([]byte("e"), b[:], pebble.Sync); err != nil {
			db.Close()
			return nil, fmt.Errorf("hostsplit: write epoch: %w", err)
		}
		st.epoch = binary.BigEndian.Uint64(b[:])
	}
	return st, nil
}

func (st *store) close() error { return st.db.Close() }

func (st *store) get(k []byte) ([]byte, bool, error) {
	v, c, err := st.db.Get(k)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("hostsplit: spool read: %w", err)
	}
	out := append([]byte(nil), v...)
	c.Close()
	return out, true, nil
}

func peerKey(tag byte, id NodeID) []byte {
	k := make([]byte, 0, len(id)+2+8)
	k = append(k, tag)
	k = append(k, id...)
	return append(k, 0)
}

func spoolKey(id NodeID, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(peerKey('s', id), seq)
}

// putBatch spools batch seq for peer and records seq as the last assigned,
// durably.
func (st *store) putBatch(id NodeID, seq uint64, kind Kind, count int, enc []byte) error {
	b := st.db.NewBatch()
	st.setBatch(b, id, seq, kind, count, enc)
	st.syncs.Add(1)
	if err := b.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("hostsplit: spool write: %w", err)
	}
	return nil
}

// setBatch adds spooling batch seq for peer to b.
func (st *store) setBatch(b *pebble.Batch, id NodeID, seq uint64, kind Kind, count int, enc []byte) {
	v := make([]byte, 0, len(enc)+6)
	if kind != KindURLs {
		v = append(v, 0, byte(kind))
	}
	v = binary.AppendUvarint(v, uint64(count))
	_ = b.Set(spoolKey(id, seq), append(v, enc...), nil)
	_ = b.Set(peerKey('n', id), binary.BigEndian.AppendUint64(nil, seq), nil)
}

// decodeSpooled splits a spool value into kind, URL count and batch.
func decodeSpooled(v []byte) (Kind, int, []byte, bool) {
	kind := KindURLs
	if len(v) >= 2 && v[0] == 0 {
		kind, v = Kind(v[1]), v[2:]
	}
	n, k := binary.Uvarint(v)
	if k <= 0 {
		return 0, 0, nil, false
	}
	return kind, int(n), v[k:], true
}

// getBatch returns the kind, URL count and encoded batch seq for peer.
func (st *store) getBatch(id NodeID, seq uint64) (Kind, int, []byte, error) {
	v, ok, err := st.get(spoolKey(id, seq))
	if err != nil {
		return 0, 0, nil, err
	}
	if !ok {
		return 0, 0, nil, fmt.Errorf("hostsplit: spool lost batch %d for %s", seq, id)
	}
	kind, n, enc, ok := decodeSpooled(v)
	if !ok {
		return 0, 0, nil, fmt.Errorf("hostsplit: spool entry %d for %s corrupt", seq, id)
	}
	return kind, n, enc, nil
}

func metaKey(name string) []byte { return append([]byte{'m'}, name...) }

// meta returns the metadata value name.
func (st *store) meta(name string) ([]byte, bool, error) { return st.get(metaKey(name)) }

func (st *store) setMeta(name string, v []byte) error {
	if err := st.db.Set(metaKey(name), v, pebble.Sync); err != nil {
		return fmt.Errorf("hostsplit: write %s: %w", name, err)
	}
	return nil
}

func archiveKey(id NodeID, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(peerKey('a', id), seq)
}

// ack moves the batches of peer from..to from the spool to the peer's
// archive, unchanged (point deletes: cheaper than range tombstones at one
// ack per batch). It need not be synced: the move is one atomic write, and
// a forgotten one only causes a harmless resend (archived at its next ack).
func (st *store) ack(id NodeID, from, to uint64) error {
	b := st.db.NewBatch()
	defer b.Close()
	it, err := st.db.NewIter(&pebble.IterOptions{LowerBound: spoolKey(id, from), UpperBound: spoolKey(id, to+1)})
	if err != nil {
		return fmt.Errorf("hostsplit: spool scan: %w", err)
	}
	for it.First(); it.Valid(); it.Next() {
		k := it.Key()
		seq := binary.BigEndian.Uint64(k[len(k)-8:])
		_ = b.Set(archiveKey(id, seq), it.Value(), nil)
		_ = b.Delete(k, nil)
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("hostsplit: spool scan: %w", err)
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		return fmt.Errorf("hostsplit: spool write: %w", err)
	}
	return nil
}

// archivedBatch is one batch of a peer's archive.
type archivedBatch struct {
	seq  uint64
	kind Kind
	enc  []byte
}

// archived returns up to max archived batches of peer from seq from on,
// in seq order.
func (st *store) archived(id NodeID, from uint64, max int) ([]archivedBatch, error) {
	lo := peerKey('a', id)
	hi := append(peerKey('a', id)[:len(lo)-1], 1)
	it, err := st.db.NewIter(&pebble.IterOptions{LowerBound: archiveKey(id, from), UpperBound: hi})
	if err != nil {
		return nil, fmt.Errorf("hostsplit: archive scan: %w", err)
	}
	defer it.Close()
	var out []archivedBatch
	for it.First(); it.Valid() && len(out) < max; it.Next() {
		k := it.Key()
		if len(k) != len(lo)+8 {
			return nil, fmt.Errorf("hostsplit: archive key %q corrupt", k)
		}
		kind, _, enc, ok := decodeSpooled(it.Value())
		if !ok {
			return nil, fmt.Errorf("hostsplit: archive entry %q corrupt", k)
		}
		out = append(out, archivedBatch{seq: binary.BigEndian.Uint64(k[len(lo):]), kind: kind, enc: slices.Clone(enc)})
	}
	return out, it.Error()
}

// dropArchive deletes the archive of peer (one range tombstone), durably.
func (st *store) dropArchive(id NodeID) error {
	lo := peerKey('a', id)
	hi := append(peerKey('a', id)[:len(lo)-1], 1)
	if err := st.db.DeleteRange(lo, hi, pebble.Sync); err != nil {
		return fmt.Errorf("hostsplit: drop archive of %s: %w", id, err)
	}
	return nil
}

// archiveSize returns the number of URLs and bytes archived for peer.
func (st *store) archiveSize(id NodeID) (urls, bytes uint64, err error) {
	lo := peerKey('a', id)
	hi := append(peerKey('a', id)[:len(lo)-1], 1)
	it, err := st.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return 0, 0, fmt.Errorf("hostsplit: archive scan: %w", err)
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		_, n, _, ok := decodeSpooled(it.Value())
		if !ok {
			return 0, 0, fmt.Errorf("hostsplit: archive entry %q corrupt", it.Key())
		}
		urls += uint64(n)
		bytes += uint64(len(it.Value()))
	}
	return urls, bytes, it.Error()
}

// peerState reads, for peer, the last assigned seq and the (seq, count) of
// every batch still spooled.
func (st *store) peerState(id NodeID) (last uint64, pending map[uint64]int, err error) {
	v, ok, err := st.get(peerKey('n', id))
	if err != nil {
		return 0, nil, err
	}
	if ok && len(v) == 8 {
		last = binary.BigEndian.Uint64(v)
	}
	pending = map[uint64]int{}
	lo := peerKey('s', id)
	hi := append(peerKey('s', id)[:len(lo)-1], 1)
	it, err := st.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return 0, nil, fmt.Errorf("hostsplit: spool scan: %w", err)
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		k := it.Key()
		if len(k) != len(lo)+8 {
			return 0, nil, fmt.Errorf("hostsplit: spool key %q corrupt", k)
		}
		_, n, _, ok := decodeSpooled(it.Value())
		if !ok {
			return 0, nil, fmt.Errorf("hostsplit: spool entry %q corrupt", k)
		}
		pending[binary.BigEndian.Uint64(k[len(lo):])] = n
	}
	return last, pending, it.Error()
}

// applied returns the epoch and last applied seq recorded for sender.
func (st *store) applied(sender NodeID) (epoch, seq uint64, err error) {
	v, ok, err := st.get(peerKey('r', sender))
	if err != nil || !ok || len(v) != 16 {
		return 0, 0, err
	}
	return binary.BigEndian.Uint64(v), binary.BigEndian.Uint64(v[8:]), nil
}

func (st *store) setApplied(sender NodeID, epoch, seq uint64) error {
	v := binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, epoch), seq)
	st.syncs.Add(1)
	if err := st.db.Set(peerKey('r', sender), v, pebble.Sync); err != nil {
		return fmt.Errorf("hostsplit: record applied batch: %w", err)
	}
	return nil
}

// pebbleLogger sends pebble's messages to slog: info at debug level.
type pebbleLogger struct{ l *slog.Logger }

func (p pebbleLogger) Infof(format string, args ...any) {
	p.l.Debug(fmt.Sprintf("pebble: "+format, args...))
}
func (p pebbleLogger) Errorf(format string, args ...any) {
	p.l.Error(fmt.Sprintf("pebble: "+format, args...))
}
func (p pebbleLogger) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf("pebble: "+format, args...))
}
