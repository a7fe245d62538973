// Package stripemock runs Stripe's own API mock server, stripe-mock, for tests: it checks
// every request against the provider's OpenAPI description, so a wrong parameter fails.
// It runs without -strict-version-check: no served stripe-go release pins the API version
// of this stripe-mock's description (2026-08-26.dahlia; stripe-go v84.4.1 sends
// 2026-02-25.clover), and the parameters tollgate sends are the same in both.
package stripemock

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// Version is the stripe-mock release the tests run (.ci/run installs the same).
const Version = "v0.203.0"

// Start runs stripe-mock on a free loopback port for the test and returns its base URL.
// The binary is STRIPE_MOCK_BIN, else stripe-mock on PATH, else built once into the user's
// cache with "go install". Without it the test skips, except in CI, where it fails.
func Start(t testing.TB) string {
	t.Helper()
	bin, err := binary()
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("stripe-mock: %v", err)
		}
		t.Skipf("stripe-mock unavailable: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "-http-addr", "127.0.0.1:", "-https-addr", "127.0.0.1:")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("stripe-mock: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		cmd.Wait()
	})
	listening := regexp.MustCompile(`Listening for HTTP at address: .*:(\d+)$`)
	found := make(chan string, 1)
	go func() {
		scanner := bufio.NewScanner(out)
		var seen []string
		for scanner.Scan() {
			seen = append(seen, scanner.Text())
			if m := listening.FindStringSubmatch(scanner.Text()); m != nil {
				found <- "http://127.0.0.1:" + m[1]
			}
		}
		found <- "exited: " + strings.Join(seen, "; ")
	}()
	select {
	case addr := <-found:
		if !strings.HasPrefix(addr, "http://") {
			t.Fatalf("stripe-mock %s", addr)
		}
		return addr
	case <-time.After(30 * time.Second):
		t.Fatal("stripe-mock did not start listening within 30 s")
	}
	return ""
}

func binary() (string, error) {
	if bin := os.Getenv("STRIPE_MOCK_BIN"); bin != "" {
		return bin, nil
	}
	if bin, err := exec.LookPath("stripe-mock"); err == nil {
		return bin, nil
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cache, "tollgate", "stripe-mock-"+Version)
	bin := filepath.Join(dir, "stripe-mock")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	// Packages test in parallel: each builds into a directory of its own and renames the
	// finished one into place, so no test runs a half-written binary.
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	install := exec.Command("go", "install", "github.com/stripe/stripe-mock@"+Version)
	install.Env = append(os.Environ(), "GOBIN="+tmp, "GOFLAGS=-buildvcs=false")
	if out, err := install.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go install github.com/stripe/stripe-mock@%s: %v: %s", Version, err, out)
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, statErr := os.Stat(bin); statErr != nil {
			return "", err
		}
	}
	return bin, nil
}
