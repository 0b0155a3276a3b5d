package hostsplit

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// Spool is a node's durable per-peer queue of outbound batches (pebble, in
// Options.DataDir), with the archive of acknowledged batches, the applied
// marks of inbound batches, the persisted membership view and a small
// metadata store. Batches enter with sequence numbers per peer, leave when
// the peer acknowledges them and move to the archive (see store). Safe for
// concurrent use; the Splitter that opened it closes it.
type Spool struct {
	opts *Options
	st   *store

	mu     sync.RWMutex // read-held while using the store; closing takes it
	closed bool

	handoffBatches, handoffBytes atomic.Uint64
}

// epoch is the spool's epoch, drawn once when it was created: a batch is
// identified by (sender, epoch, seq).
func (sp *Spool) epoch() uint64 { return sp.st.epoch }

// withStore runs fn on the store unless the spool is closed.
func (sp *Spool) withStore(fn func(*store) error) error {
	sp.mu.RLock()
	defer sp.mu.RUnlock()
	if sp.closed {
		return ErrClosed
	}
	return fn(sp.st)
}

// close waits for the store's users and closes it.
func (sp *Spool) close() error {
	sp.mu.Lock()
	sp.closed = true
	sp.mu.Unlock()
	return sp.st.close()
}

// openQueue loads the persisted state about peer p: its queue and the
// last batch applied from it.
func (sp *Spool) openQueue(p *peer) error {
	last, pending, err := sp.st.peerState(p.id)
	if err != nil {
		return err
	}
	q := &p.q
	q.lastSeq, q.pending, q.spooledAt = last, pending, map[uint64]time.Time{}
	q.acked = last
	for seq, n := range pending {
		q.acked = min(q.acked, seq-1)
		q.pendingURLs += n
	}
	p.l.wireHigh = last
	p.l.inEpoch, p.l.inApplied, err = sp.st.applied(p.id)
	return err
}

// append encodes urls as the next batch for p and writes it to the spool.
// The caller holds p.q.flushMu.
func (sp *Spool) append(p *peer, urls []string) error {
	slices.Sort(urls)
	uniq := slices.Compact(urls)
	enc, err := EncodeBatch(nil, uniq, sp.opts.Codec)
	if err != nil {
		return err
	}
	q := &p.q
	q.mu.Lock()
	seq := q.lastSeq + 1
	q.mu.Unlock()
	if err := sp.withStore(func(st *store) error { return st.putBatch(p.id, seq, KindURLs, len(uniq), enc) }); err != nil {
		return err
	}
	q.mu.Lock()
	q.lastSeq = seq
	q.pending[seq] = len(uniq)
	q.spooledAt[seq] = sp.opts.Clock.Now()
	q.pendingURLs += len(uniq)
	q.mu.Unlock()
	p.st.batchDups.Add(uint64(len(urls) - len(uniq)))
	p.st.sentURLs.Add(uint64(len(uniq)))
	p.st.sentBatches.Add(1)
	p.st.spooledBytes.Add(uint64(len(enc)))
	p.st.rawBytes.Add(uint64(totalLen(uniq)))
	q.wake()
	return nil
}

// encoded is one batch appendMany writes.
type encoded struct {
	p     *peer
	count int
	enc   []byte
	raw   int
}

// appendMany spools urls[i] for peers[i] as batches of kind, plus the
// metadata and deletions, in one synced write. The caller holds no peer's
// flushMu.
func (sp *Spool) appendMany(peers []*peer, urls [][]string, kind Kind, meta map[string][]byte, deletes [][]byte) error {
	for _, p := range peers {
		p.q.flushMu.Lock()
	}
	defer func() {
		for _, p := range peers {
			p.q.flushMu.Unlock()
		}
	}()
	return sp.appendManyLocked(peers, urls, kind, meta, deletes)
}

