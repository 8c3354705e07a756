package kafkalitetest_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"kafkalite/kafkalitetest"
)

// The order Command looks in: KAFKALITE_CMD (a command line, or a bundle run by python3 -I -S),
// a kafkalite.pyz in the working directory or a parent, kafkalite on PATH.
func TestCommandOrder(t *testing.T) {
	root := t.TempDir()
	check := func(want []string) {
		t.Helper()
		got, err := kafkalitetest.Command()
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("Command() = %v, %v; want %v", got, err, want)
		}
	}
	t.Setenv(kafkalitetest.CommandEnv, "python3 -m kafkalite")
	check([]string{"python3", "-m", "kafkalite"})
	t.Setenv(kafkalitetest.CommandEnv, filepath.Join(root, "ci-cache", "kafkalite.pyz"))
	check([]string{"python3", "-I", "-S", filepath.Join(root, "ci-cache", "kafkalite.pyz")})

	t.Setenv(kafkalitetest.CommandEnv, "")
	bundle := filepath.Join(root, kafkalitetest.BundleName)
	if err := os.WriteFile(bundle, []byte("PK"), 0o644); err != nil {
		t.Fatal(err)
	}
	nested := filepath.Join(root, "service", "pkg")
	if err := os.MkdirAll(nested, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(nested)
	check([]string{"python3", "-I", "-S", bundle})

	bin := t.TempDir()
	installed := filepath.Join(bin, "kafkalite")
	if err := os.WriteFile(installed, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	t.Setenv("PATH", bin)
	check([]string{installed})

	t.Setenv("PATH", t.TempDir())
	if _, err := kafkalitetest.Command(); err == nil || !strings.Contains(err.Error(), kafkalitetest.CommandEnv) {
		t.Fatalf("no broker anywhere: %v", err)
	}
}
