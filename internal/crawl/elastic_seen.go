package crawl

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/sextant-crawler/sextant/due"
	"github.com/sextant-crawler/sextant/frontier"
)

// DeliverSeen records URLs fetched by another node (a hand-off) in the
// DUE's seen-set and counts them, per host, under the frontier's per-host
// budget once per (source, seq): with the queued URLs of the hand-off
// (counted as they are queued) a moved host's count is what its old owner
// had admitted, so the budget holds across the change of owner.
//
// The URLs are also appended to DataDir/handoff-seen.log: if the host moves
// on to a third node, this node's hand-off passes them on with the URLs it
// fetched itself (its crawl log), or the third node would fetch them again.
func (n *Node) DeliverSeen(_ context.Context, source string, seq uint64, urls []string) error {
	if err := appendSeenIn(filepath.Join(n.opts.DataDir, seenInLog), urls); err != nil {
		return err
	}
	if err := n.addSeen(urls); err != nil {
		return err
	}
	counts := map[string]int{}
	for _, u := range urls {
		if h := hostOf(u); h != "" {
			counts[h]++
		}
	}
	return n.fr.AddAdmitted(source, seq, counts)
}

// seenInLog (in the data dir) lists the URLs handed to this node as
// already fetched, one per line; a batch delivered again is listed again.
const seenInLog = "handoff-seen.log"

var seenInMu sync.Mutex // one append at a time

// appendSeenIn appends urls to the file at path, durably.
func appendSeenIn(path string, urls []string) error {
	var b []byte
	for _, u := range urls {
		if strings.ContainsAny(u, "\n\r") {
			continue // cannot happen for URLs that passed the DUE
		}
		b = append(append(b, u...), '\n')
	}
	seenInMu.Lock()
	defer seenInMu.Unlock()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("crawl: hand-off: %w", err)
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	return errors.Join(err, f.Close())
}

// readSeenIn returns the URLs of the seen-in log at path (none if it does
// not exist); a torn last line is returned as is and matches no host.
func readSeenIn(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("crawl: hand-off: %w", err)
	}
	return strings.Fields(string(b)), nil
}

func (n *Node) addSeen(urls []string) error {
	es := make([]due.Entry, 0, len(urls))
	for _, u := range urls {
		es = append(es, due.Entry{FP: urlFP(u), URL: u, SeenOnly: true})
	}
	n.metrics.Received.Add(uint64(len(urls)))
	return n.due.AddBatch(es)
}

// DeliverQueued takes URLs queued by another node (a hand-off): they join
// the seen-set and go straight to the frontier, once per (source, seq).
func (n *Node) DeliverQueued(ctx context.Context, source string, seq uint64, urls []string) error {
	if err := n.addSeen(urls); err != nil {
		return err
	}
	items := make([]frontier.Item, 0, len(urls))
	for _, u := range urls {
		host := hostOf(u)
		items = append(items, frontier.Item{URL: u, Host: host, Depth: receivedDepth(u)})
	}
	return n.fr.AddBatch(source, seq, items)
}

// testDeliverHook, if set (a test's child process), is called once a
// hand-off batch is applied, before it is acknowledged: "seen" or "queued".
var testDeliverHook func(kind string)

// DeliverSeen and DeliverQueued pass hand-offs to the node.
func (s *sinkRef) DeliverSeen(ctx context.Context, source string, seq uint64, urls []string) error {
	err := s.n.DeliverSeen(ctx, source, seq, urls)
	if err == nil && testDeliverHook != nil {
		testDeliverHook("seen")
	}
	return err
}

func (s *sinkRef) DeliverQueued(ctx context.Context, source string, seq uint64, urls []string) error {
	err := s.n.DeliverQueued(ctx, source, seq, urls)
	if err == nil && testDeliverHook != nil {
		testDeliverHook("queued")
	}
	return err
}
