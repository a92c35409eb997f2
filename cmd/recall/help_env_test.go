package main

import (
	"bytes"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/recallproxy/recall/internal/proctest"
)

// clientCommands names the files of this package that belong to a
// command other than serve, with the arguments that print that command's
// help: a RECALL_* variable read there must be in that help. A variable
// read anywhere else in the code the binary links is serve's.
var clientCommands = map[string][]string{
	"health.go":        {"health", "--help"},
	"conversations.go": {"conversations", "list", "--help"},
}

// TestHelpListsEveryVariableTheCodeReads fails naming each RECALL_*
// variable that the code of the binary reads (a string literal that is a
// whole variable name, in this package or in any package of the module it
// links, files of other build tags included) and that is missing from the
// environment table of the command that reads it: serve's, or a client
// command's. The help's own tables (envVar literals) are not counted as
// reads, so that a row cannot vouch for itself.
func TestHelpListsEveryVariableTheCodeReads(t *testing.T) {
	reads := recallVariablesRead(t)
	for _, want := range []string{"RECALL_LISTEN", "RECALL_UPSTREAM_PROTOCOL", "RECALL_API_KEY"} {
		if !slices.ContainsFunc(reads, func(r envRead) bool { return r.name == want }) {
			t.Fatalf("found no read of %s: the scan of the code is broken (reads: %v)", want, reads)
		}
	}
	helps := map[string]string{}
	for _, r := range reads {
		args := []string{"serve", "--help"}
		if a, ok := clientCommands[r.file]; ok && r.pkg == "." {
			args = a
		}
		cmd := strings.Join(args, " ")
		if _, ok := helps[cmd]; !ok {
			var stdout, stderr bytes.Buffer
			if code := run(args, &stdout, &stderr); code != exitOK {
				t.Fatalf("recall %s: exit %d, stderr %q", cmd, code, stderr.String())
			}
			helps[cmd] = stdout.String()
		}
		row := regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(r.name) + `  `)
		if !row.MatchString(helps[cmd]) {
			t.Errorf("%s (read in %s/%s) is not in the environment table of recall %s:\n%s",
				r.name, r.pkg, r.file, cmd, helps[cmd])
		}
	}
}

// envRead is a RECALL_* name found in the code: the package directory
// (relative to the module root, "." for this one) and the file.
type envRead struct {
	name, pkg, file string
}

var recallVariable = regexp.MustCompile(`^RECALL_[A-Z0-9_]+$`)

// recallVariablesRead returns every RECALL_* string literal in the
// non-test Go files of this package and of the module's packages it
// imports, directly or not, outside envVar composite literals.
func recallVariablesRead(t *testing.T) []envRead {
	t.Helper()
	root := filepath.Join("..", "..")
	mod := proctest.ModulePath(t, root)
	var reads []envRead
	seen := map[string]bool{}
	queue := []string{"."}
	fset := token.NewFileSet()
	for len(queue) > 0 {
		rel := queue[0]
		queue = queue[1:]
		if seen[rel] {
			continue
		}
		seen[rel] = true
		dir := "."
		if rel != "." {
			dir = filepath.Join(root, filepath.FromSlash(rel))
		}
		bp, err := build.ImportDir(dir, 0)
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		for _, imp := range bp.Imports {
			if sub, ok := strings.CutPrefix(imp, mod+"/"); ok {
				queue = append(queue, sub)
			}
		}
		files := append(slices.Clone(bp.GoFiles), bp.IgnoredGoFiles...)
		for _, name := range files {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(f, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.CompositeLit:
					return !isEnvVarType(n.Type)
				case *ast.BasicLit:
					if n.Kind != token.STRING {
						return false
					}
					if s, err := strconv.Unquote(n.Value); err == nil && recallVariable.MatchString(s) {
						reads = append(reads, envRead{name: s, pkg: rel, file: name})
					}
				}
				return true
			})
		}
	}
	return reads
}

// isEnvVarType reports whether a composite literal's type is envVar or
// a slice of it: a help table.
func isEnvVarType(e ast.Expr) bool {
	if a, ok := e.(*ast.ArrayType); ok {
		e = a.Elt
	}
	id, ok := e.(*ast.Ident)
	return ok && id.Name == "envVar"
}
