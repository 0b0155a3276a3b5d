package crawl

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/sextant-crawler/sextant/internal/termsafe"
	"github.com/sextant-crawler/sextant/internal/urlnorm"
)

// MaxSeedLine is the longest line of a seed file, in bytes. A longer line
// is reported and skipped; it is no URL anyone means to crawl, and reading
// it whole would let one line take any amount of memory.
const MaxSeedLine = 64 << 10

// defaultSeedURLLength is the URL length limit of ParseSeeds when given
// none: the link filter's default (extract.FilterOptions.MaxURLLength).
const defaultSeedURLLength = 2048

// maxSeedExamples is how many rejected seeds a SeedList keeps to show.
const maxSeedExamples = 5

// ErrNoSeeds: a seed list holds no valid seed URL.
var ErrNoSeeds = errors.New("crawl: no valid seed URL")

// SeedProblem is a seed that was skipped: where it was ("line 12",
// "seeds[3]") and why. Reason quotes the seed with its control characters
// escaped, so a SeedProblem may be printed on a terminal.
type SeedProblem struct {
	Where, Reason string
}

func (p SeedProblem) String() string { return p.Where + ": " + p.Reason }

// SeedList is a checked list of seeds: the valid URLs in order, and the
// number of skipped ones with the first few as examples. A crawl starts
// from the valid ones, reporting the others (Summary), unless there are
// none (Err). It is a plain value, not safe for concurrent mutation.
type SeedList struct {
	URLs     []string
	Rejected int
	Examples []SeedProblem
	// MaxURLLength is the longest seed accepted, in bytes of its
	// canonical form (0: 2048, the link filter's default). The filter
	// would drop a longer seed without a word.
	MaxURLLength int
}

// Add checks seed s, found at where, and keeps it or records why not: it
// must be an absolute http or https URL with a host, no control character,
// and a canonical form no longer than MaxURLLength.
func (l *SeedList) Add(where, s string) {
	if reason := l.check(s); reason != "" {
		l.reject(where, reason)
		return
	}
	l.URLs = append(l.URLs, s)
}

func (l *SeedList) check(s string) string {
	q := quoteSeed(s)
	if !termsafe.Printable(s) {
		return q + ": control or non-printable character"
	}
	u, err := urlnorm.Parse(s)
	if err != nil {
		return q + ": not an absolute URL"
	}
	if !u.IsHTTP() {
		return fmt.Sprintf("%s: scheme %q is not http or https", q, u.Scheme())
	}
	if !u.HasHost() {
		return q + ": no host"
	}
	max := l.MaxURLLength
	if max <= 0 {
		max = defaultSeedURLLength
	}
	if n := len(u.String()); n > max {
		return fmt.Sprintf("%s: %d bytes, longer than the URL length limit %d (--max-url-length)", q, n, max)
	}
	return ""
}

func (l *SeedList) reject(where, reason string) {
	l.Rejected++
	if len(l.Examples) < maxSeedExamples {
		l.Examples = append(l.Examples, SeedProblem{Where: where, Reason: reason})
	}
}

// quoteSeed quotes s for a message: escaped (strconv.Quote escapes
// control characters) and cut to 80 bytes.
func quoteSeed(s string) string {
	if len(s) > 80 {
		return fmt.Sprintf("%q…", strings.ToValidUTF8(s[:80], ""))
	}
	return fmt.Sprintf("%q", s)
}

// Summary is one line on the skipped seeds ("" if none): their count and
// the first examples.
func (l *SeedList) Summary() string {
	if l.Rejected == 0 {
		return ""
	}
	parts := make([]string, len(l.Examples))
	for i, p := range l.Examples {
		parts[i] = p.String()
	}
	more := ""
	if l.Rejected > len(l.Examples) {
		more = fmt.Sprintf("; and %d more", l.Rejected-len(l.Examples))
	}
	return fmt.Sprintf("%d seed lines skipped (%d valid): %s%s", l.Rejected, len(l.URLs), strings.Join(parts, "; "), more)
}