// appendManyLocked is appendMany with every peer's flushMu held.
func (sp *Spool) appendManyLocked(peers []*peer, urls [][]string, kind Kind, meta map[string][]byte, deletes [][]byte) error {
	var outs []encoded
	for i, p := range peers {
		more, err := sp.encode(p, urls[i])
		if err != nil {
			return err
		}
		outs = append(outs, more...)
	}
	if len(outs) == 0 && len(meta) == 0 && len(deletes) == 0 {
		return nil
	}
	var seqs []uint64
	err := sp.withStore(func(st *store) error {
		var err error
		seqs, err = st.putMany(outs, kind, meta, deletes)
		return err
	})
	if err != nil {
		return err
	}
	for i, o := range outs {
		p := o.p
		p.q.mu.Lock()
		p.q.lastSeq = seqs[i]
		p.q.pending[seqs[i]] = o.count
		if kind == KindURLs { // only URL batches wait for company (Transport.message)
			p.q.spooledAt[seqs[i]] = sp.opts.Clock.Now()
		}
		p.q.pendingURLs += o.count
		p.q.mu.Unlock()
		p.st.sentURLs.Add(uint64(o.count))
		p.st.sentBatches.Add(1)
		p.st.spooledBytes.Add(uint64(len(o.enc)))
		p.st.rawBytes.Add(uint64(o.raw))
		if kind != KindURLs {
			sp.handoffBatches.Add(1)
			sp.handoffBytes.Add(uint64(len(o.enc)))
		}
		p.q.wake()
	}
	return nil
}

// encode splits urls (sorted and deduplicated first) into the batches
// for p; URLs over Limits.MaxURLLen are dropped and counted.
func (sp *Spool) encode(p *peer, urls []string) ([]encoded, error) {
	urls = slices.Clone(urls)
	slices.Sort(urls)
	n := len(urls)
	urls = slices.Compact(urls)
	p.st.batchDups.Add(uint64(n - len(urls)))
	var outs []encoded
	for len(urls) > 0 {
		n, size := 0, 0
		for n < len(urls) && n < sp.opts.BatchMaxURLs && size+len(urls[n]) <= sp.opts.BatchMaxBytes {
			size += len(urls[n])
			n++
		}
		n = max(n, 1)
		if len(urls[0]) > sp.opts.Limits.MaxURLLen {
			p.st.tooLong.Add(1)
			urls = urls[1:]
			continue
		}
		enc, err := EncodeBatch(nil, urls[:n], sp.opts.Codec)
		if err != nil {
			return nil, err
		}
		outs = append(outs, encoded{p: p, count: n, enc: enc, raw: size})
		urls = urls[n:]
	}
	return outs, nil
}

// putMany writes outs (their seqs following each peer's last), meta and
// deletes in one synced write, and returns the seqs.
func (st *store) putMany(outs []encoded, kind Kind, meta map[string][]byte, deletes [][]byte) ([]uint64, error) {
	b := st.db.NewBatch()
	defer b.Close()
	seqs := make([]uint64, len(outs))
	next := map[*peer]uint64{}
	for i, o := range outs {
		if _, ok := next[o.p]; !ok {
			o.p.q.mu.Lock()
			next[o.p] = o.p.q.lastSeq
			o.p.q.mu.Unlock()
		}
		next[o.p]++
		seqs[i] = next[o.p]
		st.setBatch(b, o.p.id, seqs[i], kind, o.count, o.enc)
	}
	for name, v := range meta {
		_ = b.Set(metaKey(name), v, nil)
	}
	for _, k := range deletes {
		_ = b.Delete(k, nil)
	}
	st.syncs.Add(1)
	if err := b.Commit(pebble.Sync); err != nil {
		return nil, fmt.Errorf("hostsplit: spool write: %w", err)
	}
	return seqs, nil
}

// ackUpTo forgets p's batches up to seq (archiving them); it reports
// whether any was new.
func (sp *Spool) ackUpTo(p *peer, seq uint64) bool {
	q := &p.q
	q.mu.Lock()
	defer q.mu.Unlock()
	seq = min(seq, q.lastSeq)
	if seq <= q.acked {
		return false
	}
	if err := sp.st.ack(p.id, q.acked+1, seq); err != nil {
		sp.opts.Logger.Error("hostsplit: forgetting acknowledged batches", "peer", p.id, "err", err)
	}
	for s := q.acked + 1; s <= seq; s++ {
		if n, ok := q.pending[s]; ok {
			delete(q.pending, s)
			q.pendingURLs -= n
			p.st.ackedBatches.Add(1)
		}
		delete(q.spooledAt, s)
	}
	q.acked = seq
	return true
}

// forget drops batch seq from p's queue: it was re-routed (its spool entry
// deleted in the same write).
func (q *queue) forget(seq uint64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if n, ok := q.pending[seq]; ok {
		delete(q.pending, seq)
		q.pendingURLs -= n
	}
	delete(q.spooledAt, seq)
	q.acked = max(q.acked, seq)
}

