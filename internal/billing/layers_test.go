package billing_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/tollgate/tollgate/"

// layers places billing's packages and the surfaces above them: a package imports only
// from layers below its own (docs/billing.md, "How billing is built").
var layers = map[string]int{
	"internal/billing":           0, // the core: vocabulary and rules
	"internal/billing/stripe":    1, // adapters: the core only
	"internal/billing/adapty":    1,
	"internal/billing/appstore":  1,
	"internal/billing/playstore": 1,
	"internal/billing/grant":     1,
	"internal/billing/plans":     2, // the plan catalogue and the sync engine's mirror
	"internal/billing/mirror":    2,
	"internal/billing/pipeline":  3, // the one ingestion path
	"internal/billing/reader":    3, // the one reader
	"internal/billing/checkout":  4, // what the surfaces call
	"internal/billing/webhooks":  4,
	"internal/billing/reconcile": 4, // the pipeline against a provider's API, on a schedule
	"internal/billing/grants":    4, // grants made, listed and ended
	"internal/billing/retention": 4, // old events removed, archived, exported
	"internal/heldanswers":       4, // the answers apps hold, from the reader
	"internal/authhook":          5,
	"internal/api":               5, // surfaces
	"internal/web":               5,
	"internal/app":               6,
}

var adapters = []string{"internal/billing/stripe", "internal/billing/adapty", "internal/billing/appstore", "internal/billing/playstore", "internal/billing/grant"}

// goList gives each package's imports of this module: direct, or with -deps every one it
// depends on, without test files.
func goList(t *testing.T, deps bool, pkg string) map[string][]string {
	t.Helper()
	args := []string{"list", "-f", `{{.ImportPath}} {{join .Imports " "}}`}
	if deps {
		args = []string{"list", "-f", `{{.ImportPath}} {{join .Deps " "}}`}
	}
	out, err := exec.Command("go", append(args, module+pkg)...).Output()
	if err != nil {
		t.Fatalf("go list %s: %v", pkg, err)
	}
	imports := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		name := strings.TrimPrefix(fields[0], module)
		imports[name] = []string{}
		for _, imp := range fields[1:] {
			if strings.HasPrefix(imp, module) {
				imports[name] = append(imports[name], strings.TrimPrefix(imp, module))
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
			if dep != "internal/billing" {
				t.Errorf("adapter %s depends on %s: adapters depend on the core only", a, dep)
			}
		}
	}
	for pkg, layer := range layers {
		for _, imp := range goList(t, false, pkg)[pkg] {
			if l, ok := layers[imp]; ok && l >= layer {
				t.Errorf("%s (layer %d) imports %s (layer %d): imports point down", pkg, layer, imp, l)
			}
			if (pkg == "internal/billing/pipeline" || pkg == "internal/billing/reader") && layers[imp] == 1 {
				t.Errorf("%s imports adapter %s: it knows adapters by billing.Adapter only", pkg, imp)
			}
		}
	}
}

// Billing's files stay readable: no file over 400 lines, no function over 80.
func TestFilesAndFunctionsStaySmall(t *testing.T) {
	err := filepath.WalkDir(".", func(path string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
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
}

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
