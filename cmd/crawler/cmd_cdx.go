package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/sextant-crawler/sextant/internal/warc"
)

func init() {
	register(&command{name: "cdx", summary: "rebuild the CDXJ index beside WARC files", run: runCDX})
}

func runCDX(ctx context.Context, env *cmdEnv, args []string) error {
	f := newFlags(env, "cdx", `FILE.warc.gz...

Writes FILE.cdxj beside each WARC file: one line per response and revisit
record, "SURT TIMESTAMP {json}" with url, mime, status, digest, length,
offset and filename (the CDXJ pywb reads), sorted. Crawls write these
indexes themselves; this rebuilds them (after a copy, a merge or a loss).
A file must hold one record per gzip member, as Sextant, Heritrix and
wget write them.`)
	err := f.FlagSet.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		f.printUsage(env.stdout)
		return errHelpShown
	}
	if err != nil {
		return &usageError{msg: err.Error()}
	}
	if f.NArg() == 0 {
		return usagef("no WARC file given")
	}
	var errs []error
	for _, name := range f.Args() {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !strings.HasSuffix(name, ".warc.gz") {
			errs = append(errs, fmt.Errorf("%s: not a .warc.gz file", name))
			continue
		}
		dst, n, err := warc.WriteIndex(name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		fmt.Fprintf(env.stdout, "%s: %d lines\n", dst, n)
	}
	return errors.Join(errs...)
}
