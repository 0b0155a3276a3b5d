package crawl

import (
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/sextant-crawler/sextant/internal/termsafe"
)

func TestReadSeeds(t *testing.T) {
	in := "# seeds\nhttp://a.test/\n\n  http://b.test/x  # the b host\n#http://c.test/\n"
	got, err := ReadSeeds(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"http://a.test/", "http://b.test/x"}; !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	if _, err := ReadSeedsFile("/nonexistent/seeds.txt"); err == nil {
		t.Fatal("missing file accepted")
	}
}

// A bad line is reported with its line number and skipped; the good ones
// are kept. Over-long lines, non-HTTP schemes, seeds longer than the URL
// length limit and control characters are each named; the examples are
// escaped for a terminal.
func TestParseSeedsReportsBadLines(t *testing.T) {
	long := "http://a.test/" + strings.Repeat("x", 100)
	in := strings.Join([]string{
		"# seeds",                          // 1
		"http://a.test/",                   // 2
		"ftp://files.test/",                // 3
		long,                               // 4
		"gopher://\x1b[31mevil.test/",      // 5
		strings.Repeat("y", MaxSeedLine+1), // 6
		"https://b.test/ok # fine",         // 7
		"http://c.test/\x1b]0;pwned\x07",   // 8
		"not a url",                        // 9
		"http://d.test/",                   // 10
	}, "\n")
	l, err := ParseSeeds(strings.NewReader(in), 64)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"http://a.test/", "https://b.test/ok", "http://d.test/"}; !slices.Equal(l.URLs, want) {
		t.Fatalf("URLs %q, want %q", l.URLs, want)
	}
	if l.Rejected != 6 {
		t.Errorf("Rejected %d, want 6", l.Rejected)
	}
	var got []string
	for _, p := range l.Examples {
		got = append(got, p.String())
	}
	all := strings.Join(got, "\n")
	for _, want := range []string{"line 3: ", `scheme "ftp"`, "line 4: ", "longer than", "line 5: ",
		"line 6: longer than 65536 bytes", "line 8: ", `\x1b`} {
		if !strings.Contains(all, want) {
			t.Errorf("examples lack %q:\n%s", want, all)
		}
	}
	if len(l.Examples) != maxSeedExamples {
		t.Errorf("%d examples kept, want the first %d", len(l.Examples), maxSeedExamples)
	}
	sum := l.Summary()
	if !strings.Contains(sum, "6 seed lines skipped") || !strings.Contains(sum, "line 3") || strings.ContainsAny(sum, "\x1b\x07\n") {
		t.Errorf("summary %q: want a count, line numbers and no control character", sum)
	}
	if err := l.Err(); err != nil {
		t.Errorf("Err with valid seeds: %v", err)
	}
}

// A list without one valid seed is an error naming the problems; so is an
// I/O error, with the line it happened after.
func TestParseSeedsNoneValid(t *testing.T) {
	l, err := ParseSeeds(strings.NewReader("# only comments\n\nmailto:x@y.test\n"), 0)
	if err != nil {
		t.Fatal(err)
	}
	err = l.Err()
	if !errors.Is(err, ErrNoSeeds) || !strings.Contains(err.Error(), "line 3") {
		t.Fatalf("Err = %v, want ErrNoSeeds naming line 3", err)
	}
	_, err = ParseSeeds(io.MultiReader(strings.NewReader("http://a.test/\nhttp://b.test/\n"), iotest.ErrReader(errors.New("disk on fire"))), 0)
	if err == nil || !strings.Contains(err.Error(), "line 3") || !strings.Contains(err.Error(), "disk on fire") {
		t.Fatalf("read error: %v, want it with line 3", err)
	}
}

// The old entry points refuse a file with bad lines rather than drop them
// silently, and name the line (not "bufio.Scanner: token too long").
func TestReadSeedsLongLine(t *testing.T) {
	_, err := ReadSeeds(strings.NewReader("http://a.test/\n" + strings.Repeat("z", 70_000) + "\nhttp://b.test/\n"))
	if err == nil || !strings.Contains(err.Error(), "line 2: longer than") || strings.Contains(err.Error(), "token too long") {
		t.Fatalf("got %v, want line 2 named as too long", err)
	}
}

// Whatever the file, ParseSeeds keeps only valid seeds and its summary is
// one printable line.
func FuzzParseSeeds(f *testing.F) {
	for _, s := range []string{"http://a.test/\n", "ftp://x/\r\n#c\n\ufeffhttp://b.test/", "http://c.test/\x1b[2J\n", "\xff\xfe"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		l, err := ParseSeeds(strings.NewReader(in), 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range l.URLs {
			if (&SeedList{MaxURLLength: 100}).check(u) != "" {
				t.Fatalf("kept invalid seed %q", u)
			}
		}
		if sum := l.Summary(); !termsafe.Printable(sum) {
			t.Fatalf("summary not printable: %q", sum)
		}
		if len(l.Examples) > maxSeedExamples || len(l.Examples) > l.Rejected {
			t.Fatalf("%d examples for %d rejected", len(l.Examples), l.Rejected)
		}
	})
}
