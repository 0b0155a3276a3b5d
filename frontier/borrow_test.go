package frontier

import (
	"errors"
	"testing"
	"time"
)

// TestBorrowShell: Borrow and Return through the Frontier — the slot of a
// host without URLs, its politeness state kept when it goes inactive and
// across a restart, a Next that must wait for a borrowed host, Idle, and
// misuse errors.
func TestBorrowShell(t *testing.T) {
	dir := t.TempDir()
	clock := NewManualClock(epoch)
	o := Options{Clock: clock, Factor: 10, MaxDelay: time.Minute, BorrowHold: 50 * time.Millisecond, BorrowPoll: 20 * time.Millisecond}
	f := open(t, dir, o)
	// b is unknown to the frontier: free at once.
	b, ok, _, err := f.Borrow("b")
	if err != nil || !ok {
		t.Fatalf("Borrow(b) = %v, %v", ok, err)
	}
	if f.Idle() {
		t.Error("Idle with a borrow outstanding")
	}
	if _, ok, retry, _ := f.Borrow("b"); ok || !retry.Equal(epoch.Add(20*time.Millisecond)) {
		t.Fatalf("second Borrow(b) while in flight: ok=%v retry=%v", ok, retry.Sub(epoch))
	}
	clock.Advance(10 * time.Millisecond)
	if err := f.Return(b, Result{Duration: 10 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if err := f.Return(b, Result{}); !errors.Is(err, ErrUnknownBorrow) {
		t.Fatalf("second Return: %v, want ErrUnknownBorrow", err)
	}
	if !f.Idle() {
		t.Error("not Idle after Return")
	}
	// The refused borrower above was promised the slot after the fetch:
	// 10 × 10ms from now, then the hold.
	if _, ok, retry, _ := f.Borrow("b"); ok || !retry.Equal(epoch.Add(110*time.Millisecond)) {
		t.Fatalf("Borrow(b) while resting: ok=%v retry=%v", ok, retry.Sub(epoch))
	}
	// URLs of b arrive after that refusal: nothing was promised then (b had
	// no URL to hold its slot against), so Next may take b at 110ms. The
	// borrower, refused again while that fetch is in flight, is promised
	// the slot after it: the queue waits the hold on top of b's rest.
	if err := f.Add(items("b", 2)...); err != nil {
		t.Fatal(err)
	}
	clock.Set(epoch.Add(110 * time.Millisecond))
	l, ok, err := f.TryNext()
	if err != nil || !ok {
		t.Fatalf("TryNext at 110ms: %v, %v", ok, err)
	}
	if _, ok, _, _ := f.Borrow("b"); ok {
		t.Fatal("Borrow granted during a fetch")
	}
	clock.Advance(10 * time.Millisecond)
	if err := f.Done(l, Result{Duration: 10 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	clock.Set(epoch.Add(220 * time.Millisecond)) // b's rest is over
	if _, ok, _ := f.TryNext(); ok {
		t.Fatal("Next took the slot promised to a borrower")
	}
	b, ok, retry, err := f.Borrow("b")
	if err != nil || !ok {
		t.Fatalf("promised Borrow(b) at 220ms: ok=%v retry=%v err=%v", ok, retry.Sub(epoch), err)
	}
	if err := f.Return(b, Result{Duration: time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := f.Borrow("b"); !errors.Is(err, ErrClosed) {
		t.Fatalf("Borrow after Close: %v", err)
	}

	// After a restart b's rest (10 × 1ms after the Return at 220ms) still
	// holds.
	f = open(t, dir, o)
	defer f.Close()
	if _, ok, retry, _ := f.Borrow("c"); !ok {
		t.Fatalf("Borrow(c) refused until %v", retry)
	}
	if _, ok, retry, _ := f.Borrow("b"); ok || !retry.Equal(epoch.Add(230*time.Millisecond)) {
		t.Fatalf("Borrow(b) after restart: ok=%v retry=%v, want refused until 230ms", ok, retry.Sub(epoch))
	}
	if _, _, _, err := f.Borrow(""); !errors.Is(err, ErrInvalidItem) {
		t.Fatalf("Borrow(\"\"): %v", err)
	}
	if s := f.Stats(); s.Borrowed != 1 || s.BorrowWaits != 1 {
		t.Errorf("stats: Borrowed %d BorrowWaits %d, want 1 and 1", s.Borrowed, s.BorrowWaits)
	}
}
