package config

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"gopkg.in/yaml.v3"
)

// Describe writes the resolved configuration, g and then each tenant of s,
// as YAML documents in the files' own keys, with every default filled in and
// every secret masked (sha256 keys as "sha256:abcd…"). Upstream header
// values whose names suggest a credential (authorization, cookie, or
// containing key, token, secret or password) are masked too. It is what
// `recall check-config` prints.
func Describe(w io.Writer, g Global, s *Set) error {
	var buf bytes.Buffer
	src := g.File
	if src == "" {
		src = "(no file: defaults and environment)"
	}
	fmt.Fprintf(&buf, "# recall configuration, secrets masked\n# global: %s\n", src)
	gv := g
	gv.Defaults = maskedPolicy(g.Defaults)
	if err := encodeYAML(&buf, gv); err != nil {
		return err
	}
	for _, t := range s.tenants {
		buf.WriteString("---\n")
		if t.PassThrough {
			buf.WriteString("# tenant default: implicit, pass-through (any bearer key is accepted and\n" +
				"# sent upstream; conversations are keyed by a hash of the key)\n")
		} else {
			fmt.Fprintf(&buf, "# tenant %s: %s\n", t.ID, t.File)
		}
		tv := *t
		tv.Policy = maskedPolicy(t.Policy)
		if err := encodeYAML(&buf, tv); err != nil {
			return err
		}
	}
	if _, err := w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("config: describe: %w", err)
	}
	return nil
}

// encodeYAML appends v to buf as YAML indented by two spaces.
func encodeYAML(buf *bytes.Buffer, v any) error {
	enc := yaml.NewEncoder(buf)
	enc.SetIndent(2)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("config: describe: %w", err)
	}
	if err := enc.Close(); err != nil {
		return fmt.Errorf("config: describe: %w", err)
	}
	return nil
}

// maskedPolicy returns a copy of p whose credential-like header values are
// masked. (Secret fields mask themselves.)
func maskedPolicy(p Policy) Policy {
	c := p.clone()
	for name, v := range c.Upstream.Headers {
		if sensitiveHeader(name) {
			c.Upstream.Headers[name] = Secret(v).String()
		}
	}
	return c
}

// sensitiveHeader reports whether a header's value is likely a credential.
func sensitiveHeader(name string) bool {
	n := strings.ToLower(name)
	if n == "authorization" || n == "proxy-authorization" || n == "cookie" {
		return true
	}
	for _, s := range []string{"key", "token", "secret", "password", "auth"} {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
}
