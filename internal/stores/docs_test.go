package stores_test

import (
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/tollgate/tollgate/internal/stores"
)

var update = flag.Bool("update", false, "rewrite the table of the stores in docs/providers.md")

const (
	providersDoc = "../../docs/providers.md"
	tableStart   = "<!-- the stores: written from the list by go test ./internal/stores -update -->\n"
	tableEnd     = "<!-- end of the stores -->\n"
)

// storesTable is the docs' table of the stores, one row per store of the list.
func storesTable(list stores.List) string {
	yes := func(b bool) string {
		if b {
			return "yes"
		}
		return "—"
	}
	var b strings.Builder
	b.WriteString("| provider | store | webhook route | sells in the app | apps report its purchases | its API (reconcile) | `webhook send` |\n")
	b.WriteString("|---|---|---|---|---|---|---|\n")
	for _, s := range list {
		api := "—"
		switch {
		case s.API != nil && s.API.Lists:
			api = "lists every subscription"
		case s.API != nil:
			api = "reads each subscription tollgate knows"
		}
		b.WriteString("| `" + s.Name + "` | " + s.Display + " | `POST /billing/webhooks/" + s.Name + "` | " + yes(s.InApp) + " | " +
			yes(s.Claims) + " | " + api + " | " + yes(s.TestEvents != nil) + " |\n")
	}
	return b.String()
}

// TestTheDocsListEveryStore: the table of the stores in docs/providers.md is the list's, row
// for row (-update writes it).
func TestTheDocsListEveryStore(t *testing.T) {
	raw, err := os.ReadFile(providersDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	start, end := strings.Index(doc, tableStart), strings.Index(doc, tableEnd)
	if start < 0 || end < start {
		t.Fatalf("%s has no table of the stores between %q and %q", providersDoc, tableStart, tableEnd)
	}
	want := storesTable(stores.All())
	if got := doc[start+len(tableStart) : end]; got != want {
		if !*update {
			t.Fatalf("the table of the stores in %s is stale: run go test ./internal/stores -update\nwant:\n%s", providersDoc, want)
		}
		if err := os.WriteFile(providersDoc, []byte(doc[:start+len(tableStart)]+want+doc[end:]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
