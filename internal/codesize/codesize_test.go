package codesize

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	maxFileLines = 500
	maxFuncLines = 120
)

// repoRoot walks up from the package directory to the directory holding the
// module's go.mod.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.Contains(b, []byte("module github.com/sextant-crawler/sextant\n")) {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod of github.com/sextant-crawler/sextant not found above the test's directory")
		}
		dir = parent
	}
}

func generated(src []byte) bool {
	sc := bufio.NewScanner(bytes.NewReader(src))
	for i := 0; i < 5 && sc.Scan(); i++ {
		if strings.HasPrefix(sc.Text(), "// Code generated") {
			return true
		}
	}
	return false
}

// TestSizeLimits lists every file and function over the limits; the list is
// the fix-up work, so it is reported whole rather than stopping at the first.
func TestSizeLimits(t *testing.T) {
	root := repoRoot(t)
	var over []string
	checked := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "testdata", "vendor", "node_modules":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, ".pb.go") {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if generated(src) {
			return nil
		}
		checked++
		rel, _ := filepath.Rel(root, p)
		if n := bytes.Count(src, []byte("\n")); n > maxFileLines {
			over = append(over, fmt.Sprintf("%s: %d lines (limit %d)", rel, n, maxFileLines))
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, p, src, 0)
		if err != nil {
			return fmt.Errorf("%s: %w", rel, err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			var body *ast.BlockStmt
			name := "func literal"
			switch x := n.(type) {
			case *ast.FuncDecl:
				body, name = x.Body, x.Name.Name
			case *ast.FuncLit:
				body = x.Body
			}
			if body == nil {
				return true
			}
			start := fset.Position(n.Pos())
			if l := fset.Position(body.End()).Line - start.Line + 1; l > maxFuncLines {
				over = append(over, fmt.Sprintf("%s:%d: %s is %d lines (limit %d)", rel, start.Line, name, l, maxFuncLines))
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 100 {
		t.Fatalf("only %d Go files found under %s: the walk is broken", checked, root)
	}
	for _, o := range over {
		t.Error(o)
	}
}
