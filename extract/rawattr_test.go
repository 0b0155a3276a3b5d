package extract

import (
	"bytes"
	"fmt"
	"testing"

	"golang.org/x/net/html"
)

// tagAttrsBoth returns, for every start tag of doc whose raw bytes are
// plain, the attributes as TagAttr gives them and as rawAttrs gives them
// (lower-cased, first of duplicates kept).
func tagAttrsBoth(doc []byte) (want, got []string) {
	z := html.NewTokenizer(bytes.NewReader(doc))
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			return
		}
		if tt != html.StartTagToken && tt != html.SelfClosingTagToken {
			continue
		}
		raw := bytes.Clone(z.Raw())
		if !plainTag(raw) {
			continue
		}
		for more := true; more; {
			var k, v []byte
			k, v, more = z.TagAttr()
			if k == nil {
				break
			}
			want = append(want, fmt.Sprintf("%q=%q", k, v))
		}
		seen := map[string]bool{}
		it := newRawAttrs(raw)
		for {
			k, v, ok := it.next()
			if !ok {
				break
			}
			lk := asciiLower(k)
			if seen[lk] {
				continue
			}
			seen[lk] = true
			got = append(got, fmt.Sprintf("%q=%q", lk, unescapeAmp(nil, v)))
		}
	}
}

func TestRawAttrs(t *testing.T) {
	for _, doc := range []string{
		`<a href="x" HREF=y title='t' checked data-x = "1" =eq =>`,
		`<a/href=/p><img src=a/b.png/><p a="b"c=d e = f/ g>`,
		`<br/><br /><img src="x" / ><a href="unterminated`,
		"<a\thref\n=\f'x'>",
		`<a href=x>y</a><x-y:z q=1>`,
		`<a href="/p?a=1&amp;b=2&amp;amp;c" title=&amp;>`,
	} {
		want, got := tagAttrsBoth([]byte(doc))
		if fmt.Sprint(want) != fmt.Sprint(got) {
			t.Errorf("%q:\n TagAttr  %v\n rawAttrs %v", doc, want, got)
		}
	}
}

// FuzzRawAttrs checks rawAttrs against the tokenizer's TagAttr.
func FuzzRawAttrs(f *testing.F) {
	for _, d := range fuzzDocs {
		f.Add([]byte(d))
	}
	f.Add(benchPage())
	f.Fuzz(func(t *testing.T, doc []byte) {
		want, got := tagAttrsBoth(doc)
		if fmt.Sprint(want) != fmt.Sprint(got) {
			t.Fatalf("%q:\n TagAttr  %v\n rawAttrs %v", doc, want, got)
		}
	})
}

func asciiLower(b []byte) string {
	out := []byte(string(b))
	for i, c := range out {
		if 'A' <= c && c <= 'Z' {
			out[i] = c + 'a' - 'A'
		}
	}
	return string(out)
}
