// Command studydoc fills docs/caching-study.md from the data study/run.sh
// wrote: the document is a text/template whose every number is computed
// from the committed CSV, JSON and benchmark files, so that the document
// cannot say what the data does not (TestDocMatchesData).
//
//	go run ./study/studydoc --data docs/caching-study \
//	    --template study/studydoc/caching-study.md.tmpl --out docs/caching-study.md
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"text/template"
)

func main() {
	dir := flag.String("data", "docs/caching-study", "directory of the study's data")
	tmpl := flag.String("template", "study/studydoc/caching-study.md.tmpl", "the document's template")
	out := flag.String("out", "docs/caching-study.md", "the document to write")
	flag.Parse()
	doc, err := render(*dir, *tmpl)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := os.WriteFile(*out, doc, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// render fills the template at tmplPath with the data under dir.
func render(dir, tmplPath string) ([]byte, error) {
	src, err := os.ReadFile(tmplPath)
	if err != nil {
		return nil, fmt.Errorf("studydoc: %w", err)
	}
	d := newData(dir)
	t, err := template.New("doc").Funcs(d.funcs()).Option("missingkey=error").Parse(string(src))
	if err != nil {
		return nil, fmt.Errorf("studydoc: %w", err)
	}
	var b bytes.Buffer
	if err := t.Execute(&b, nil); err != nil {
		return nil, fmt.Errorf("studydoc: %w", err)
	}
	return b.Bytes(), nil
}
