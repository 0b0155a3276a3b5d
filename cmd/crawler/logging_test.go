package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// Issue 28 part 3: --log-format json makes every stderr line a JSON object,
// at the level --log-level asks for; bad values are usage errors naming the
// flag.
func TestLogFormatJSON(t *testing.T) {
	dir := t.TempDir()
	common := []string{"crawl", "--simweb", "small", "--data", dir, "--workers", "4", "--max-fetches", "20", "--progress", "0", "--cache-advice=false"}
	if code, out, errOut := runCLI(t, common...); code != 0 {
		t.Fatalf("first run: exit %d: %s %s", code, out, errOut)
	}
	// The second run resumes: the frontier logs it at INFO.
	code, out, errOut := runCLI(t, append(common, "--log-format", "json", "--log-level", "debug")...)
	if code != 0 {
		t.Fatalf("exit %d: %s %s", code, out, errOut)
	}
	lines := strings.Split(strings.TrimSuffix(errOut, "\n"), "\n")
	levels := map[string]int{}
	for i, l := range lines {
		var rec map[string]any
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatalf("stderr line %d is not JSON (%v): %q", i+1, err, l)
		}
		lv, _ := rec["level"].(string)
		if lv == "" || rec["msg"] == nil || rec["time"] == nil {
			t.Errorf("line %d lacks level, msg or time: %q", i+1, l)
		}
		levels[lv]++
	}
	if !strings.Contains(errOut, `"msg":"frontier: resumed"`) {
		t.Errorf("no resume line at INFO: %v\n%s", levels, errOut)
	}
	code, out, errOut = runCLI(t, append(common, "--log-format", "json", "--log-level", "error")...)
	if code != 0 || strings.Contains(errOut, `"level":"DEBUG"`) || strings.Contains(errOut, `"level":"INFO"`) {
		t.Fatalf("--log-level error: exit %d, stderr %q, stdout %q", code, errOut, out)
	}
}

func TestLogFlagsBadValue(t *testing.T) {
	for _, tc := range []struct{ args []string }{
		{[]string{"crawl", "--log-format", "xml"}},
		{[]string{"node", "--log-level", "verbose"}},
		{[]string{"demo", "--log-format", ""}},
		{[]string{"cdx", "--log-level", "loud", "x.warc.gz"}},
	} {
		code, _, errOut := runCLI(t, tc.args...)
		flag := strings.TrimPrefix(tc.args[1], "--")
		if code != 2 || !strings.Contains(errOut, "-"+flag) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line naming -%s", tc.args, code, errOut, flag)
		}
	}
}