// pendingSeqs returns the seqs spooled and not acknowledged, in order.
func (q *queue) pendingSeqs() []uint64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return slices.Sorted(maps.Keys(q.pending))
}

// Meta returns a metadata value stored by SpoolHandoff or SetMeta.
func (sp *Spool) Meta(name string) (v []byte, ok bool, err error) {
	err = sp.withStore(func(st *store) error {
		v, ok, err = st.meta(name)
		return err
	})
	return v, ok, err
}

// SetMeta stores a metadata value durably.
func (sp *Spool) SetMeta(name string, v []byte) error {
	return sp.withStore(func(st *store) error { return st.setMeta(name, v) })
}

// DropArchive forgets the batches acknowledged by id, a node that left
// gracefully (its hand-off moved what it knew): nothing will re-send them.
func (sp *Spool) DropArchive(id NodeID) error {
	return sp.withStore(func(st *store) error { return st.dropArchive(id) })
}

// ArchiveSize returns the number of URLs and the bytes (encoded batches,
// as stored before pebble's own compression) archived for peer id
// (acknowledged, kept for ResendLost).
func (sp *Spool) ArchiveSize(id NodeID) (urls, bytes uint64, err error) {
	err = sp.withStore(func(st *store) error {
		urls, bytes, err = st.archiveSize(id)
		return err
	})
	return urls, bytes, err
}

// Mark returns the spool's current mark.
func (sp *Spool) Mark() (SpoolMark, error) {
	var m SpoolMark
	err := sp.withStore(func(st *store) error {
		m.Epoch = st.epoch
		var err error
		if m.Last, err = readLasts(st.db); err == nil {
			m.Applied, err = readApplied(st.db)
		}
		return err
	})
	return m, err
}

type savedView struct {
	Epoch   uint64   `json:"epoch"`
	Members []Member `json:"members"`
	Prev    []NodeID `json:"prev,omitempty"`
	Removed []NodeID `json:"removed,omitempty"`
}

func (st *store) loadView() (savedView, bool, error) {
	v, ok, err := st.meta("view")
	if err != nil || !ok {
		return savedView{}, false, err
	}
	var sv savedView
	if err := json.Unmarshal(v, &sv); err != nil {
		return savedView{}, false, fmt.Errorf("hostsplit: stored view: %w", err)
	}
	return sv, true, nil
}

func (st *store) saveView(vs *viewState) error {
	b, err := json.Marshal(savedView{Epoch: vs.v.Epoch, Members: vs.v.Members, Prev: vs.prev, Removed: vs.removed})
	if err != nil {
		return err
	}
	return st.setMeta("view", b)
}

// SpooledBatch is a batch a spool holds for a peer that has not
// acknowledged it (not delivered, as far as this node knows).
type SpooledBatch struct {
	Peer NodeID
	Seq  uint64
	Kind Kind
	URLs []string
}

// ReadSpool opens the spool in dir read-only and calls fn with each batch
// not yet acknowledged, by peer then sequence number (crawler export). The
// spool must not be in use (its Splitter closed); a dir without a spool
// calls fn never. A malformed batch is an error: InspectSpool and
// RebuildSpool deal with damage.
func ReadSpool(dir string, lim Limits, fn func(SpooledBatch) error) error {
	if names, err := os.ReadDir(dir); errors.Is(err, os.ErrNotExist) || (err == nil && len(names) == 0) {
		return nil
	}
	db, err := openReadOnly(dir)
	if err != nil {
		return fmt.Errorf("hostsplit: spool %s: %w", dir, err)
	}
	defer db.Close()
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: []byte("s"), UpperBound: []byte("t")})
	if err != nil {
		return fmt.Errorf("hostsplit: spool %s: %w", dir, err)
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		e, err := parseEntry(it.Key(), it.Value(), lim)
		if err != nil {
			return fmt.Errorf("hostsplit: spool %s: entry %q: %w", dir, it.Key(), err)
		}
		if err := fn(SpooledBatch{Peer: e.peer, Seq: e.seq, Kind: e.kind, URLs: e.urls}); err != nil {
			return err
		}
	}
	if err := it.Error(); err != nil {
		return fmt.Errorf("hostsplit: spool %s: %w", dir, err)
	}
	return nil
}
