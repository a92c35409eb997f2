package pgtest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) { Main(m) }

// TestDB gets two fresh databases from the shared server: each is empty
// and separate from the other.
func TestDB(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, b := DB(t), DB(t)
	if a == b {
		t.Fatalf("two databases share the URL %s", a)
	}
	ca, err := pgx.Connect(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	defer ca.Close(ctx)
	if _, err := ca.Exec(ctx, "CREATE TABLE x (n int)"); err != nil {
		t.Fatal(err)
	}
	cb, err := pgx.Connect(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	defer cb.Close(ctx)
	var n int
	if err := cb.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE tablename = 'x'").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("got table x in the second database, want a fresh one")
	}
}

// TestRestart stops and kills a private server and starts it again on the
// same URL: data committed before survives both.
func TestRestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s := Start(t)
	url := s.URL("postgres")
	exec := func(sql string) error {
		c, err := pgx.Connect(ctx, url)
		if err != nil {
			return err
		}
		defer c.Close(ctx)
		_, err = c.Exec(ctx, sql)
		return err
	}
	if err := exec("CREATE TABLE kept (n int); INSERT INTO kept VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	s.Kill()
	if err := exec("SELECT 1"); err == nil {
		t.Fatal("connected to a killed server")
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	s.Stop()
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	if err := exec("INSERT INTO kept SELECT n + 1 FROM kept"); err != nil {
		t.Fatalf("after restarts: %v", err)
	}
}

// TestNoBinary reports how to install PostgreSQL when none is found.
func TestNoBinary(t *testing.T) {
	t.Setenv("PATH", "")
	t.Setenv("RECALL_PG_BIN", t.TempDir())
	old := globPattern
	globPattern = t.TempDir() + "/*/bin"
	defer func() { globPattern = old }()
	_, err := binDir()
	if err == nil || err.Error() != Install {
		t.Fatalf("got %v, want the install message", err)
	}
}

// fatalTB records a Fatal and stops the caller, as testing's Fatal does.
type fatalTB struct {
	testing.TB
	err error
}

func (f *fatalTB) Helper() {}

func (f *fatalTB) Fatal(args ...any) {
	if len(args) == 1 {
		if err, ok := args[0].(error); ok {
			f.err = err
			panic(f)
		}
	}
	f.err = errors.New(fmt.Sprint(args...))
	panic(f)
}

// TestDBNeedsMain: in a test binary whose TestMain does not call Main,
// DB fails, naming the fix, before it starts a server nothing would
// stop.
func TestDBNeedsMain(t *testing.T) {
	if testing.Short() {
		t.Skip("DB skips under -short before it checks")
	}
	inMain.Store(false)
	defer inMain.Store(true)
	f := &fatalTB{TB: t}
	url := func() (url string) {
		defer func() {
			if r := recover(); r != nil && r != f {
				panic(r)
			}
		}()
		return DB(f)
	}()
	if !errors.Is(f.err, ErrNoMain) || url != "" {
		t.Fatalf("got %q and %v, want ErrNoMain", url, f.err)
	}
}
