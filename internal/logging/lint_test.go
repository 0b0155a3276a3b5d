package logging

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// TestLibrariesDoNotPrint encodes the rule this package states: library
// code (every non-main package of the module) logs only through the
// *slog.Logger it is given. It never prints to stdout or stderr, never
// uses the log package or slog's global logger.
func TestLibrariesDoNotPrint(t *testing.T) {
	banned := map[string]map[string]bool{
		"fmt":  {"Print": true, "Printf": true, "Println": true},
		"log":  {"Print": true, "Printf": true, "Println": true, "Fatal": true, "Fatalf": true, "Fatalln": true, "Panic": true, "Panicf": true, "Panicln": true},
		"slog": {"Default": true, "Debug": true, "Info": true, "Warn": true, "Error": true, "Log": true, "SetDefault": true},
		"os":   {"Stdout": true, "Stderr": true},
	}
	root := filepath.Join("..", "..")
	checked := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "testdata", "bench", "study", "proto", "cmd", ".git":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if f.Name.Name == "main" {
			return nil // a command: printing is its job
		}
		checked++
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); ok && banned[x.Name][sel.Sel.Name] {
				t.Errorf("%s: %s.%s in library code (log through Options.Logger)", path, x.Name, sel.Sel.Name)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 100 {
		t.Fatalf("only %d library files checked: is the module root %s?", checked, root)
	}
}
