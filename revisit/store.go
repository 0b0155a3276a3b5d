package revisit

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/sextant-crawler/sextant/internal/logging"
)

// Key layout in pebble (integers big-endian, so keys sort numerically):
//
//	d <due:8 unix ns> <fp:8>   index: the URL fp is due at due → empty
//	h <fp:8>                   the URL's History (JSON)
//	p                          the batch taken and not yet confirmed (JSON)
//	s                          the last batch seq taken → seq:8
const (
	prefixDue     = 'd'
	prefixHistory = 'h'
)

var (
	keyPending = []byte("p")
	keySeq     = []byte("s")
)

// ErrClosed is returned by every method called after Close.
var ErrClosed = errors.New("revisit: store closed")

// Batch is due URLs taken from the store: queue them with
// frontier.AddBatch(source, Seq, …), then call Store.Done(Seq).
type Batch struct {
	Seq   uint64
	Items []History
}

// Store is the durable revisit schedule. It is safe for concurrent use.
type Store struct {
	db     *pebble.DB
	log    *slog.Logger
	mu     sync.Mutex
	closed bool
	n      int64 // histories stored
	seq    uint64
}

// Open opens (or creates) the store in dir.
func Open(dir string, logger *slog.Logger) (*Store, error) {
	logger = logging.OrDiscard(logger)
	db, err := pebble.Open(dir, &pebble.Options{Logger: pebbleLogger{logger}})
	if err != nil {
		return nil, fmt.Errorf("revisit: open %s: %w", dir, err)
	}
	s := &Store{db: db, log: logger}
	if err := s.load(); err != nil {
		db.Close()
		return nil, fmt.Errorf("revisit: %s: %w", dir, err)
	}
	return s, nil
}

// load counts the histories and reads the last seq.
func (s *Store) load() error {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{prefixHistory}, UpperBound: []byte{prefixHistory + 1}})
	if err != nil {
		return err
	}
	for ok := it.First(); ok; ok = it.Next() {
		s.n++
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return err
	}
	v, c, err := s.db.Get(keySeq)
	switch {
	case errors.Is(err, pebble.ErrNotFound):
		return nil
	case err != nil:
		return err
	}
	defer c.Close()
	if len(v) != 8 {
		return fmt.Errorf("revisit: corrupt seq key")
	}
	s.seq = binary.BigEndian.Uint64(v)
	return nil
}

func historyKey(fp uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{prefixHistory}, fp)
}

func dueKey(t time.Time, fp uint64) []byte {
	k := binary.BigEndian.AppendUint64([]byte{prefixDue}, uint64(max(t.UnixNano(), 0)))
	return binary.BigEndian.AppendUint64(k, fp)
}

// Get returns the history of the URL whose fingerprint is fp.
func (s *Store) Get(fp uint64) (History, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return History{}, false, ErrClosed
	}
	return s.getLocked(fp)
}

func (s *Store) getLocked(fp uint64) (History, bool, error) {
	v, c, err := s.db.Get(historyKey(fp))
	if errors.Is(err, pebble.ErrNotFound) {
		return History{}, false, nil
	}
	if err != nil {
		return History{}, false, fmt.Errorf("revisit: %w", err)
	}
	defer c.Close()
	var h History
	if err := json.Unmarshal(v, &h); err != nil {
		return History{}, false, fmt.Errorf("revisit: corrupt history %016x: %w", fp, err)
	}
	return h, true, nil
}

