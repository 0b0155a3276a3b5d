// Package tracegen makes synthetic fingerprint streams with the shape of a
// crawl's URL stream (popularity, locality, new URLs), for the cache
// simulator and the caches' tests.
package tracegen

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
)

// Options shape a synthetic request stream with the two properties the
// caching study found in real crawls: popularity (a Zipf law over a universe
// of popular URLs) and locality of reference (repeats of recent requests),
// plus a steady flow of URLs never seen before. A repeat is near (a link
// repeated on the same page: distance log-uniform in [1, Near]) with chance
// NearProb, else far (distance log-uniform in [FarMin, Window]: links to the
// pages of a site crawled a while ago), which gives the curve the study's
// three phases. Zero fields take the defaults noted.
type Options struct {
	Seed       uint64  // default 1
	Universe   uint64  // popular URLs, default 1<<22
	ZipfS      float64 // Zipf exponent (> 1), default 1.1
	NewProb    float64 // chance of a brand-new URL, default 0.15
	RecentProb float64 // chance of repeating a recent request, default 0.75
	NearProb   float64 // chance that a repeat is near, default 0.4
	Near       int     // default 64
	FarMin     int     // default 1<<12
	Window     int     // how far back a repeat may reach, default 1<<18
}

// ErrBadOptions is wrapped by Options.Validate.
var ErrBadOptions = errors.New("tracegen: bad options")

// EnsureDefaults fills zero fields.
func (o *Options) EnsureDefaults() {
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.Universe == 0 {
		o.Universe = 1 << 22
	}
	if o.ZipfS == 0 {
		o.ZipfS = 1.1
	}
	if o.NewProb == 0 {
		o.NewProb = 0.15
	}
	if o.RecentProb == 0 {
		o.RecentProb = 0.75
	}
	if o.NearProb == 0 {
		o.NearProb = 0.4
	}
	if o.Near == 0 {
		o.Near = 64
	}
	if o.Window == 0 {
		o.Window = 1 << 18
	}
	if o.FarMin == 0 {
		o.FarMin = min(1<<12, o.Window)
	}
}

// Validate reports every bad field.
func (o *Options) Validate() error {
	var errs []string
	if o.ZipfS <= 1 {
		errs = append(errs, fmt.Sprintf("ZipfS %g must be > 1", o.ZipfS))
	}
	if o.NewProb < 0 || o.RecentProb < 0 || o.NewProb+o.RecentProb > 1 {
		errs = append(errs, fmt.Sprintf("NewProb %g + RecentProb %g must be within [0,1]", o.NewProb, o.RecentProb))
	}
	if o.NearProb < 0 || o.NearProb > 1 {
		errs = append(errs, fmt.Sprintf("NearProb %g must be within [0,1]", o.NearProb))
	}
	if o.Window < 1 || o.Near < 1 || o.FarMin < 1 || o.FarMin > o.Window {
		errs = append(errs, fmt.Sprintf("need 1 ≤ Near (%d), 1 ≤ FarMin (%d) ≤ Window (%d)", o.Near, o.FarMin, o.Window))
	}
	if o.Universe < 2 {
		errs = append(errs, fmt.Sprintf("Universe %d must be ≥ 2", o.Universe))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %s", ErrBadOptions, strings.Join(errs, "; "))
	}
	return nil
}

// Generator produces the synthetic stream; deterministic for given options.
// Not safe for concurrent use.
type Generator struct {
	o     Options
	rng   *rand.Rand
	zipf  *rand.Zipf
	ring  []uint64 // the latest requests
	born  []uint64 // the latest new URLs
	n     uint64
	nb    uint64
	fresh uint64
	logN  float64 // log Near
	logF  float64 // log FarMin
	logW  float64 // log Window
}

// NewGenerator returns a generator for o (defaults applied to a copy).
func New(o Options) (*Generator, error) {
	o.EnsureDefaults()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	r := rand.New(rand.NewPCG(o.Seed, o.Seed^0x5851f42d4c957f2d))
	return &Generator{
		o: o, rng: r,
		zipf: rand.NewZipf(r, o.ZipfS, 1, o.Universe-1),
		ring: make([]uint64, o.Near),
		born: make([]uint64, o.Window),
		logN: math.Log(float64(o.Near)),
		logF: math.Log(float64(o.FarMin)),
		logW: math.Log(float64(o.Window)),
	}, nil
}

// Mix64 is a bijective finaliser: distinct ids give distinct fingerprints.
func Mix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// Next returns the next fingerprint of the stream.
func (g *Generator) Next() uint64 {
	var fp uint64
	u := g.rng.Float64()
	switch {
	case u < g.o.NewProb:
		g.fresh++
		fp = Mix64(g.o.Seed<<40 ^ 1<<63 ^ g.fresh)
		g.born[g.nb%uint64(len(g.born))] = fp
		g.nb++
	case u < g.o.NewProb+g.o.RecentProb && g.n > 0:
		if g.rng.Float64() < g.o.NearProb {
			d := min(max(uint64(math.Exp(g.rng.Float64()*g.logN)), 1), g.n, uint64(len(g.ring)))
			fp = g.ring[(g.n-d)%uint64(len(g.ring))]
		} else if g.nb > 0 {
			d := uint64(math.Exp(g.logF + g.rng.Float64()*(g.logW-g.logF)))
			d = min(max(d, 1), g.nb, uint64(len(g.born)))
			fp = g.born[(g.nb-d)%uint64(len(g.born))]
		} else {
			fp = Mix64(g.o.Seed<<40 ^ g.zipf.Uint64())
		}
	default:
		fp = Mix64(g.o.Seed<<40 ^ g.zipf.Uint64())
	}
	g.ring[g.n%uint64(len(g.ring))] = fp
	g.n++
	return fp
}

// Generate returns the first n fingerprints of the stream for o.
func Generate(o Options, n int) ([]uint64, error) {
	g, err := New(o)
	if err != nil {
		return nil, err
	}
	out := make([]uint64, n)
	for i := range out {
		out[i] = g.Next()
	}
	return out, nil
}
