package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/sextant-crawler/sextant/internal/crawl"
)

func init() {
	register(&command{name: "log", summary: "convert a crawl log to JSON lines (--json)", run: runLog})
	register(&command{name: "export", summary: "write a stopped node's queued, fetched or seen URLs (text or JSON lines)", run: runExport})
}

func runLog(ctx context.Context, env *cmdEnv, args []string) error {
	f := newFlags(env, "log", `--json [FILE | --data DIR]

Reads a crawl log (FILE, DIR/crawl.log, or standard input when neither is
given) and writes one JSON object per line with the fields documented in
docs/crawl-log.md (time, node, status, bytes, duration_ms, links, outcome,
url, content_type, note, epoch, robots, canonical, via, hops, hop_count,
digest, proto, warc_file, warc_offset). Lines that do not parse are skipped
and counted on standard error; a torn last line (a log being written) too.`)
	asJSON := f.Bool("json", false, "write JSON lines (the only output format)")
	data := f.String("data", "", "read DIR/crawl.log")
	if err := f.FlagSet.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			f.printUsage(env.stdout)
			return errHelpShown
		}
		return usagef("%s", err)
	}
	if !*asJSON {
		return usagef("--json is required")
	}
	var in io.Reader = os.Stdin
	path := ""
	switch {
	case f.NArg() > 1, f.NArg() == 1 && *data != "":
		return usagef("give one FILE or --data DIR")
	case f.NArg() == 1:
		path = f.Arg(0)
	case *data != "":
		path = filepath.Join(*data, "crawl.log")
	}
	if path != "" {
		fh, err := os.Open(path)
		if err != nil {
			return err
		}
		defer fh.Close()
		in = fh
	}
	st, err := crawl.WriteLogJSON(env.stdout, in)
	if st.Malformed > 0 || st.TornTail {
		fmt.Fprintf(env.stderr, "crawler log: %d entries, %d malformed lines skipped, torn last line: %v\n", st.Entries, st.Malformed, st.TornTail)
	}
	return err
}

func runExport(ctx context.Context, env *cmdEnv, args []string) error {
	f := newFlags(env, "export", `--data DIR --what queued|fetched|seen [--format text|jsonl] [--out FILE]

Writes the URLs of a stopped node's data directory, each once, so that a
crawl's frontier or results can be handed to another system:
  queued   the frontier's URLs (queued, or leased when the node stopped)
  fetched  the URLs with a request sent, per crawl.log
  seen     every URL the node admitted: fetched or refused by robots.txt
           (crawl.log), queued (frontier), fetched by an earlier owner of
           the host (hand-off)
text: one URL per line. jsonl: one object per line (url, via, hops, depth,
sitemap, status, outcome, time, digest, source; see docs/crawl-log.md).
The frontier is opened, which fails while a node runs on DIR.`)
	data := f.String("data", "", "the node's data directory (required)")
	what := f.String("what", "", "queued, fetched or seen (required)")
	format := f.String("format", "text", "text or jsonl")
	out := f.String("out", "", "write to FILE (default standard output)")
	if err := f.parse(args); err != nil {
		return err
	}
	if *data == "" || *what == "" {
		return usagef("--data and --what are required")
	}
	if *format != "text" && *format != "jsonl" {
		return usagef("--format %q: want text or jsonl", *format)
	}
	var w io.Writer = env.stdout
	var fh *os.File
	if *out != "" {
		var err error
		if fh, err = os.Create(*out); err != nil {
			return err
		}
		defer fh.Close()
		w = fh
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	err := crawl.Export(*data, *what, func(u crawl.ExportedURL) error {
		if *format == "jsonl" {
			return enc.Encode(u)
		}
		_, err := fmt.Fprintln(bw, u.URL)
		return err
	})
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	if fh != nil {
		if cerr := fh.Close(); err == nil {
			err = cerr
		}
	}
	return err
}
