package fetcher

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestCodings(t *testing.T) {
	for ce, want := range map[string][]string{
		"":                                       nil,
		"identity":                               nil,
		"gzip":                                   {"gzip"},
		" GZip , br":                             {"br", "gzip"},
		"gzip,,identity, ,zstd":                  {"zstd", "gzip"},
		"gzip, gzip, gzip, gzip, gzip":           {"gzip", "gzip", "gzip", "gzip", "gzip"},
		strings.Repeat("identity, ", 1e5) + "br": {"br"},
	} {
		got, err := codings(ce, nil)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("codings(%.40q) = %q, %v; want %q", ce, got, err, want)
		}
	}
	for _, ce := range []string{"gzip, gzip, gzip, gzip, gzip, gzip", "br,zstd", "zstd, gzip, ZSTD", "br,gzip,deflate,x-gzip,br,gzip", strings.Repeat("gzip,", 52000)} {
		if _, err := codings(ce, nil); !errors.Is(err, ErrTooManyEncodings) || !errors.Is(err, ErrEncoding) {
			t.Errorf("codings(%.40q): err %v, want ErrTooManyEncodings", ce, err)
		}
		if _, err := newDecoder(ce, strings.NewReader("")); !errors.Is(err, ErrTooManyEncodings) {
			t.Errorf("newDecoder(%.40q): err %v, want ErrTooManyEncodings", ce, err)
		}
	}
}
