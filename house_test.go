package tollgate_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/tollgate/tollgate/"

// layers places every package of the module: a package imports only from layers below
// its own. Infrastructure is lowest; billing is a core with a ring of packages around it
// (docs/billing.md, "How billing is built"); the surfaces are above it, the commands and
// the public package on top. Test kits (…test) are placed too: they are built only into
// tests (TestNoTestKitInTheProduct).
var layers = map[string]int{
	// infrastructure: knows nothing of billing
	"internal/db": 0, "internal/db/dbq": 0, "internal/problem": 0, "internal/route": 0, "internal/identity": 0,
	"internal/logcapture": 0, "internal/tcpproxy": 0, "swagger": 0,
	"entitlementtoken":  0, // the public verifier: nothing else of tollgate (its own test)
	"internal/config":   0, // the environment read once: nothing of the domain
	"internal/periodic": 0,
	"internal/jwks":     0,
	"internal/billing":  1, // the core: vocabulary and rules
	"internal/lease":    1, "internal/audit": 1, "internal/knownusers": 1, "internal/servicekeys": 1, "internal/signingkeys": 1,
	"internal/outbound": 1, "internal/ratelimit": 1, "internal/devidentity": 1, "internal/db/dbtest": 1,
	"internal/billing/stripe":               2, // adapters: the core only
	"internal/billing/adapty":               2,
	"internal/billing/appstore":             2,
	"internal/billing/playstore":            2,
	"internal/billing/paddle":               2,
	"internal/billing/grant":                2,
	"internal/billing/appstore/appstoredev": 2, "internal/billing/playstore/playdev": 2, // stores' stand-ins
	"internal/billing/paddle/paddledev":  2,
	"internal/billing/stripe/stripemock": 2, "internal/outbound/outboundtest": 2, "internal/identity/identitytest": 2,
	"internal/billing/plans":                   3, // the plan catalogue and the sync engine's mirror
	"internal/billing/stripe/mirror":           3,
	"internal/billing/playstore/playstoretest": 3,
	"internal/billing/appstore/appstoretest":   3,
	"internal/stores":                          6, // the list of the stores, one file each
	"internal/billing/pipeline":                4, // the one ingestion path
	"internal/billing/reader":                  4, // the one reader
	"internal/billing/checkout":                5, // what the surfaces call
	"internal/billing/webhooks":                5,
	"internal/billing/reconcile":               5, // the pipeline against a provider's API, on a schedule
	"internal/billing/grants":                  5, // grants made, listed and ended
	"internal/billing/retention":               5, // old events removed, archived, exported
	"internal/heldanswers":                     5, // the answers apps hold, from the reader
	"internal/api":                             6, // surfaces
	"internal/web":                             6,
	"internal/console":                         6,
	"internal/authhook":                        6,
	"internal/billing/billingtest":             6,
	"internal/app":                             7, // the commands and the server
	"":                                         8, // the public package
	"tollgatetest":                             8,
	"cmd/tollgate":                             9,
	"examples/projects":                        9,
}

var adapters = []string{"internal/billing/stripe", "internal/billing/adapty", "internal/billing/appstore", "internal/billing/playstore", "internal/billing/paddle", "internal/billing/grant"}

const root = "github.com/tollgate/tollgate"

// goList gives each package's imports of this module: direct, or with -deps every one it
// depends on, without test files. pkg may be a pattern (./...).
func goList(t *testing.T, deps bool, pkg string) map[string][]string {
	t.Helper()
	args := []string{"list", "-f", `{{.ImportPath}} {{join .Imports " "}}`}
	if deps {
		args = []string{"list", "-f", `{{.ImportPath}} {{join .Deps " "}}`}
	}
	path := module + pkg
	switch pkg {
	case "":
		path = root
	case "./...":
		path = pkg
	}
	out, err := exec.Command("go", append(args, path)...).Output()
	if err != nil {
		t.Fatalf("go list %s: %v", pkg, err)
	}
	imports := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		name := strings.TrimPrefix(strings.TrimPrefix(fields[0], root), "/")
		imports[name] = []string{}
		for _, imp := range fields[1:] {
			if imp == root || strings.HasPrefix(imp, module) {
				imports[name] = append(imports[name], strings.TrimPrefix(strings.TrimPrefix(imp, root), "/"))
			}
		}
	}
	return imports
}