// Put stores h as fp's history and schedules it at h.Due, replacing its
// previous due time. It returns once the write is durable (fsync): call
// it before the frontier completes the URL, so that a crash between the
// two re-fetches the URL rather than forgets its revisit.
func (s *Store) Put(fp uint64, h History) error {
	v, err := json.Marshal(&h)
	if err != nil {
		return fmt.Errorf("revisit: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	old, had, err := s.getLocked(fp)
	if err != nil {
		return err
	}
	b := s.db.NewBatch()
	defer b.Close()
	if had {
		_ = b.Delete(dueKey(old.Due, fp), nil)
	}
	_ = b.Set(historyKey(fp), v, nil)
	_ = b.Set(dueKey(h.Due, fp), nil, nil)
	if err := b.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("revisit: %w", err)
	}
	if !had {
		s.n++
	}
	return nil
}

// Forget drops fp's history and schedule (its host moved to another node).
func (s *Store) Forget(fp uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	h, had, err := s.getLocked(fp)
	if err != nil || !had {
		return err
	}
	b := s.db.NewBatch()
	defer b.Close()
	_ = b.Delete(dueKey(h.Due, fp), nil)
	_ = b.Delete(historyKey(fp), nil)
	if err := b.Commit(pebble.NoSync); err != nil {
		return fmt.Errorf("revisit: %w", err)
	}
	s.n--
	return nil
}

// Take returns up to limit URLs due at now, taken out of the schedule in
// one durable write that also records them as the pending batch. If a
// batch is pending already (a crash came before Done), Take returns it
// again: the caller's frontier.AddBatch ignores it if it was applied. An
// empty Batch (Seq 0) means nothing is due.
func (s *Store) Take(now time.Time, limit int) (Batch, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return Batch{}, ErrClosed
	}
	if b, ok, err := s.pendingLocked(); err != nil || ok {
		return b, err
	}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{prefixDue}, UpperBound: dueKey(now.Add(1), 0)})
	if err != nil {
		return Batch{}, fmt.Errorf("revisit: %w", err)
	}
	var fps []uint64
	wb := s.db.NewBatch()
	defer wb.Close()
	for ok := it.First(); ok && len(fps) < limit; ok = it.Next() {
		k := it.Key()
		if len(k) != 17 {
			it.Close()
			return Batch{}, fmt.Errorf("revisit: corrupt due key %x", k)
		}
		fps = append(fps, binary.BigEndian.Uint64(k[9:]))
		_ = wb.Delete(k, nil)
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return Batch{}, fmt.Errorf("revisit: %w", err)
	}
	if len(fps) == 0 {
		return Batch{}, nil
	}
	b := Batch{Seq: s.seq + 1, Items: make([]History, 0, len(fps))}
	for _, fp := range fps {
		h, ok, err := s.getLocked(fp)
		if err != nil {
			return Batch{}, err
		}
		if ok {
			b.Items = append(b.Items, h)
		}
	}
	v, err := json.Marshal(&b)
	if err != nil {
		return Batch{}, fmt.Errorf("revisit: %w", err)
	}
	_ = wb.Set(keyPending, v, nil)
	_ = wb.Set(keySeq, binary.BigEndian.AppendUint64(nil, b.Seq), nil)
	if err := wb.Commit(pebble.Sync); err != nil {
		return Batch{}, fmt.Errorf("revisit: %w", err)
	}
	s.seq = b.Seq
	return b, nil
}

func (s *Store) pendingLocked() (Batch, bool, error) {
	v, c, err := s.db.Get(keyPending)
	if errors.Is(err, pebble.ErrNotFound) {
		return Batch{}, false, nil
	}
	if err != nil {
		return Batch{}, false, fmt.Errorf("revisit: %w", err)
	}
	defer c.Close()
	var b Batch
	if err := json.Unmarshal(v, &b); err != nil {
		return Batch{}, false, fmt.Errorf("revisit: corrupt pending batch: %w", err)
	}
	return b, true, nil
}

// Done confirms that batch seq is queued: it is no longer pending. The
// write need not be synced: after a crash the batch is taken again and
// the frontier ignores it.
func (s *Store) Done(seq uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	b, ok, err := s.pendingLocked()
	if err != nil || !ok || b.Seq != seq {
		return err
	}
	if err := s.db.Delete(keyPending, pebble.NoSync); err != nil {
		return fmt.Errorf("revisit: %w", err)
	}
	return nil
}

// NextDue is the earliest due time scheduled, false if none.
func (s *Store) NextDue() (time.Time, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return time.Time{}, false, ErrClosed
	}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{prefixDue}, UpperBound: []byte{prefixDue + 1}})
	if err != nil {
		return time.Time{}, false, fmt.Errorf("revisit: %w", err)
	}
	defer it.Close()
	if !it.First() {
		return time.Time{}, false, it.Error()
	}
	k := it.Key()
	if len(k) != 17 {
		return time.Time{}, false, fmt.Errorf("revisit: corrupt due key %x", k)
	}
	return time.Unix(0, int64(binary.BigEndian.Uint64(k[1:9]))), true, nil
}

// Len is the number of URLs with a history (each is scheduled, queued or
// being fetched).
func (s *Store) Len() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// Each calls fn with every history, in fingerprint order (status pages,
// tests).
func (s *Store) Each(fn func(fp uint64, h History) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{prefixHistory}, UpperBound: []byte{prefixHistory + 1}})
	if err != nil {
		return fmt.Errorf("revisit: %w", err)
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		var h History
		if len(it.Key()) != 9 {
			return fmt.Errorf("revisit: corrupt history key %x", it.Key())
		}
		if err := json.Unmarshal(it.Value(), &h); err != nil {
			return fmt.Errorf("revisit: corrupt history: %w", err)
		}
		if err := fn(binary.BigEndian.Uint64(it.Key()[1:]), h); err != nil {
			return err
		}
	}
	return it.Error()
}

// Close closes the store.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	return s.db.Close()
}

// pebbleLogger sends pebble's messages to slog.
type pebbleLogger struct{ l *slog.Logger }

func (p pebbleLogger) Infof(format string, args ...any) {
	p.l.Debug("revisit: pebble: " + fmt.Sprintf(format, args...))
}

func (p pebbleLogger) Errorf(format string, args ...any) {
	p.l.Error("revisit: pebble: " + fmt.Sprintf(format, args...))
}

func (p pebbleLogger) Fatalf(format string, args ...any) {
	p.l.Error("revisit: pebble: fatal: " + fmt.Sprintf(format, args...))
	panic(fmt.Sprintf(format, args...))
}
