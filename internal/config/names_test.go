package config

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestNamesAreTheVariablesLoadReads: the list near misses are measured against holds
// every variable the package reads, and nothing it does not.
func TestNamesAreTheVariablesLoadReads(t *testing.T) {
	var source strings.Builder
	files, _ := filepath.Glob("*.go")
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || f == "names.go" {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		source.Write(b)
	}
	for _, m := range regexp.MustCompile(`(?:get|boolean|duration)\("([A-Z][A-Z0-9_]+)"`).FindAllStringSubmatch(source.String(), -1) {
		if !slices.Contains(names, m[1]) {
			t.Errorf("%s is read but missing from names: setting it would be taken for a near miss", m[1])
		}
	}
	for _, name := range names {
		if !strings.Contains(source.String(), `"`+name+`"`) {
			t.Errorf("names lists %s, which the package never reads", name)
		}
	}
}

func TestNearMisses(t *testing.T) {
	set := []string{
		"ADMIN_EMAIL", "DATABSE_URL", "WEB_WEBHOOK_SECERT", "ADMIN_EMAILS", "DATABASE_URL", // three typos, two right
		"PATH", "HOME", "HOSTNAME", "USER", "SHELL", "LC_ALL", "TERM", "GOPATH", "KUBERNETES_PORT",
		"PORTS", "APIS", // too short to judge
		"STRIPE_KEY", "SOMETHING_ELSE", // far from every name
	}
	got := NearMisses(set)
	want := map[string]string{"ADMIN_EMAIL": "ADMIN_EMAILS", "DATABSE_URL": "DATABASE_URL", "WEB_WEBHOOK_SECERT": "WEB_WEBHOOK_SECRET"}
	if len(got) != len(want) {
		t.Fatalf("NearMisses = %q, want one warning for each of %v", got, want)
	}
	for typo, meant := range want {
		found := false
		for _, w := range got {
			found = found || strings.HasPrefix(w, typo+" is set but") && strings.HasSuffix(w, "did you mean "+meant+"?")
		}
		if !found {
			t.Errorf("no warning naming %s for %s in %q", meant, typo, got)
		}
	}
	for _, tc := range []struct {
		a, b string
		d    int
	}{{"ADMIN_EMAIL", "ADMIN_EMAILS", 1}, {"WEB_WEBHOOK_SECERT", "WEB_WEBHOOK_SECRET", 2}, {"", "ABC", 3}, {"KITTEN", "SITTING", 3}} {
		if d := editDistance(tc.a, tc.b); d != tc.d {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.a, tc.b, d, tc.d)
		}
	}
}
