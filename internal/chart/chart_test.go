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
