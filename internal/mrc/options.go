package mrc

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/sextant-crawler/sextant/cache"
)

// Algorithms whose curves an Estimator reports.
const (
	LRU    = cache.AlgoLRU
	CLOCK  = cache.AlgoClock
	RANDOM = cache.AlgoRandom
)

// Errors.
var (
	ErrBadOptions  = errors.New("mrc: bad options")
	ErrUnknownAlgo = errors.New("mrc: unknown algorithm")
)

// Tier A covers k ≤ smallK exactly (by time sampling).
const smallK = 64

// Options configure an Estimator. Zero fields take the defaults noted.
type Options struct {
	// MaxLog2: curves have points k = 2⁰ … 2^MaxLog2. Default 25.
	MaxLog2 int
	// MaxSamples is s_max of the fixed-size SHARDS tier. Default 8192.
	MaxSamples int
	// FineSamples bounds the fixed-rate tier's sample set. Default 4096.
	FineSamples int
	// FineRate is the fixed-rate tier's sampling rate. Default 1/16.
	FineRate float64
	// TimeSample: about one request in TimeSample has its exact small stack
	// distance measured. Default 256.
	TimeSample int
	// RingLen is how many recent requests tier A may scan (a power of two).
	// Default 1024.
	RingLen int
	// MiniRate is the sampling rate of the miniature CLOCK and RANDOM caches
	// for 2⁹ ≤ k ≤ 2¹⁶ (MiniRate/32 above), raised (in powers of two) where
	// a miniature cache would hold fewer than MiniMin entries. Default 1/64.
	// Negative disables the miniature simulations.
	MiniRate float64
	// MiniMin is the fewest entries a miniature cache holds (smaller
	// miniature caches are biased: a RANDOM cache of a few entries misses
	// less, scaled, than the full-size one). Default 8.
	MiniMin int
	// Seed of the time sampling and of the miniature RANDOM caches. Default 1.
	Seed uint64
}

// EnsureDefaults fills zero fields.
func (o *Options) EnsureDefaults() {
	if o.MaxLog2 == 0 {
		o.MaxLog2 = 25
	}
	if o.MaxSamples == 0 {
		o.MaxSamples = 8192
	}
	if o.FineSamples == 0 {
		o.FineSamples = 4096
	}
	if o.FineRate == 0 {
		o.FineRate = 1.0 / 16
	}
	if o.TimeSample == 0 {
		o.TimeSample = 256
	}
	if o.RingLen == 0 {
		o.RingLen = 1024
	}
	if o.MiniRate == 0 {
		o.MiniRate = 1.0 / 64
	}
	if o.MiniMin == 0 {
		o.MiniMin = 8
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
}

// Validate reports every bad field.
func (o *Options) Validate() error {
	var errs []string
	if o.MaxLog2 < 7 || o.MaxLog2 > 40 {
		errs = append(errs, fmt.Sprintf("MaxLog2 %d outside [7,40]", o.MaxLog2))
	}
	if o.MaxSamples < 64 {
		errs = append(errs, fmt.Sprintf("MaxSamples %d < 64", o.MaxSamples))
	}
	if o.FineSamples < 64 {
		errs = append(errs, fmt.Sprintf("FineSamples %d < 64", o.FineSamples))
	}
	if !(o.FineRate > 0 && o.FineRate <= 1) {
		errs = append(errs, fmt.Sprintf("FineRate %g outside (0,1]", o.FineRate))
	}
	if o.TimeSample < 1 {
		errs = append(errs, fmt.Sprintf("TimeSample %d < 1", o.TimeSample))
	}
	if o.RingLen < 2*smallK || o.RingLen&(o.RingLen-1) != 0 {
		errs = append(errs, fmt.Sprintf("RingLen %d not a power of two ≥ %d", o.RingLen, 2*smallK))
	}
	if o.MiniRate > 1 || math.IsNaN(o.MiniRate) {
		errs = append(errs, fmt.Sprintf("MiniRate %g > 1", o.MiniRate))
	}
	if o.MiniMin < 1 || o.MiniMin > 1<<9 {
		errs = append(errs, fmt.Sprintf("MiniMin %d outside [1,512]", o.MiniMin))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %s", ErrBadOptions, strings.Join(errs, "; "))
	}
	return nil
}

// Economy is a cheaper setting for the crawl's hot path: half the default
// fixed-size sample, a quarter of the default sampling in the fixed-rate
// tier and the time-sampled small distances, an eighth in the miniature
// simulations; about 0.57 MB (see docs/bench/operator.md for its cost and
// accuracy next to the defaults).
var Economy = Options{MaxSamples: 4096, FineRate: 1.0 / 64, FineSamples: 2048, MiniRate: 1.0 / 512, TimeSample: 1024}
