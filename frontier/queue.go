package frontier

import (
	"github.com/cockroachdb/pebble/v2"
)

// Chunk sizes: how many entries of one queue are read into memory at once.
// Only these heads live in memory, so memory is
// O(BackQueues × hostChunk + frontChunk) whatever the number of URLs queued.
const (
	frontChunk = 256
	hostChunk  = 16
)

// entry is one queued URL and the sequence number in its pebble key, which
// is a front-queue key if front is set (a URL handed to a back queue in
// memory only) and a back-queue key otherwise.
type entry struct {
	seq   uint64
	item  Item
	front bool
}

func (e *entry) key() []byte {
	if e.front {
		return frontKey(e.item.Priority, e.seq)
	}
	return hostKey(e.item.Host, e.seq)
}

// headQueue is the in-memory head of a FIFO queue stored in pebble under one
// key prefix, ordered by sequence number.
type headQueue struct {
	buf    []entry // the head, in key order
	more   bool    // keys after cursor may exist on disk that are not in buf
	cursor uint64  // the highest seq under this queue's prefix read into buf
	front  bool    // a front queue (its keys are front-queue keys)
}

func (q *headQueue) empty() bool { return len(q.buf) == 0 && !q.more }

// fits reports whether an entry appended now would stay in memory: the
// queue has nothing on disk beyond its head and the head has room.
func (q *headQueue) fits(chunk int) bool { return !q.more && len(q.buf) < chunk }

// appended records that e is at the tail of the queue: in memory if it
// fits, otherwise (the caller has written it under the queue's prefix) on
// disk only.
func (q *headQueue) appended(e entry, chunk int) {
	if q.fits(chunk) {
		q.buf = append(q.buf, e)
		if e.front == q.front {
			q.cursor = max(q.cursor, e.seq)
		}
		return
	}
	q.more = true
}

// pop removes the head; the caller has checked len(q.buf) > 0.
func (q *headQueue) pop() entry {
	e := q.buf[0]
	q.buf[0] = entry{}
	q.buf = q.buf[1:]
	if len(q.buf) == 0 {
		q.buf = nil
	}
	return e
}

// fill reads the next chunk of the queue from db if the head is empty.
func (q *headQueue) fill(db *pebble.DB, prefix []byte, chunk int) error {
	if len(q.buf) > 0 || !q.more {
		return nil
	}
	lower := append(append([]byte(nil), prefix...), make([]byte, 8)...)
	putSeq(lower[len(prefix):], q.cursor+1)
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return err
	}
	n := 0
	for ok := it.First(); ok && n < chunk; ok = it.Next() {
		item, err := decodeEntry(it.Value())
		if err != nil {
			it.Close()
			return err
		}
		e := entry{seq: seqOfKey(it.Key()), item: item, front: q.front}
		q.buf = append(q.buf, e)
		q.cursor = e.seq
		n++
	}
	q.more = n == chunk
	if err := it.Close(); err != nil {
		return err
	}
	return nil
}

func putSeq(b []byte, seq uint64) {
	for i := 7; i >= 0; i-- {
		b[i] = byte(seq)
		seq >>= 8
	}
}
