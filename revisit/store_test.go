package revisit

import (
	"testing"
	"time"
)

// TestStoreTakeDoneRestart: due URLs are taken once, in due order; a batch
// taken but not confirmed is taken again after a restart; the schedule
// survives a restart.
func TestStoreTakeDoneRestart(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(5000, 0)
	for i, d := range []time.Duration{3, 1, 2, 10} {
		h := History{URL: "http://a.test/" + string(rune('a'+i)), Host: "a.test", Due: t0.Add(d * time.Second)}
		if err := s.Put(uint64(i+1), h); err != nil {
			t.Fatal(err)
		}
	}
	// Rescheduling fp 4 earlier replaces its due time (no second index key).
	if err := s.Put(4, History{URL: "http://a.test/d", Host: "a.test", Due: t0.Add(4 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	if s.Len() != 4 {
		t.Fatalf("Len %d, want 4", s.Len())
	}
	if b, err := s.Take(t0, 10); err != nil || b.Seq != 0 {
		t.Fatalf("nothing due yet: %+v %v", b, err)
	}
	b, err := s.Take(t0.Add(3*time.Second), 2)
	if err != nil || b.Seq != 1 || len(b.Items) != 2 || b.Items[0].URL != "http://a.test/b" || b.Items[1].URL != "http://a.test/c" {
		t.Fatalf("Take: %+v %v", b, err)
	}
	// Not confirmed: the same batch again, even after a restart.
	s.Close()
	if s, err = Open(dir, nil); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b2, err := s.Take(t0.Add(time.Hour), 10)
	if err != nil || b2.Seq != 1 || len(b2.Items) != 2 {
		t.Fatalf("pending batch after restart: %+v %v", b2, err)
	}
	if err := s.Done(1); err != nil {
		t.Fatal(err)
	}
	b3, err := s.Take(t0.Add(time.Hour), 10)
	if err != nil || b3.Seq != 2 || len(b3.Items) != 2 || b3.Items[0].URL != "http://a.test/a" || b3.Items[1].URL != "http://a.test/d" {
		t.Fatalf("second batch: %+v %v", b3, err)
	}
	if err := s.Done(2); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.NextDue(); ok || err != nil {
		t.Fatalf("NextDue after taking all: %v %v", ok, err)
	}
	if s.Len() != 4 {
		t.Fatalf("histories are kept after Take: Len %d", s.Len())
	}
	h, ok, err := s.Get(4)
	if err != nil || !ok || !h.Due.Equal(t0.Add(4*time.Second)) {
		t.Fatalf("Get(4) = %+v %v %v", h, ok, err)
	}
	if err := s.Forget(4); err != nil || s.Len() != 3 {
		t.Fatalf("Forget: %v, Len %d", err, s.Len())
	}
	if err := s.Put(1, History{URL: "http://a.test/a", Due: t0.Add(2 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if d, ok, err := s.NextDue(); !ok || err != nil || !d.Equal(t0.Add(2*time.Hour)) {
		t.Fatalf("NextDue %v %v %v", d, ok, err)
	}
}
