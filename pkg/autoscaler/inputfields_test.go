package autoscaler_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"reflect"
	"regexp"
	"testing"

	"github.com/gpuscale/gpuscale/pkg/autoscaler"
)

// Every field of Input is set by the live shell and by the simulator, or
// listed in docs/architecture.md as set by one shell alone: a field one
// shell forgets makes the simulator, or a replay, decide on something else
// than the live loop does.
func TestEveryShellSetsEveryInputField(t *testing.T) {
	shells := map[string]string{
		"live":      "../controller/loop.go",
		"simulator": "../sim/engine/autoscale.go",
	}
	set := map[string]map[string]bool{}
	for shell, file := range shells {
		set[shell] = inputFieldsSet(t, file)
		if len(set[shell]) == 0 {
			t.Fatalf("%s (%s): no autoscaler.Input built there; update this test to where the shell builds it", shell, file)
		}
	}
	doc, err := os.ReadFile("../../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	oneShell := map[string]string{}
	for _, m := range regexp.MustCompile("(?m)^\\| `(\\w+)` \\| (live|simulator) \\|").FindAllStringSubmatch(string(doc), -1) {
		oneShell[m[1]] = m[2]
	}
	typ := reflect.TypeOf(autoscaler.Input{})
	for i := range typ.NumField() {
		name := typ.Field(i).Name
		live, sim := set["live"][name], set["simulator"][name]
		switch only := oneShell[name]; {
		case live && sim && only != "":
			t.Errorf("Input.%s is set by both shells but docs/architecture.md lists it as set by the %s shell alone", name, only)
		case live && sim:
		case only == "live" && live, only == "simulator" && sim:
		default:
			t.Errorf("Input.%s: set by the live shell %v, by the simulator %v; set it in both, or list it in docs/architecture.md "+
				"(The contract's inputs) with the one shell that sets it and why", name, live, sim)
		}
	}
}

// inputFieldsSet lists the fields of autoscaler.Input that file sets: keys
// of an autoscaler.Input literal, and fields assigned on a variable holding
// one.
func inputFieldsSet(t *testing.T, file string) map[string]bool {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	vars := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			for k, rhs := range n.Rhs {
				if lit, ok := rhs.(*ast.CompositeLit); ok && isInputType(lit.Type) && k < len(n.Lhs) {
					if id, ok := n.Lhs[k].(*ast.Ident); ok {
						vars[id.Name] = true
					}
				}
			}
			for _, lhs := range n.Lhs {
				if sel, ok := lhs.(*ast.SelectorExpr); ok {
					if id, ok := sel.X.(*ast.Ident); ok && vars[id.Name] {
						out[sel.Sel.Name] = true
					}
				}
			}
		case *ast.CompositeLit:
			if isInputType(n.Type) {
				for _, e := range n.Elts {
					if kv, ok := e.(*ast.KeyValueExpr); ok {
						if id, ok := kv.Key.(*ast.Ident); ok {
							out[id.Name] = true
						}
					}
				}
			}
		}
		return true
	})
	return out
}

func isInputType(e ast.Expr) bool {
	sel, ok := e.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	pkg, ok := sel.X.(*ast.Ident)
	return ok && pkg.Name == "autoscaler" && sel.Sel.Name == "Input"
}
