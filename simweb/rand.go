package simweb

import "math"

// Everything in a web is derived from cheap hashes of (seed, host, page):
// no state is kept between requests.

// mix is the splitmix64 finaliser.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// hash3 combines three words into one well-mixed word.
func hash3(a, b, c uint64) uint64 {
	return mix(mix(mix(a+0x9e3779b97f4a7c15)^b+0x632be59bd9b4e019) ^ c + 0x85ebca6b)
}

// rng is a splitmix64 generator; the zero value is usable.
type rng struct{ s uint64 }

func newRng(a, b, c uint64) rng { return rng{s: hash3(a, b, c)} }

func (r *rng) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	return mix(r.s)
}

// float returns a uniform float64 in [0, 1).
func (r *rng) float() float64 { return float64(r.next()>>11) / (1 << 53) }

// intn returns a uniform int in [0, n); n must be > 0.
func (r *rng) intn(n int) int { return int(r.next() % uint64(n)) }

// chance reports true with probability p.
func (r *rng) chance(p float64) bool { return r.float() < p }

// normal returns a standard normal variate (Box–Muller).
func (r *rng) normal() float64 {
	u := r.float()
	for u == 0 {
		u = r.float()
	}
	return math.Sqrt(-2*math.Log(u)) * math.Cos(2*math.Pi*r.float())
}

// lognormal returns exp(mu + sigma·N(0,1)).
func (r *rng) lognormal(mu, sigma float64) float64 { return math.Exp(mu + sigma*r.normal()) }

// Zipf: P(k) roughly ∝ (k+1)^-s over [0, n), drawn by the inverse CDF of
// the continuous density, so 0 is the most popular.

// zipfDist holds the constants of one Zipf inverse CDF so that a draw costs
// one exp and one log.
type zipfDist struct {
	n      int
	s      float64
	one    bool    // s == 1
	c      float64 // (n+1)^(1-s) - 1, or ln(n+1) when s == 1
	invExp float64 // 1/(1-s)
}

func newZipf(n int, s float64) zipfDist {
	z := zipfDist{n: n, s: s}
	if math.Abs(s-1) < 1e-9 {
		z.one, z.c = true, math.Log(float64(n+1))
	} else {
		e := 1 - s
		z.c, z.invExp = math.Pow(float64(n+1), e)-1, 1/e
	}
	return z
}

func (z *zipfDist) draw(r *rng) int {
	if z.n <= 1 {
		return 0
	}
	u := r.float()
	var x float64
	if z.one {
		x = math.Exp(u*z.c) - 1
	} else {
		x = math.Exp(math.Log1p(u*z.c)*z.invExp) - 1
	}
	return max(0, min(int(x), z.n-1))
}
