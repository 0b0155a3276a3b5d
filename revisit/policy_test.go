package revisit

import (
	"math"
	"testing"
	"time"
)

// TestUpdateAdaptive walks one URL through fetches (fake times) and checks
// each verdict, interval and due time.
func TestUpdateAdaptive(t *testing.T) {
	o := Options{Adaptive: true, Min: time.Second, Max: 16 * time.Second}
	o.EnsureDefaults()
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if o.Interval != 4*time.Second {
		t.Fatalf("first interval %v, want 4s (geometric mean of 1s and 16s)", o.Interval)
	}
	t0 := time.Unix(1_000_000, 0)
	steps := []struct {
		name string
		ob   Observation
		v    Verdict
		iv   time.Duration
	}{
		{"first", Observation{Digest: "a", ETag: `"a"`}, First, 4 * time.Second},
		{"same digest", Observation{Digest: "a", ETag: `"a"`}, Unchanged, 8 * time.Second},
		{"304", Observation{NotModified: true}, Unchanged, 16 * time.Second},
		{"304 at max", Observation{NotModified: true}, Unchanged, 16 * time.Second},
		{"changed", Observation{Digest: "b", ETag: `"b"`}, Changed, 8 * time.Second},
		{"failed keeps", Observation{Failed: true}, Failed, 8 * time.Second},
		{"changed", Observation{Digest: "c"}, Changed, 4 * time.Second},
		{"changed", Observation{Digest: "d"}, Changed, 2 * time.Second},
		{"changed", Observation{Digest: "e"}, Changed, 1 * time.Second},
		{"changed at min", Observation{Digest: "f"}, Changed, 1 * time.Second},
		{"redirect stand-in", Observation{Digest: "status:301 /x"}, Changed, 1 * time.Second},
	}
	var h History
	now := t0
	for i, s := range steps {
		now = now.Add(time.Duration(i+1) * time.Second)
		s.ob.Time = now
		var v Verdict
		h, v = o.Update(h, s.ob)
		if v != s.v || h.Interval != s.iv || !h.Due.Equal(now.Add(s.iv)) {
			t.Fatalf("step %d (%s): verdict %v interval %v due %v; want %v %v %v", i, s.name, v, h.Interval, h.Due, s.v, s.iv, now.Add(s.iv))
		}
	}
	if h.Visits != 10 || h.Changes != 6 {
		t.Errorf("visits %d changes %d, want 10 and 6", h.Visits, h.Changes)
	}
	if h.Digest != "status:301 /x" || h.ETag != "" {
		t.Errorf("validators %q %q: want the last 2xx answer's", h.Digest, h.ETag)
	}
}

// TestUpdateKeepsValidatorsOn304: a 304 without validators keeps the old ones.
func TestUpdateKeepsValidatorsOn304(t *testing.T) {
	o := Options{Interval: time.Minute}
	o.EnsureDefaults()
	h, _ := o.Update(History{}, Observation{Time: time.Unix(1, 0), Digest: "a", ETag: `"x"`, LastModified: "Mon"})
	h, v := o.Update(h, Observation{Time: time.Unix(100, 0), NotModified: true})
	if v != Unchanged || h.ETag != `"x"` || h.LastModified != "Mon" || h.Digest != "a" || h.Interval != time.Minute {
		t.Fatalf("after 304: %v %+v", v, h)
	}
	if !h.Due.Equal(time.Unix(160, 0)) || !h.LastChange.Equal(time.Unix(1, 0)) {
		t.Fatalf("due %v last change %v", h.Due, h.LastChange)
	}
}

func TestParse(t *testing.T) {
	for _, c := range []struct {
		in       string
		iv       time.Duration
		adaptive bool
		bad      bool
	}{
		{"", 0, false, false}, {"off", 0, false, false}, {"adaptive", 0, true, false},
		{"90s", 90 * time.Second, false, false}, {"-1s", 0, false, true}, {"often", 0, false, true},
	} {
		iv, ad, err := Parse(c.in)
		if (err != nil) != c.bad || iv != c.iv || ad != c.adaptive {
			t.Errorf("Parse(%q) = %v %v %v", c.in, iv, ad, err)
		}
	}
}

func TestValidate(t *testing.T) {
	for _, o := range []Options{
		{Adaptive: true, Min: 2 * time.Second, Max: time.Second},
		{Adaptive: true, Min: time.Second, Max: 2 * time.Second, Grow: 0.5},
		{Adaptive: true, Min: time.Second, Max: 2 * time.Second, Shrink: 1.5},
	} {
		o.EnsureDefaults()
		if o.Validate() == nil {
			t.Errorf("%+v: valid", o)
		}
	}
	var off Options
	if off.Enabled() || off.Validate() != nil {
		t.Error("zero Options: want off and valid")
	}
}

func TestChangeRate(t *testing.T) {
	for _, c := range []struct {
		n, x uint32
		iv   time.Duration
		want float64
	}{
		{0, 0, time.Second, 0},
		{10, 0, time.Second, -math.Log(10.5 / 10.5)},
		{10, 5, time.Second, -math.Log(5.5 / 10.5)},
		{10, 10, 2 * time.Second, -math.Log(0.5/10.5) / 2},
	} {
		if got := ChangeRate(c.n, c.x, c.iv); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("ChangeRate(%d, %d, %v) = %v, want %v", c.n, c.x, c.iv, got, c.want)
		}
	}
}