func TestImportsPointDown(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	if deps := goList(t, true, "internal/billing")["internal/billing"]; len(deps) != 0 {
		t.Errorf("the core depends on %v: it must depend on nothing of ours", deps)
	}
	for _, a := range adapters {
		for _, dep := range goList(t, true, a)[a] {
			if dep != "internal/billing" && layers[dep] != 0 {
				t.Errorf("adapter %s depends on %s: adapters depend on the core and the infrastructure only", a, dep)
			}
		}
	}
	all := goList(t, false, "./...")
	for pkg, layer := range layers {
		for _, imp := range all[pkg] {
			if l, ok := layers[imp]; ok && l >= layer {
				t.Errorf("%s (layer %d) imports %s (layer %d): imports point down", pkg, layer, imp, l)
			}
			if (pkg == "internal/billing/pipeline" || pkg == "internal/billing/reader") && slices.Contains(adapters, imp) {
				t.Errorf("%s imports adapter %s: it knows adapters by billing.Adapter only", pkg, imp)
			}
		}
	}
}

// TestEveryPackageIsPlaced: a package the layers do not place is one whose imports nothing
// checks.
func TestEveryPackageIsPlaced(t *testing.T) {
	out, err := exec.Command("go", "list", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	listed := map[string]bool{}
	for _, pkg := range strings.Fields(string(out)) {
		name := strings.TrimPrefix(strings.TrimPrefix(pkg, root), "/")
		listed[name] = true
		if _, ok := layers[name]; !ok {
			t.Errorf("%s is in no layer: place it in house_test.go's layers", pkg)
		}
	}
	for name := range layers {
		if !listed[name] {
			t.Errorf("the layers place %q, which is no package", name)
		}
	}
}

// The house stays readable: no hand-written file over 400 lines, no function over 80, in
// any package (tests aside; generated code, such as the queries sqlc writes, aside).
func TestFilesAndFunctionsStaySmall(t *testing.T) {
	checked := 0
	err := filepath.WalkDir(".", func(path string, e os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() && strings.HasPrefix(e.Name(), ".") && path != "." {
			return filepath.SkipDir
		}
		if e.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if generated.MatchString(string(src)) {
			return nil
		}
		checked++
		if n := strings.Count(string(src), "\n"); n > 400 {
			t.Errorf("%s has %d lines", path, n)
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, src, 0)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok {
				if n := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1; n > 80 {
					t.Errorf("%s: %s is %d lines", path, fn.Name.Name, n)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 100 {
		t.Fatalf("only %d files checked: the walk missed the house", checked)
	}
}

// generated marks a generated file (https://go.dev/s/generatedcode).
var generated = regexp.MustCompile(`(?m)^// Code generated .* DO NOT EDIT\.$`)

// TestNoTestKitInTheProduct: a test kit (a package named …test) is for tests: test kits
// may import one another, but no other package of the module imports one, so that none is
// built into the binary.
func TestNoTestKitInTheProduct(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, module+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	isKit := func(pkg string) bool { return strings.HasSuffix(pkg, "test") && strings.HasPrefix(pkg, module) }
	kits := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		if isKit(fields[0]) {
			kits++
			continue
		}
		for _, imp := range fields[1:] {
			if isKit(imp) {
				t.Errorf("%s imports the test kit %s", strings.TrimPrefix(fields[0], module), strings.TrimPrefix(imp, module))
			}
		}
	}
	if kits == 0 {
		t.Fatal("no test kit found: the check checks nothing")
	}
}
