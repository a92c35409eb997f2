package badgerstore_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/recallproxy/recall/store/badgerstore"
)

// A data directory the process cannot write (here a read-only mount; a
// Docker bind mount owned by another user fails the same way) is refused
// with an error that says so and names the directory, not with Badger's
// bare "LOCK: permission denied".
func TestUnwritableDirectoryIsNamed(t *testing.T) {
	dir := mountTmpfs(t, "ro,size=1m", "")
	s, err := badgerstore.Open(dir, badgerstore.Options{})
	if err == nil {
		s.Close()
		t.Fatal("opened a read-only directory for writing")
	}
	if msg := err.Error(); !strings.Contains(msg, "data directory is not writable") || !strings.Contains(msg, dir) {
		t.Errorf("got error %q, want it to say the data directory %s is not writable", msg, dir)
	}
}

// mountTmpfs mounts a tmpfs with opts (mount -o) on a new directory and
// unmounts it when the test ends. It skips the test where it cannot (not
// root, or no mount here), adding instead to the reason.
func mountTmpfs(t *testing.T, opts, instead string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root" + instead)
	}
	dir := filepath.Join(t.TempDir(), "tmpfs")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", opts, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here (%v: %s)%s", err, out, instead)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })
	return dir
}
