// Tests of the chart package: carve's chart renders (chart.go), and the
// containers of its pod templates (containers.go).

package chart

import (
	"strings"
	"testing"
)

const dir = "../../deploy/helm/carve-dra"

// TestRender: carve's chart renders one object a document, none of them
// empty or comments only, with the release's namespace; a Kubernetes
// older than the chart's kubeVersion is refused as helm install refuses it.
func TestRender(t *testing.T) {
	ms, err := Render(dir, Release{Name: "r", Namespace: "ns-x", KubeVersion: "v1.37.2"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	namespaced := 0
	for _, m := range ms {
		kinds := 0
		for _, line := range strings.Split(m.YAML, "\n") {
			if strings.HasPrefix(line, "kind: ") {
				kinds++
			}
		}
		if kinds != 1 {
			t.Errorf("%s: a document of %d kinds:\n%s", m.Template, kinds, m.YAML)
		}
		if strings.Contains(m.YAML, "namespace: ns-x") {
			namespaced++
		}
		if strings.HasSuffix(m.Template, "NOTES.txt") {
			t.Errorf("NOTES.txt rendered as a manifest")
		}
	}
	if len(ms) < 10 || namespaced < 5 {
		t.Errorf("%d objects, %d in the release's namespace", len(ms), namespaced)
	}
	if _, err := Render(dir, Release{Name: "r", Namespace: "ns", KubeVersion: "v1.35.0"}, nil); err == nil || !strings.Contains(err.Error(), "needs Kubernetes") {
		t.Errorf("on Kubernetes 1.35: %v", err)
	}
}

func TestHasContent(t *testing.T) {
	for doc, want := range map[string]bool{"": false, "\n# a comment\n  \n": false, "# c\nkind: X\n": true} {
		if hasContent(doc) != want {
			t.Errorf("hasContent(%q) = %v", doc, !want)
		}
	}
}

// TestContainers: the containers of each pod template, with the template
// each came from; objects without one give none; bad YAML is an error
// that names its template.
func TestContainers(t *testing.T) {
	ms := []Manifest{
		{Template: "a.yaml", YAML: "kind: DaemonSet\nspec:\n  template:\n    spec:\n      containers:\n      - name: x\n        command: [carve, daemon]\n      - name: w\n"},
		{Template: "b.yaml", YAML: "kind: Service\nspec:\n  ports:\n  - port: 80\n"},
		{Template: "c.yaml", YAML: "kind: Deployment\nspec:\n  template:\n    spec:\n      containers:\n      - name: z\n"},
	}
	cs, err := Containers(ms)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range cs {
		got = append(got, c.Template+":"+c.Name)
	}
	if strings.Join(got, " ") != "a.yaml:x a.yaml:w c.yaml:z" || len(cs[0].Command) != 2 {
		t.Errorf("containers %v (first's command %q)", got, cs[0].Command)
	}
	if _, err := Containers([]Manifest{{Template: "bad.yaml", YAML: "spec: [1"}}); err == nil || !strings.Contains(err.Error(), "bad.yaml") {
		t.Errorf("bad YAML: %v", err)
	}
}
