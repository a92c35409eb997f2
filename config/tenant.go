package config

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unsafe"
)

// Tenant is one tenant: its id, the keys its clients present, and its
// policy. A Tenant reached through a Set must not be modified.
type Tenant struct {
	// ID names the tenant in storage keys, logs and metrics; it matches
	// ^[a-z0-9][a-z0-9_-]{0,63}$.
	ID string `yaml:"id"`
	// APIKeys are what clients present as "Authorization: Bearer <key>":
	// each plain, or "sha256:<64 hex>" of the key. At least one for a file
	// tenant.
	APIKeys []Secret `yaml:"api_keys"`
	// Policy is the tenant's policy: the global defaults with whatever its
	// file sets on top.
	Policy `yaml:",inline"`
	// File is the tenant's file, or the global file for the implicit tenant.
	File string `yaml:"-"`
	// PassThrough is true for the implicit default tenant (no api_keys: any
	// bearer is accepted, and the proxy keys the conversation namespace by
	// a hash of the credential).
	PassThrough bool `yaml:"-"`
}

// DefaultTenantID is the id of the implicit pass-through tenant.
const DefaultTenantID = "default"

// LoadTenants builds the Set of tenants of g. Without a tenants directory it
// holds one implicit pass-through Tenant "default" with g.Defaults.
// Otherwise each *.yaml or *.yml file in g.TenantsDir (hidden files
// skipped) is decoded over a copy of g.Defaults, so unset keys inherit, with
// ${VAR} expanded through lookup, and validated. The problems of every file
// are joined; duplicate ids, a key shared by two tenants (or with the admin
// key) and a directory without tenant files are errors too.
func LoadTenants(g Global, lookup func(string) (string, bool)) (*Set, error) {
	return loadTenants(g, lookup, nil)
}

// loadTenants is LoadTenants leaving out the validation problems of a
// tenant file at keys it does not set and inherited reports: problems of
// the global defaults, reported under the global file.
func loadTenants(g Global, lookup func(string) (string, bool), inherited func(key string) bool) (*Set, error) {
	if g.TenantsDir == "" {
		t := &Tenant{ID: DefaultTenantID, Policy: g.Defaults.clone(), File: g.File, PassThrough: true}
		if err := t.Validate(); err != nil {
			return nil, err
		}
		return newSet(g, []*Tenant{t})
	}
	entries, err := os.ReadDir(g.TenantsDir)
	if err != nil {
		return nil, fmt.Errorf("config: read tenants dir: %w", err)
	}
	var (
		tenants []*Tenant
		errs    []error
	)
	for _, e := range entries {
		name := e.Name()
		ext := filepath.Ext(name)
		if strings.HasPrefix(name, ".") || (ext != ".yaml" && ext != ".yml") {
			continue
		}
		path := filepath.Join(g.TenantsDir, name)
		st, err := os.Stat(path) // follows symlinks, as in Kubernetes ConfigMap volumes
		if err != nil {
			errs = append(errs, fmt.Errorf("config: %w", err))
			continue
		}
		if !st.Mode().IsRegular() {
			continue
		}
		data, err := readConfigFile(path)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		t, err := parseTenant(path, data, g.Defaults, lookup, inherited)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		tenants = append(tenants, t)
	}
	if len(tenants) == 0 && len(errs) == 0 {
		return nil, problem{file: g.TenantsDir, msg: "no tenant files (*.yaml, *.yml) in the tenants directory"}
	}
	s, err := newSet(g, tenants)
	if err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return s, nil
}

// parseTenant decodes one tenant file over a copy of defaults and
// validates it. Validation problems at keys the file does not set and
// inherited (if not nil) reports are left out.
func parseTenant(file string, data []byte, defaults Policy, lookup func(string) (string, bool), inherited func(key string) bool) (*Tenant, error) {
	t := &Tenant{Policy: defaults.clone()}
	// Key problems are reported together with the values' problems, unless
	// nothing could be decoded.
	d, decodeErr := decodeInto(file, data, t, lookup, false)
	if decodeErr != nil && !d.decoded {
		return nil, decodeErr
	}
	t.File = file
	var skip func(string) bool
	if inherited != nil {
		skip = func(key string) bool { return inherited(key) && !d.sets(key) }
	}
	if err := joinProblems(decodeErr, t.Validate(), d.failed, skip); err != nil {
		return nil, err
	}
	return t, nil
}

// digest is the SHA-256 of a key: keys are compared and looked up only by
// digest, so a Set never holds a plain key it does not need.
type digest = [sha256.Size]byte

// keyEntry is one accepted key.
type keyEntry struct {
	digest digest
	tenant *Tenant
}

