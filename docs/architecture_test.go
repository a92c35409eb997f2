// Package docs_test checks the documents in this directory against the
// code they describe, so that they cannot drift from it unnoticed.
package docs_test

import (
	"bufio"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// packagesHeading is the section of architecture.md whose table lists
// the module's packages, one row each, the first column in backticks.
const packagesHeading = "## Packages and what each owns"

// TestArchitectureListsEveryPackage fails naming each package of the
// module that architecture.md's package table leaves out, and each row
// that names no directory of the repository.
func TestArchitectureListsEveryPackage(t *testing.T) {
	rows := packageTable(t, "architecture.md")
	for _, pkg := range modulePackages(t, "..") {
		if !slices.ContainsFunc(rows, func(row string) bool { return covers(row, pkg) }) {
			t.Errorf("architecture.md: package %s is missing from the table under %q", pkg, packagesHeading)
		}
	}
	for _, row := range rows {
		dir := strings.TrimSuffix(row, "/...")
		if fi, err := os.Stat(filepath.Join("..", filepath.FromSlash(dir))); err != nil || !fi.IsDir() {
			t.Errorf("architecture.md: the table under %q lists %s, which is no directory of the repository", packagesHeading, row)
		}
	}
}

// covers reports whether the table row names pkg: the same path, or a
// pattern such as "bench/..." that covers a directory and all below it.
func covers(row, pkg string) bool {
	if prefix, ok := strings.CutSuffix(row, "/..."); ok {
		return pkg == prefix || strings.HasPrefix(pkg, prefix+"/")
	}
	return row == pkg
}

// packageTable returns the first column of the table under
// packagesHeading in the file name, backticks removed.
func packageTable(t *testing.T, name string) []string {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []string
	inSection, inTable := false, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == packagesHeading:
			inSection = true
		case !inSection:
		case strings.HasPrefix(line, "|"):
			inTable = true
			cell, _, _ := strings.Cut(strings.TrimPrefix(line, "|"), "|")
			cell = strings.TrimSpace(cell)
			if name, ok := strings.CutPrefix(cell, "`"); ok {
				rows = append(rows, strings.TrimSuffix(name, "`"))
			}
		case inTable || strings.HasPrefix(line, "## "):
			inSection = false
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(rows) == 0 {
		t.Fatalf("%s: no table of packages under %q", name, packagesHeading)
	}
	return rows
}

// modulePackages returns the directories under root, slash-separated and
// relative to it, that hold a non-test .go file: the module's packages.
// It skips what the go command skips (testdata, names starting with "."
// or "_"), nested modules, node_modules (the end-to-end suites' npm
// packages), and examples/, whose client programs show how to use Recall
// and are not part of it.
func modulePackages(t *testing.T, root string) []string {
	t.Helper()
	var pkgs []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == "." {
				return nil
			}
			name := d.Name()
			if name == "testdata" || name == "node_modules" || rel == "examples" ||
				strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(rel, ".go") && !strings.HasSuffix(rel, "_test.go") {
			if dir := path.Dir(rel); !slices.Contains(pkgs, dir) {
				pkgs = append(pkgs, dir)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) == 0 {
		t.Fatalf("no packages found under %s", root)
	}
	return pkgs
}
