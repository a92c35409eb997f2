package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// decodeInto decodes data, one YAML document, into dst (a pointer to a
// struct that already holds the defaults), so that keys the file leaves out
// keep their value.
//
// The document is first parsed into a yaml.Node tree and walked against
// dst's type: unknown and duplicate keys are rejected with their full key
// path and line (Decoder.KnownFields gives neither the path nor works on a
// Node), ${VAR} references in values are expanded in the tree (never in the
// raw text, so an expanded value cannot change the document's structure),
// and each value is checked against its key's type. Every problem is
// returned, joined.
//
// A value with a problem (an unset variable, the wrong type, an alias) is
// taken out of the tree, so that its key keeps its default and the rest of
// the file still decodes: d.decoded then reports that dst holds the file,
// and the caller validates it and reports the values' problems in the same
// pass, leaving out what validation says about the keys in d.failed (see
// joinProblems). d.keys holds the key path of every key the file sets.
func decodeInto(file string, data []byte, dst any, lookup func(string) (string, bool), allowEmpty bool) (d decoding, err error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return d, emptyFile(file, allowEmpty)
		}
		return d, problem{file: file, msg: yamlMessage(err)}
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		if err != nil {
			return d, problem{file: file, msg: yamlMessage(err)}
		}
		return d, problem{file: file, msg: fmt.Sprintf("more than one YAML document (line %d)", extra.Line)}
	}
	root := &doc
	if root.Kind == yaml.DocumentNode {
		if len(root.Content) == 0 {
			return d, emptyFile(file, allowEmpty)
		}
		root = root.Content[0]
	}
	if isNull(root) {
		return d, emptyFile(file, allowEmpty)
	}
	if root.Kind != yaml.MappingNode {
		// Nothing of the file can be read: no point validating the defaults.
		return d, problem{file: file, key: orTop(""), msg: fmt.Sprintf("want a mapping of keys, got %s (line %d)", kindName(root), root.Line)}
	}
	w := walker{file: file, lookup: lookup, keys: make(map[string]bool)}
	w.walk(root, reflect.TypeOf(dst).Elem(), "")
	d.keys, d.failed = w.keys, w.failed
	if err := root.Decode(dst); err != nil {
		// Not expected once the walk took out every value it objected to;
		// reported rather than trusted.
		var te *yaml.TypeError
		errs := w.errs
		if errors.As(err, &te) {
			for _, m := range te.Errors {
				errs = append(errs, problem{file: file, msg: m})
			}
		} else {
			errs = append(errs, problem{file: file, msg: yamlMessage(err)})
		}
		return d, errors.Join(errs...)
	}
	d.decoded = true
	return d, errors.Join(w.errs...)
}

// decoding is what decodeInto learnt about a file besides its problems.
type decoding struct {
	// decoded reports whether dst holds the file (every value decodeInto
	// did not object to).
	decoded bool
	// keys holds the key path of every known key the file sets a value
	// of, for example "history.budget_tokens" (but not "history").
	keys map[string]bool
	// failed holds the key paths decodeInto reported a problem at.
	failed []string
}

// sets reports whether the file sets key, or a list or map above it:
// "history.strategies" sets "history.strategies[1]", "upstream.headers"
// sets "upstream.headers.X-Org".
func (d decoding) sets(key string) bool {
	for {
		if d.keys[key] {
			return true
		}
		i := strings.LastIndexAny(key, ".[")
		if i < 0 {
			return false
		}
		key = key[:i]
	}
}

// emptyFile is the outcome of a file with no document in it.
func emptyFile(file string, allowEmpty bool) error {
	if allowEmpty {
		return nil
	}
	return problem{file: file, msg: "file is empty"}
}

// yamlMessage drops the library's "yaml: " prefix: the problem already names
// the file.
func yamlMessage(err error) string {
	return "invalid YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")
}

// walker checks a node tree against a Go type, expanding ${VAR} in values
// as it goes, and collects every problem.
type walker struct {
	file   string
	lookup func(string) (string, bool)
	errs   []error
	keys   map[string]bool // the known key paths of values met
	failed []string        // the key paths of errs
}

