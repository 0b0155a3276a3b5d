package hostsplit

import (
	"testing"

	pb "github.com/sextant-crawler/sextant/proto"
)

// The Kind constants are stated without proto (views are free of it): they
// must stay equal to the wire's BatchKind values.
func TestKindMatchesWire(t *testing.T) {
	for k, want := range map[Kind]pb.BatchKind{
		KindURLs:   pb.BatchKind_BATCH_KIND_URLS,
		KindSeen:   pb.BatchKind_BATCH_KIND_SEEN,
		KindQueued: pb.BatchKind_BATCH_KIND_QUEUED,
	} {
		if got := kindToProto(k); got != want {
			t.Errorf("kindToProto(%d) = %v, want %v", k, got, want)
		}
		if got := kindFromProto(want); got != k {
			t.Errorf("kindFromProto(%v) = %d, want %d", want, got, k)
		}
	}
}
