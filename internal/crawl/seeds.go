package crawl

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"
)

// ReadSeedsFile returns the seed URLs in a file: one per line, '#' starts a
// comment, blank lines are skipped. It does not check the URLs (Node.Seed
// does).
func ReadSeedsFile(path string) ([]string, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	return ReadSeeds(fh)
}

// ReadSeeds is ReadSeedsFile on a reader.
func ReadSeeds(r io.Reader) ([]string, error) {
	var seeds []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		if line = strings.TrimSpace(line); line != "" {
			seeds = append(seeds, line)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("crawl: read seeds: %w", err)
	}
	return seeds, nil
}