func (w *walker) fail(key, format string, args ...any) {
	w.errs = append(w.errs, problem{file: w.file, key: key, msg: fmt.Sprintf(format, args...)})
	w.failed = append(w.failed, key)
}

// drop turns n into a null, which keeps its key's default, once a problem
// with it was reported: the rest of the file still decodes.
func drop(n *yaml.Node) {
	*n = yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Line: n.Line, Column: n.Column}
}

var (
	durationType = reflect.TypeFor[Duration]()
	secretType   = reflect.TypeFor[Secret]()
)

// walk checks n as a value of type t at key path.
func (w *walker) walk(n *yaml.Node, t reflect.Type, path string) {
	if n.Kind == yaml.AliasNode {
		w.fail(path, "YAML aliases are not supported (line %d)", n.Line)
		drop(n)
		return
	}
	if isNull(n) {
		return // null keeps the default
	}
	if t.Kind() == reflect.Struct {
		w.mapping(n, t, path)
		return
	}
	if !w.expand(n, t, path) {
		return
	}
	w.check(n, t, path)
}

// mapping checks n as the keys of struct type t.
func (w *walker) mapping(n *yaml.Node, t reflect.Type, path string) {
	if n.Kind != yaml.MappingNode {
		w.fail(orTop(path), "want a mapping of keys, got %s (line %d)", kindName(n), n.Line)
		drop(n)
		return
	}
	fields := yamlFields(t)
	seen := make(map[string]int, len(n.Content)/2)
	kept := n.Content[:0] // the pairs that decode; the others are reported
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			w.fail(orTop(path), "keys must be plain strings (line %d)", k.Line)
			continue
		}
		kp := joinKey(path, k.Value)
		if first, dup := seen[k.Value]; dup {
			w.fail(kp, "duplicate key (line %d, first at line %d)", k.Line, first)
			continue
		}
		seen[k.Value] = k.Line
		ft, ok := fields[k.Value]
		if !ok {
			w.fail(kp, "unknown key (line %d)", k.Line)
			continue
		}
		if ft.Kind() != reflect.Struct {
			w.keys[kp] = true // a section sets only the keys it holds
		}
		w.walk(v, ft, kp)
		kept = append(kept, k, v)
	}
	n.Content = kept
}

// expand expands ${VAR} in every scalar of n, a value of type t. A scalar
// bound for a non-string type loses the string tag its "${" gave it, so the
// expanded text is read as a number, a boolean or a duration. It reports
// whether n is fit to be checked.
func (w *walker) expand(n *yaml.Node, t reflect.Type, path string) bool {
	switch n.Kind {
	case yaml.AliasNode:
		w.fail(path, "YAML aliases are not supported (line %d)", n.Line)
		drop(n)
		return false
	case yaml.ScalarNode:
		if !strings.Contains(n.Value, "$") {
			return true
		}
		v, err := expandVars(n.Value, w.lookup)
		if err != nil {
			w.fail(path, "%v (line %d)", err, n.Line)
			drop(n)
			return false
		}
		if v != n.Value && t.Kind() != reflect.String {
			n.Tag, n.Style = "", 0
		}
		n.Value = v
		return true
	case yaml.SequenceNode:
		if t.Kind() != reflect.Slice {
			return true // check reports the mismatch
		}
		ok := true
		for i, c := range n.Content {
			if !w.expand(c, t.Elem(), path+"["+strconv.Itoa(i)+"]") {
				// A null element would vanish from the list: keep its place
				// (and the others' indexes) with the element type's zero.
				placeholder(c, t.Elem())
				ok = false
			}
		}
		return ok
	case yaml.MappingNode:
		if t.Kind() != reflect.Map {
			return true
		}
		ok := true
		for i := 0; i+1 < len(n.Content); i += 2 {
			ok = w.expand(n.Content[i+1], t.Elem(), joinKey(path, n.Content[i].Value)) && ok
		}
		return ok
	}
	return true
}

