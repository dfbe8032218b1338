package boltstore_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slackgate/slackgate/store/boltstore"
)

func mode(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

func TestOpenKeepsTheDataDirAndFileToSlackgatesUser(t *testing.T) {
	for _, tt := range []struct {
		name    string
		prepare func(dir, file string) error
	}{
		{"new directory", func(string, string) error { return nil }},
		{"existing directory open to all", func(dir, _ string) error { return os.Mkdir(dir, 0o755) }},
		{"existing file readable by all", func(dir, file string) error {
			if err := os.Mkdir(dir, 0o755); err != nil {
				return err
			}
			return os.WriteFile(file, nil, 0o644) // bbolt initialises an empty file
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			parent := t.TempDir()
			dir := filepath.Join(parent, "data")
			file := filepath.Join(dir, "slackgate.db")
			if err := tt.prepare(dir, file); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(dir, 0o755); err != nil && !os.IsNotExist(err) {
				t.Fatal(err) // the umask may have narrowed Mkdir's mode
			}
			st, err := boltstore.Open(file)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			if m := mode(t, dir); m != 0o700 {
				t.Errorf("DATA_DIR mode = %04o, want 0700", m)
			}
			if m := mode(t, file); m != 0o600 {
				t.Errorf("store file mode = %04o, want 0600", m)
			}
		})
	}
}

func TestOpenRefusesASharedDirectoryInsteadOfChangingIt(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "shared")
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	_, err := boltstore.Open(filepath.Join(dir, "slackgate.db"))
	if err == nil || !strings.Contains(err.Error(), "open to other users") || !strings.Contains(err.Error(), "DATA_DIR") {
		t.Fatalf("err = %v, want a refusal naming DATA_DIR", err)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode()&os.ModeSticky == 0 || fi.Mode().Perm() != 0o777 {
		t.Errorf("the shared directory was changed: %v %v", fi.Mode(), err)
	}
}
