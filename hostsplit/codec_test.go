package hostsplit

import (
	"encoding/binary"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var codecs = []Codec{CodecFront, CodecFrontZstd, CodecFrontS2}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	cases := [][]string{
		nil,
		{""},
		{"http://a/"},
		{"http://b/x", "http://a/", "http://a/", "http://a/b"},
		simURLs(1000, 50, 9),
		{strings.Repeat("x", 4096)},
	}
	for _, c := range codecs {
		for i, urls := range cases {
			enc, err := EncodeBatch(nil, urls, c)
			if err != nil {
				t.Fatal(err)
			}
			got, err := DecodeBatch(enc, Limits{})
			if err != nil {
				t.Fatalf("%s case %d: %v", c, i, err)
			}
			want := slices.Sorted(slices.Values(urls))
			if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b []string) bool { return slices.Equal(a, b) })); diff != "" {
				t.Errorf("%s case %d (-want +got):\n%s", c, i, diff)
			}
		}
	}
}

func TestFrontCodingLayout(t *testing.T) {
	enc, err := EncodeBatch(nil, []string{"http://a/bc", "http://a/b"}, CodecFront)
	if err != nil {
		t.Fatal(err)
	}
	want := []byte{byte(CodecFront), 2, 0, 10}
	want = append(want, "http://a/b"...)
	want = append(want, 10, 1, 'c')
	if !slices.Equal(enc, want) {
		t.Fatalf("got %q\nwant %q", enc, want)
	}
}

func frontRaw(parts ...any) []byte {
	b := []byte{byte(CodecFront)}
	for _, p := range parts {
		switch v := p.(type) {
		case int:
			b = binary.AppendUvarint(b, uint64(v))
		case string:
			b = append(b, v...)
		}
	}
	return b
}

func TestDecodeRejectsMalformed(t *testing.T) {
	lim := Limits{MaxURLs: 3, MaxURLLen: 8, MaxDecodedBytes: 64}
	zstdBig, _ := EncodeBatch(nil, []string{strings.Repeat("a", 8), strings.Repeat("b", 8), strings.Repeat("c", 8)}, CodecFrontZstd)
	cases := map[string][]byte{
		"empty":            {},
		"unknown codec":    {9, 0},
		"no count":         {byte(CodecFront)},
		"too many":         frontRaw(4, 0, 1, "a", 1, 1, "b", 1, 1, "c", 1, 1, "d"),
		"count over bytes": frontRaw(3, 0, 1, "a"),
		"prefix too long":  frontRaw(2, 0, 1, "a", 2, 0),
		"suffix past end":  frontRaw(1, 0, 5, "ab"),
		"url too long":     frontRaw(1, 0, 9, "abcdefghi"),
		"unsorted":         frontRaw(2, 0, 1, "b", 0, 1, "a"),
		"trailing":         frontRaw(1, 0, 1, "a", "zz"),
		"bad varint":       append(frontRaw(1), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff),
		"zstd garbage":     {byte(CodecFrontZstd), 10, 1, 2, 3, 4},
		"zstd length lie":  append([]byte{byte(CodecFrontZstd), 5}, zstdBig[2:]...),
		"zstd too big":     zstdBig[:1:1],
		"s2 garbage":       {byte(CodecFrontS2), 4, 9, 9, 9},
		"decoded too big":  append([]byte{byte(CodecFrontS2)}, binary.AppendUvarint(nil, 1<<20)...),
	}
	cases["zstd too big"] = append(cases["zstd too big"], binary.AppendUvarint(nil, 100)...)
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := DecodeBatch(data, lim)
			if !errors.Is(err, ErrMalformedBatch) {
				t.Fatalf("err = %v, want ErrMalformedBatch", err)
			}
		})
	}
}

func FuzzDecodeBatch(f *testing.F) {
	for _, c := range codecs {
		for _, urls := range [][]string{nil, {"http://a/"}, simURLs(20, 3, 1)} {
			enc, _ := EncodeBatch(nil, urls, c)
			f.Add(enc)
		}
	}
	f.Add(frontRaw(2, 0, 1, "b", 0, 1, "a"))
	lim := Limits{MaxURLs: 64, MaxURLLen: 256, MaxDecodedBytes: 1 << 16}
	f.Fuzz(func(t *testing.T, data []byte) {
		urls, err := DecodeBatch(data, lim)
		if err != nil {
			if !errors.Is(err, ErrMalformedBatch) {
				t.Fatalf("error without ErrMalformedBatch: %v", err)
			}
			return
		}
		if len(urls) > lim.MaxURLs || !slices.IsSorted(urls) {
			t.Fatalf("decoded %d URLs, sorted=%v", len(urls), slices.IsSorted(urls))
		}
		total := 0
		for _, u := range urls {
			if len(u) > lim.MaxURLLen {
				t.Fatalf("URL of %d bytes", len(u))
			}
			total += len(u)
		}
		if total > lim.MaxDecodedBytes {
			t.Fatalf("%d decoded bytes", total)
		}
		// A valid batch re-encodes to the same URLs.
		enc, err := EncodeBatch(nil, urls, CodecFront)
		if err != nil {
			t.Fatal(err)
		}
		again, err := DecodeBatch(enc, Limits{})
		if err != nil || !slices.Equal(again, urls) {
			t.Fatalf("re-encode: %v", err)
		}
	})
}

func TestCompressionFallsBackWhenItDoesNotHelp(t *testing.T) {
	for _, c := range []Codec{CodecFrontZstd, CodecFrontS2} {
		tiny, _ := EncodeBatch(nil, []string{"http://a/"}, c)
		if Codec(tiny[0]) != CodecFront {
			t.Errorf("%s: one tiny URL encoded as %s (%d bytes)", c, Codec(tiny[0]), len(tiny))
		}
		big, _ := EncodeBatch(nil, simURLs(500, 20, 1), c)
		if Codec(big[0]) != c {
			t.Errorf("%s: 500 URLs encoded as %s", c, Codec(big[0]))
		}
	}
}