// placeholder turns n into the zero value of t, or a null if t is not a
// string, number or boolean.
func placeholder(n *yaml.Node, t reflect.Type) {
	tag, value := "!!null", ""
	switch t.Kind() {
	case reflect.String:
		tag = "!!str"
	case reflect.Int, reflect.Int64:
		tag, value = "!!int", "0"
	case reflect.Float64:
		tag, value = "!!float", "0"
	case reflect.Bool:
		tag, value = "!!bool", "false"
	}
	*n = yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: value, Line: n.Line, Column: n.Column}
}

// check reports n if it cannot be read as a t. Values of secret keys are
// never quoted in messages, and other values are not either: a secret pasted
// under the wrong key must not reach a log line. The line number is enough.
func (w *walker) check(n *yaml.Node, t reflect.Type, path string) {
	if t == durationType {
		if _, err := parseDuration(n); err != nil {
			w.fail(path, "want a duration such as \"30s\" (line %d)", n.Line)
			drop(n)
		}
		return
	}
	if err := n.Decode(reflect.New(t).Interface()); err != nil {
		w.fail(path, "want %s, got %s (line %d)", typeName(t), kindName(n), n.Line)
		drop(n)
	}
}

// yamlFields maps the YAML keys of struct type t, inline fields included,
// to their types, following yaml.v3's tag rules.
func yamlFields(t reflect.Type) map[string]reflect.Type {
	fields := make(map[string]reflect.Type, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" {
			continue
		}
		if strings.Contains(opts, "inline") && f.Type.Kind() == reflect.Struct {
			for k, v := range yamlFields(f.Type) {
				fields[k] = v
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		fields[name] = f.Type
	}
	return fields
}

// isNull reports whether n is an explicit or implicit YAML null.
func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// kindName describes what a node holds, for messages.
func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!int":
			return "an integer"
		case "!!float":
			return "a number"
		case "!!bool":
			return "a boolean"
		case "!!null":
			return "nothing"
		}
		return "a string"
	}
	return "a document"
}

// typeName describes what a Go type wants, for messages.
func typeName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int64:
		return "an integer"
	case reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.Pointer:
		return typeName(t.Elem())
	case reflect.Slice:
		return "a list of " + strings.TrimPrefix(typeName(t.Elem()), "a ") + "s"
	case reflect.Map:
		return "a mapping of names to " + strings.TrimPrefix(strings.TrimPrefix(typeName(t.Elem()), "an "), "a ") + "s"
	}
	return t.String()
}

// joinKey appends a key to a dotted key path.
func joinKey(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// orTop names the document's top level in messages.
func orTop(path string) string {
	if path == "" {
		return "(top level)"
	}
	return path
}

// expandVars replaces each ${NAME} in s by lookup(NAME) and "$${" by a
// literal "${"; any other "$" stays. Every unset variable is named in the
// error; set-but-empty ones expand to "".
func expandVars(s string, lookup func(string) (string, bool)) (string, error) {
	var b strings.Builder
	var missing []string
	for {
		i := strings.IndexByte(s, '$')
		if i < 0 {
			b.WriteString(s)
			break
		}
		b.WriteString(s[:i])
		s = s[i:]
		switch {
		case strings.HasPrefix(s, "$${"):
			b.WriteString("${")
			s = s[3:]
		case strings.HasPrefix(s, "${"):
			end := strings.IndexByte(s, '}')
			if end < 0 || !validVarName(s[2:end]) {
				return "", errors.New("malformed ${...} reference (write $${ for a literal ${)")
			}
			name := s[2:end]
			s = s[end+1:]
			v, ok := lookup(name)
			if !ok {
				missing = append(missing, name)
				continue
			}
			b.WriteString(v)
		default:
			b.WriteByte('$')
			s = s[1:]
		}
	}
	switch len(missing) {
	case 0:
		return b.String(), nil
	case 1:
		return "", fmt.Errorf("environment variable %s is not set", missing[0])
	}
	return "", fmt.Errorf("environment variables %s are not set", strings.Join(missing, ", "))
}

// validVarName reports whether s is a shell-style variable name.
func validVarName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_', 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
