// Package extsort sorts more lines than fit in memory: a Sorter spills
// sorted runs to files and a Merger streams the union of sorted files, each
// distinct line once with how often it occurred. Lines are byte strings
// without '\n'; order is bytewise (Go's string order).
//
// It serves the streaming oracle of simweb (a breadth-first walk whose
// visited set lives on disk) and the scale benchmark (a crawl log of 10⁷
// URLs compared with that oracle, both streamed sorted).
package extsort

import (
	"bufio"
	"container/heap"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// ErrLine is returned for a line holding '\n'.
var ErrLine = errors.New("extsort: line holds a newline")

// maxLine bounds one line read back (URLs are far shorter).
const maxLine = 1 << 20

// Sorter collects lines and spills them to sorted run files of at most
// runLines lines in a directory of its own. It is not safe for concurrent
// use.
type Sorter struct {
	dir      string
	runLines int
	dedup    bool
	buf      []string
	runs     []string
	n        int64
}

// NewSorter makes a sorter whose runs live in a new directory under dir;
// runLines ≤ 0 means 1<<19. With dedup, each run holds a line once (the
// Merger's counts then count runs, not additions).
func NewSorter(dir string, runLines int, dedup bool) (*Sorter, error) {
	if runLines <= 0 {
		runLines = 1 << 19
	}
	d, err := os.MkdirTemp(dir, "extsort-")
	if err != nil {
		return nil, fmt.Errorf("extsort: %w", err)
	}
	return &Sorter{dir: d, runLines: runLines, dedup: dedup}, nil
}

// Add adds one line.
func (s *Sorter) Add(line string) error {
	if strings.IndexByte(line, '\n') >= 0 {
		return fmt.Errorf("%w: %q", ErrLine, line)
	}
	s.buf = append(s.buf, line)
	s.n++
	if len(s.buf) >= s.runLines {
		return s.spill()
	}
	return nil
}

// Len is the number of lines added.
func (s *Sorter) Len() int64 { return s.n }

func (s *Sorter) spill() error {
	if len(s.buf) == 0 {
		return nil
	}
	slices.Sort(s.buf)
	if s.dedup {
		s.buf = slices.Compact(s.buf)
	}
	p := filepath.Join(s.dir, fmt.Sprintf("run-%06d", len(s.runs)))
	if err := WriteFile(p, s.buf); err != nil {
		return err
	}
	s.runs = append(s.runs, p)
	clear(s.buf)
	s.buf = s.buf[:0]
	return nil
}

// Sorted spills what is buffered and returns a Merger over every line
// added. The Sorter's files stay until Close (close the Merger first).
func (s *Sorter) Sorted() (*Merger, error) {
	if err := s.spill(); err != nil {
		return nil, err
	}
	return Merge(s.runs...)
}

// Close removes the sorter's directory.
func (s *Sorter) Close() error {
	s.buf = nil
	return os.RemoveAll(s.dir)
}

// WriteFile writes sorted lines to path, one per line.
func WriteFile(path string, lines []string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("extsort: %w", err)
	}
	w := bufio.NewWriterSize(f, 1<<16)
	for _, l := range lines {
		w.WriteString(l)
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("extsort: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("extsort: %w", err)
	}
	return nil
}

// Writer writes a sorted file line by line.
type Writer struct {
	f *os.File
	w *bufio.Writer
	n int64
}

// Create creates path for writing lines.
func Create(path string) (*Writer, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("extsort: %w", err)
	}
	return &Writer{f: f, w: bufio.NewWriterSize(f, 1<<16)}, nil
}

// Write writes one line.
func (w *Writer) Write(line string) error {
	w.n++
	w.w.WriteString(line)
	return w.w.WriteByte('\n')
}

// Lines is the number of lines written.
func (w *Writer) Lines() int64 { return w.n }

// Close flushes and closes the file.
func (w *Writer) Close() error {
	err := w.w.Flush()
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("extsort: %w", err)
	}
	return nil
}

// Merger streams the union of sorted files: each distinct line once, in
// order, with the number of times it occurs over all of them.
type Merger struct {
	h     mergeHeap
	files []*os.File
	line  string
	count int
	err   error
}

type source struct {
	sc   *bufio.Scanner
	line string
}

type mergeHeap []*source

func (h mergeHeap) Len() int           { return len(h) }
func (h mergeHeap) Less(i, j int) bool { return h[i].line < h[j].line }
func (h mergeHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *mergeHeap) Push(x any)        { *h = append(*h, x.(*source)) }
func (h *mergeHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// Merge opens sorted files (none: an empty stream).
func Merge(paths ...string) (*Merger, error) {
	m := &Merger{}
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			m.Close()
			return nil, fmt.Errorf("extsort: %w", err)
		}
		m.files = append(m.files, f)
		sc := bufio.NewScanner(bufio.NewReaderSize(f, 1<<16))
		sc.Buffer(make([]byte, 0, 4096), maxLine)
		src := &source{sc: sc}
		if m.advance(src) {
			m.h = append(m.h, src)
		}
		if m.err != nil {
			m.Close()
			return nil, m.err
		}
	}
	heap.Init(&m.h)
	return m, nil
}

// advance reads src's next line; false at its end (or an error, in m.err).
func (m *Merger) advance(src *source) bool {
	if src.sc.Scan() {
		src.line = src.sc.Text()
		return true
	}
	if err := src.sc.Err(); err != nil && m.err == nil {
		m.err = fmt.Errorf("extsort: %w", err)
	}
	return false
}

// Next moves to the next distinct line; false at the end or on an error.
func (m *Merger) Next() bool {
	if m.err != nil || len(m.h) == 0 {
		return false
	}
	m.line, m.count = m.h[0].line, 0
	for len(m.h) > 0 && m.h[0].line == m.line {
		m.count++
		if m.advance(m.h[0]) {
			heap.Fix(&m.h, 0)
		} else {
			heap.Pop(&m.h)
		}
	}
	return m.err == nil
}

// Line is the current line.
func (m *Merger) Line() string { return m.line }

// Count is how many times the current line occurs in the inputs.
func (m *Merger) Count() int { return m.count }

// Err is the first read error.
func (m *Merger) Err() error { return m.err }

// Close closes the files.
func (m *Merger) Close() error {
	var errs []error
	for _, f := range m.files {
		errs = append(errs, f.Close())
	}
	m.files, m.h = nil, nil
	return errors.Join(errs...)
}