// Err is ErrNoSeeds, with the Summary, if the list holds no valid seed.
func (l *SeedList) Err() error {
	if len(l.URLs) > 0 {
		return nil
	}
	if l.Rejected == 0 {
		return fmt.Errorf("%w: the list is empty", ErrNoSeeds)
	}
	return fmt.Errorf("%w: %s", ErrNoSeeds, l.Summary())
}

// ReadSeedList reads a seed file (see ParseSeeds). Errors name the file.
func ReadSeedList(path string, maxURLLength int) (*SeedList, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("crawl: seeds: %w", err)
	}
	defer fh.Close()
	l, err := ParseSeeds(fh, maxURLLength)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return l, nil
}

// ParseSeeds reads seeds, one per line: '#' starts a comment, blank lines
// are skipped. Each seed is checked (SeedList.Add, where = "line N"); a
// line longer than MaxSeedLine is skipped as "line N: longer than …". The
// error is for reading only, and names the line it failed on; a list
// without a valid seed is not an error here (see SeedList.Err).
func ParseSeeds(r io.Reader, maxURLLength int) (*SeedList, error) {
	l := &SeedList{MaxURLLength: maxURLLength}
	br := bufio.NewReaderSize(r, MaxSeedLine+2) // the line, "\r\n"
	for n := 1; ; n++ {
		line, err := br.ReadSlice('\n')
		long := errors.Is(err, bufio.ErrBufferFull) || len(bytes.TrimRight(line, "\r\n")) > MaxSeedLine
		for errors.Is(err, bufio.ErrBufferFull) { // skip the rest of the line
			_, err = br.ReadSlice('\n')
		}
		if err != nil && err != io.EOF {
			return l, fmt.Errorf("crawl: read seeds: line %d: %w", n, err)
		}
		if long {
			l.reject(fmt.Sprintf("line %d", n), fmt.Sprintf("longer than %d bytes", MaxSeedLine))
		} else {
			if n == 1 {
				line = bytes.TrimPrefix(line, []byte("\ufeff")) // a BOM
			}
			if i := bytes.IndexByte(line, '#'); i >= 0 {
				line = line[:i]
			}
			if s := strings.TrimSpace(string(line)); s != "" {
				l.Add(fmt.Sprintf("line %d", n), s)
			}
		}
		if err == io.EOF {
			return l, nil
		}
	}
}

// ReadSeedsFile returns the seed URLs in a file: one per line, '#' starts a
// comment, blank lines are skipped. Unlike ReadSeedList it refuses the
// whole file if any seed is bad (ErrBadSeeds), for callers with no way to
// report skipped seeds.
func ReadSeedsFile(path string) ([]string, error) {
	l, err := ReadSeedList(path, 0)
	if err != nil {
		return nil, err
	}
	return l.strict()
}

// ReadSeeds is ReadSeedsFile on a reader.
func ReadSeeds(r io.Reader) ([]string, error) {
	l, err := ParseSeeds(r, 0)
	if err != nil {
		return nil, err
	}
	return l.strict()
}

// ErrBadSeeds: ReadSeeds and ReadSeedsFile found bad seeds.
var ErrBadSeeds = errors.New("crawl: bad seeds")

func (l *SeedList) strict() ([]string, error) {
	if l.Rejected > 0 {
		return nil, fmt.Errorf("%w: %s", ErrBadSeeds, l.Summary())
	}
	return l.URLs, nil
}

// Merge appends other's seeds and problems to l, prefixing other's places
// with source ("seeds_file line 7").
func (l *SeedList) Merge(source string, other *SeedList) {
	l.URLs = append(l.URLs, other.URLs...)
	for _, p := range other.Examples {
		if len(l.Examples) < maxSeedExamples {
			l.Examples = append(l.Examples, SeedProblem{Where: source + " " + p.Where, Reason: p.Reason})
		}
	}
	l.Rejected += other.Rejected
}