// Set is a validated set of tenants. It is immutable once built and safe for
// concurrent use.
type Set struct {
	tenants     []*Tenant // sorted by ID
	byID        map[string]*Tenant
	keys        map[digest]keyEntry
	passThrough *Tenant // the implicit tenant, nil with a tenants directory
	admin       digest
	hasAdmin    bool
}

// newSet indexes tenants by id and key digest, reporting duplicate ids and
// keys shared by two tenants or with the admin key.
func newSet(g Global, tenants []*Tenant) (*Set, error) {
	s := &Set{
		tenants: slices.Clone(tenants),
		byID:    make(map[string]*Tenant, len(tenants)),
		keys:    make(map[digest]keyEntry),
	}
	slices.SortFunc(s.tenants, func(a, b *Tenant) int { return strings.Compare(a.ID, b.ID) })
	var errs []error
	if g.AdminKey != "" {
		d, err := keyDigest(g.AdminKey)
		if err != nil {
			errs = append(errs, problem{file: g.File, key: "admin_key", msg: "a sha256: key must be followed by 64 hex digits"})
		}
		s.admin, s.hasAdmin = d, err == nil
	}
	for _, t := range s.tenants {
		if t.PassThrough {
			s.passThrough = t
		}
		if prev, dup := s.byID[t.ID]; dup {
			errs = append(errs, problem{file: t.File, key: "id", msg: fmt.Sprintf("tenant %q is already defined in %s", t.ID, prev.File)})
			continue
		}
		s.byID[t.ID] = t
		own := make(map[digest]int, len(t.APIKeys))
		for i, k := range t.APIKeys {
			key := "api_keys[" + strconv.Itoa(i) + "]"
			d, err := keyDigest(k)
			if err != nil {
				errs = append(errs, problem{file: t.File, key: key, msg: "a sha256: key must be followed by 64 hex digits"})
				continue
			}
			if j, dup := own[d]; dup {
				errs = append(errs, problem{file: t.File, key: key, msg: fmt.Sprintf("same key as api_keys[%d]", j)})
				continue
			}
			own[d] = i
			if s.hasAdmin && d == s.admin {
				errs = append(errs, problem{file: t.File, key: key, msg: "same key as the admin_key"})
				continue
			}
			if e, dup := s.keys[d]; dup {
				errs = append(errs, problem{file: t.File, key: key, msg: fmt.Sprintf("key already used by tenant %q (%s)", e.tenant.ID, e.tenant.File)})
				continue
			}
			s.keys[d] = keyEntry{digest: d, tenant: t}
		}
	}
	if s.passThrough != nil && len(s.tenants) != 1 {
		errs = append(errs, errors.New("config: a pass-through tenant must be the only tenant"))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return s, nil
}

// keyDigest is the digest a key is looked up by: the decoded hex of a
// "sha256:" key, else the SHA-256 of the key.
func keyDigest(k Secret) (digest, error) {
	if hex, ok := strings.CutPrefix(k.Reveal(), sha256Prefix); ok {
		return decodeDigest(hex)
	}
	return sha256.Sum256([]byte(k.Reveal())), nil
}

// Tenants returns the tenants sorted by ID. The slice is the caller's; the
// tenants are not to be modified.
func (s *Set) Tenants() []*Tenant { return slices.Clone(s.tenants) }

// Tenant returns the tenant with the given id.
func (s *Set) Tenant(id string) (*Tenant, bool) {
	t, ok := s.byID[id]
	return t, ok
}

// PassThrough reports whether s is the implicit single-tenant set, in which
// any bearer key is accepted.
func (s *Set) PassThrough() bool { return s.passThrough != nil }

// Authenticate returns the tenant whose key bearer is (the part after
// "Bearer "). An empty bearer is never accepted. In pass-through mode any
// other bearer gets the default tenant. Otherwise the key is hashed, looked
// up by digest and compared in constant time; keys are never logged.
func (s *Set) Authenticate(bearer string) (*Tenant, bool) {
	if bearer == "" {
		return nil, false
	}
	if s.passThrough != nil {
		return s.passThrough, true
	}
	d := sha256.Sum256(stringBytes(bearer))
	e, ok := s.keys[d]
	if !ok || subtle.ConstantTimeCompare(d[:], e.digest[:]) != 1 {
		return nil, false
	}
	return e.tenant, true
}

// Admin reports whether bearer is the admin key, compared in constant time.
// Without an admin key nothing is.
func (s *Set) Admin(bearer string) bool {
	if !s.hasAdmin || bearer == "" {
		return false
	}
	d := sha256.Sum256(stringBytes(bearer))
	return subtle.ConstantTimeCompare(d[:], s.admin[:]) == 1
}

// stringBytes views s as bytes without copying, for hashing on the hot
// path; the bytes must not be modified.
func stringBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }
