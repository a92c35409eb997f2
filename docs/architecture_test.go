// Package docs_test checks the documents in this directory against the
// code they describe, so that they cannot drift from it unnoticed.
package docs_test

import (
	"bufio"
	"errors"
	"go/build"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/recallproxy/recall/internal/proctest"
)

// packagesHeading is the section of architecture.md whose table lists
// the module's packages, one row each, the first column in backticks.
const packagesHeading = "## Packages and what each owns"

// TestArchitectureListsEveryPackage fails naming each package of the
// module that architecture.md's package table leaves out, and each row
// that names no directory of the repository.
func TestArchitectureListsEveryPackage(t *testing.T) {
	rows := rowNames(packageTable(t, "architecture.md"))
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

// TestArchitectureImportsAreTheCode fails naming each row of the package
// table whose last column, what the package imports from this module,
// is not what its non-test Go files import. The column lists the
// packages in backticks (`protocol/*` stands for every package one level
// under protocol/), or says "nothing"; a remark in parentheses is not
// read, and a list with "..." in it names some of the imports, not all.
// A row of a pattern (`bench/...`) is the union of its packages; a
// package with no non-test Go file (a suite of tests) is not checked.
func TestArchitectureImportsAreTheCode(t *testing.T) {
	mod := proctest.ModulePath(t, "..")
	pkgs := modulePackages(t, "..")
	for _, row := range packageTable(t, "architecture.md") {
		var got []string
		code := false
		for _, pkg := range pkgs {
			if !covers(row.pkg, pkg) {
				continue
			}
			bp, err := build.ImportDir(filepath.Join("..", filepath.FromSlash(pkg)), 0)
			var none *build.NoGoError
			if errors.As(err, &none) {
				continue
			}
			if err != nil {
				t.Fatalf("%s: %v", pkg, err)
			}
			code = true
			for _, imp := range bp.Imports {
				if sub, ok := strings.CutPrefix(imp, mod+"/"); ok && !slices.Contains(got, sub) && !covers(row.pkg, sub) {
					got = append(got, sub)
				}
			}
		}
		if !code {
			continue
		}
		cell := remark.ReplaceAllString(row.imports, "")
		var listed []string
		for _, m := range quoted.FindAllStringSubmatch(cell, -1) {
			listed = append(listed, m[1])
		}
		if len(listed) == 0 && strings.TrimSpace(cell) != "nothing" {
			t.Errorf("architecture.md: %s imports %q: want packages in backticks, or nothing", row.pkg, row.imports)
			continue
		}
		for _, l := range listed {
			if !slices.ContainsFunc(got, func(imp string) bool { return matches(l, imp) }) {
				t.Errorf("architecture.md: the table says %s imports %s; it does not (it imports %v)", row.pkg, l, got)
			}
		}
		if strings.Contains(cell, "...") {
			continue
		}
		for _, imp := range got {
			if !slices.ContainsFunc(listed, func(l string) bool { return matches(l, imp) }) {
				t.Errorf("architecture.md: %s imports %s, which its row leaves out", row.pkg, imp)
			}
		}
	}
}

var (
	// remark is a parenthesised remark in a table cell.
	remark = regexp.MustCompile(`\([^)]*\)`)
	// quoted is a name in backticks.
	quoted = regexp.MustCompile("`([^`]+)`")
)

// matches reports whether a name of the imports column stands for pkg:
// the same path, or "dir/*" for a package one level under dir.
func matches(name, pkg string) bool {
	if dir, ok := strings.CutSuffix(name, "/*"); ok {
		rest, ok := strings.CutPrefix(pkg, dir+"/")
		return ok && !strings.Contains(rest, "/")
	}
	return name == pkg
}

// covers reports whether the table row names pkg: the same path, or a
// pattern such as "bench/..." that covers a directory and all below it.
func covers(row, pkg string) bool {
	if prefix, ok := strings.CutSuffix(row, "/..."); ok {
		return pkg == prefix || strings.HasPrefix(pkg, prefix+"/")
	}
	return row == pkg
}

// tableRow is a row of the package table: the package (backticks
// removed) and its last column, what it imports from the module.
type tableRow struct {
	pkg, imports string
}

// rowNames returns the rows' packages.
func rowNames(rows []tableRow) []string {
	names := make([]string, len(rows))
	for i, r := range rows {
		names[i] = r.pkg
	}
	return names
}

// packageTable returns the rows of the table under packagesHeading in
// the file name.
func packageTable(t *testing.T, name string) []tableRow {
	t.Helper()
	var rows []tableRow
	inTable := false
	for _, line := range sectionLines(t, name, packagesHeading) {
		if !strings.HasPrefix(line, "|") {
			if inTable {
				break // the table's end
			}
			continue
		}
		inTable = true
		cells := strings.Split(strings.TrimSuffix(strings.TrimPrefix(line, "|"), "|"), "|")
		cell := strings.TrimSpace(cells[0])
		if name, ok := strings.CutPrefix(cell, "`"); ok {
			rows = append(rows, tableRow{pkg: strings.TrimSuffix(name, "`"), imports: strings.TrimSpace(cells[len(cells)-1])})
		}
	}
	if len(rows) == 0 {
		t.Fatalf("%s: no table of packages under %q", name, packagesHeading)
	}
	return rows
}

// sectionLines returns the lines of the Markdown file name under the
// line heading (a "## " heading), up to the next "## " heading.
func sectionLines(t *testing.T, name, heading string) []string {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	inSection := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == heading:
			inSection = true
		case !inSection:
		case strings.HasPrefix(line, "## "):
			return lines
		default:
			lines = append(lines, line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return lines
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
