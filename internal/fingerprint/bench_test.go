package fingerprint

import (
	"hash/crc64"
	"hash/fnv"
	"math/bits"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/sextant-crawler/sextant/internal/cputime"

	"github.com/sextant-crawler/sextant/internal/fixture"
)

// benchURLs returns realistic absolute URLs: the links of the pages of the
// real wiki mirror in testdata/sites (every href resolved against its page,
// deduplicated).
func benchURLs(tb testing.TB) []string {
	root := fixture.Sites(tb)
	href := regexp.MustCompile(`href="([^"#]+)`)
	seen := map[string]bool{}
	var out []string
	_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".html") || len(out) > 50000 {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		base, err := url.Parse("http://" + filepath.ToSlash(rel))
		if err != nil {
			return nil
		}
		for _, m := range href.FindAllSubmatch(data, -1) {
			ref, err := url.Parse(string(m[1]))
			if err != nil {
				continue
			}
			u := base.ResolveReference(ref)
			if u.Scheme != "http" && u.Scheme != "https" {
				continue
			}
			if s := u.String(); !seen[s] {
				seen[s] = true
				out = append(out, s)
			}
		}
		return nil
	})
	if len(out) < 1000 {
		tb.Fatalf("only %d link URLs under %s: the mirror is incomplete", len(out), root)
	}
	tb.Logf("%d distinct link URLs from the wiki mirror", len(out))
	return out
}

// rabin64 is a Rabin fingerprint (Broder's table-driven form, as Mercator
// used): the URL's bits as a polynomial over GF(2), reduced modulo the
// irreducible P(x) = x⁶⁴ + x⁴ + x³ + x + 1, one byte per step through a
// 256-entry table of (top byte)·x⁶⁴ mod P.
type rabin64 [256]uint64

func newRabin64() *rabin64 {
	const p = 1<<4 | 1<<3 | 1<<1 | 1 // P(x) − x⁶⁴
	var t rabin64
	for b := range 256 {
		// (b·x⁵⁶)·x⁸ mod P, a bit at a time: b's top bit is x⁶³.
		f := uint64(b) << 56
		for range 8 {
			if f&(1<<63) != 0 {
				f = f<<1 ^ p
			} else {
				f <<= 1
			}
		}
		t[b] = f
	}
	return &t
}

func (t *rabin64) sum(s string) uint64 { return t.sumBytes([]byte(s)) }

func (t *rabin64) sumBytes(s []byte) uint64 {
	f := uint64(1) // so that leading zero bytes count
	for _, c := range s {
		f = (f<<8 | uint64(c)) ^ t[f>>56]
	}
	return f
}

// The table-driven Rabin fingerprint equals the definition computed a bit
// at a time: f ← (f·x + bit) mod P over the message's bits, from f = 1.
func TestRabinMatchesDefinition(t *testing.T) {
	const p = 1<<4 | 1<<3 | 1<<1 | 1
	r := newRabin64()
	for _, s := range []string{"", "\x00", "a", "http://a.test/", "https://b.test/p/q/r?y=22&z#\xff\xfe"} {
		f := uint64(1)
		for i := 0; i < len(s); i++ {
			for j := 7; j >= 0; j-- {
				top := f >> 63
				f = f<<1 | uint64(s[i]>>j&1)
				if top != 0 {
					f ^= p
				}
			}
		}
		if got := r.sum(s); got != f {
			t.Errorf("rabin(%q) = %#x, want %#x", s, got, f)
		}
	}
	// No avalanche: URLs that differ in their last bit have Rabin
	// fingerprints that differ in their last bit (the difference polynomial
	// is below the modulus), so a table indexing by the top bits would put
	// them together. xxHash64 changes about half of the bits.
	a, b := "http://a.test/x", "http://a.test/y"
	if d := r.sum(a) ^ r.sum(b); d != 'x'^'y' {
		t.Errorf("rabin difference %#x, want %#x", d, 'x'^'y')
	}
	if d := bits.OnesCount64(URL(a) ^ URL(b)); d < 16 || d > 48 {
		t.Errorf("xxhash64 of %q and %q differ in %d bits", a, b, d)
	}
}

// BenchmarkURL compares the fingerprint (xxHash64) with the baselines one
// might pick instead, in ns per URL (wall and process CPU) over realistic URLs: FNV-1a 64
// (hash/fnv, a byte at a time), a Rabin fingerprint as Mercator computed it
// (table-driven, a byte at a time), and CRC-64 (hash/crc64, ECMA
// polynomial: a Rabin fingerprint computed eight bytes at a time).
//
//	go test ./internal/fingerprint -run '^$' -bench URL -benchtime 20000000x -count 3
func BenchmarkURL(b *testing.B) {
	urls := benchURLs(b)
	total := 0
	for _, u := range urls {
		total += len(u)
	}
	raw := make([][]byte, len(urls)) // every function gets bytes: no conversion timed
	for i, u := range urls {
		raw[i] = []byte(u)
	}
	rabin := newRabin64()
	crc := crc64.MakeTable(crc64.ECMA)
	fnvHash := fnv.New64a()
	for _, h := range []struct {
		name string
		sum  func([]byte) uint64
	}{
		{"xxhash64", Bytes},
		{"fnv1a64", func(p []byte) uint64 {
			fnvHash.Reset()
			fnvHash.Write(p)
			return fnvHash.Sum64()
		}},
		{"fnv1a64-inline", fnv1a},
		{"rabin64-bytewise", rabin.sumBytes},
		{"crc64-ecma", func(p []byte) uint64 { return crc64.Checksum(p, crc) }},
	} {
		b.Run(h.name, func(b *testing.B) {
			var x uint64
			n := 0
			cpu := int64(cputime.Process())
			for b.Loop() {
				x ^= h.sum(raw[n])
				if n++; n == len(raw) {
					n = 0
				}
			}
			b.ReportMetric(float64(int64(cputime.Process())-cpu)/float64(b.N), "cpu-ns/URL")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/URL")
			b.ReportMetric(float64(total)/float64(len(urls)), "B/URL")
			sink = x
		})
	}
}

var sink uint64

// fnv1a is FNV-1a 64 without hash/fnv's interface.
func fnv1a(s []byte) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}
