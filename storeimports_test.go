package tollgate_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// storeEntries are the list of stores' entries, each the one file outside its store's own
// packages that may import them (a store's package and the packages under it).
var storeEntries = map[string]string{
	"internal/stores/web.go":       "internal/billing/stripe",
	"internal/stores/mobile.go":    "internal/billing/adapty",
	"internal/stores/appstore.go":  "internal/billing/appstore",
	"internal/stores/playstore.go": "internal/billing/playstore",
	"internal/stores/paddle.go":    "internal/billing/paddle",
}

// TestOnlyTheListImportsAStore: a store is known to the binary through its entry in the
// list of stores alone. No other hand-written, non-test file imports a store's packages,
// outside the store's own packages and the test kits (packages named …test, built only
// into tests).
func TestOnlyTheListImportsAStore(t *testing.T) {
	storeOf := func(imp string) string {
		for _, s := range storeEntries {
			if imp == module+s || strings.HasPrefix(imp, module+s+"/") {
				return s
			}
		}
		return ""
	}
	imported := map[string]bool{}
	err := filepath.WalkDir(".", func(path string, e os.DirEntry, err error) error {
		if err != nil || (e.IsDir() && strings.HasPrefix(e.Name(), ".") && path != ".") {
			return cmpSkip(err, e)
		}
		dir := filepath.ToSlash(filepath.Dir(path))
		if e.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || strings.HasSuffix(dir, "test") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, spec := range f.Imports {
			imp, _ := strconv.Unquote(spec.Path.Value)
			store := storeOf(imp)
			switch {
			case store == "" || dir == store || strings.HasPrefix(dir, store+"/"):
			case storeEntries[filepath.ToSlash(path)] == store:
				imported[filepath.ToSlash(path)] = true
			default:
				t.Errorf("%s imports %s: only the list's entry for that store may (%s)", path, imp, entryOf(store))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for entry := range storeEntries {
		if !imported[entry] {
			t.Errorf("%s does not import its store: the entries above are out of date", entry)
		}
	}
}

func entryOf(store string) string {
	for entry, s := range storeEntries {
		if s == store {
			return entry
		}
	}
	return ""
}

// cmpSkip passes a walk's error on, and skips a hidden directory.
func cmpSkip(err error, e os.DirEntry) error {
	if err != nil {
		return err
	}
	return filepath.SkipDir
}
